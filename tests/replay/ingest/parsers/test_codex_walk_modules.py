"""The Codex walk is split along concepts: no module of it over the project's ~400 lines, and its
state the bottom of the split (it imports none of the modules that read records, so those can
import it without a circle — ``tests/test_import_layers.py`` refuses circles)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PARSERS = Path(__file__).resolve().parents[4] / "replay" / "ingest" / "parsers"
WALK = sorted(PARSERS.glob("codex_walk*.py"))


def test_the_walk_is_split() -> None:
    assert {p.stem for p in WALK} >= {"codex_walk", "codex_walk_state", "codex_walk_items",
                                      "codex_walk_events", "codex_walk_compaction"}


@pytest.mark.parametrize("path", WALK, ids=lambda p: p.stem)
def test_walk_module_under_400_lines(path: Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= 400, f"{path.name}: {n} lines"


def test_state_imports_no_reader_of_records() -> None:
    tree = ast.parse((PARSERS / "codex_walk_state.py").read_text(encoding="utf-8"))
    named = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in named if m and m.rsplit(".", 1)[-1].startswith("codex_walk")}
