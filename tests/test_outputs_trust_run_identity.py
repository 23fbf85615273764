"""Identical bytes at two paths are two runs, never merged (issue 23, item 6): copies, hard links
and symlinks of one log, beside it or in subfolders, each a run with its own full figures, and
a later edit of one changes that run only.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.outputs_project import SMALL, _invoke, _run_json


def _identity_layouts() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(id, [(path, how)]) — paths made from ``logs/a.jsonl`` by copy, hard link or symlink,
    beside it or in a subfolder, drawn from a seeded generator."""
    rng = random.Random(23)
    hows = ["copy", "hardlink", "symlink"]
    for n in (1, 2, 3):
        for _ in range(2):
            made = [(f"{rng.choice(['', 'sub/', 'deep/er/'])}{how}-{i}.jsonl", how)
                    for i, how in enumerate(rng.choices(hows, k=n))]
            yield "+".join(h for _, h in made) + f"-{len(made)}", made


@pytest.mark.parametrize(("case", "made"), list(_identity_layouts()),
                         ids=[c for c, _ in _identity_layouts()])
def test_identical_logs_at_several_paths_are_several_runs(project: Path, case: str,
                                                          made: list[tuple[str, str]]) -> None:
    logs = project / "logs"
    for p in logs.iterdir():
        p.unlink()
    original = logs / "a.jsonl"
    shutil.copy(SMALL[0], original)
    for rel, how in made:
        path = logs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        {"copy": lambda p: shutil.copy(original, p), "hardlink": lambda p: os.link(original, p),
         "symlink": lambda p: p.symlink_to(original)}[how](path)
    paths = sorted(["a.jsonl", *(rel for rel, _ in made)])
    rows = _run_json(["run", "logs", "-p", "none", "-q", "--out", "o"])
    assert sorted(str(r["run"]).split(" — ")[0] for r in rows) == paths  # one run per path
    stored = json.loads((project / "o" / "summary.json").read_text())["runs"]
    assert len({r["run_id"] for r in stored}) == len(paths)
    assert len({r["tokens_sent"] for r in rows}) == 1  # each its own full figures
    assert _invoke(["check", "logs", "-p", "none", "--baseline", "b.json", "--update-baseline",
                    "-q"]).exit_code == 0
    runs = json.loads((project / "b.json").read_text())["runs"]
    assert sorted(runs) == paths
    # a later edit of one file changes that run only: never a false regression on the others
    victim = logs / "a.jsonl"
    victim.unlink()  # a hard link or symlink to it keeps the old bytes / dangles: a new file
    shutil.copy(SMALL[1], victim)
    result = _invoke(["check", "logs", "-p", "none", "--baseline", "b.json", "-q"])
    changed = {"a.jsonl", *(rel for rel, how in made if how == "symlink")}
    same = len(paths) - len(changed)
    if same:  # no false regression on the other copies
        assert result.exit_code == 0, result.output
        assert f"PASS — {same} run{'' if same == 1 else 's'} ×" in result.output, result.output
    else:  # every log changed (a symlink follows its file): a check of nothing fails
        assert result.exit_code == 1, result.output
        assert "FAIL — no run compared" in result.output, result.output
    assert f"{len(changed)} changed log" in result.output
