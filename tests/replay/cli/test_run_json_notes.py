"""``replay run --json`` keeps every note the table prints: its stdout stays the list of rows
(what scripts read), the notes go to stderr as in text mode (they were dropped with --json:
induced work, estimated re-reads, runs judged by the tokenizer count; only the not-replayed
note was left) and to ``summary.json`` under ``notes`` (``analysis.per_run.rollup.run_notes``),
with --report as without.  Expected figures are counted from the rows themselves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app


def _run(*args: str) -> tuple[str, list[str]]:
    """(stdout, the notes on stderr without their ``note: `` prefix, each on one line)."""
    res = CliRunner().invoke(app, ["run", "-q", *args])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.stderr.split())
    return res.stdout, [n.strip() for n in flat.split("note: ")[1:]]


@pytest.fixture(scope="module")
def codex(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the codex sample logs, a project cache)."""
    return samples / "codex", tmp_path_factory.mktemp("cache")


def test_run_json_prints_and_stores_the_notes_of_its_rows(codex: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    logs, cache = codex
    common = [str(logs), "-p", "two-tier-corrected", "--cache-dir", str(cache)]
    stdout, said = _run(*common, "--out", str(tmp_path / "j"), "--json")
    rows = json.loads(stdout)  # still a list of rows
    assert isinstance(rows, list) and {r["source"] for r in rows} >= {
        "example-legacy-2025-09-10.jsonl"}
    estimated = sum(r["induced_rereads_estimated_n"] for r in rows)
    fallback = sum(r["truth_source"] == "tokenizer-fallback" for r in rows)
    assert sum(r["induced_rereads_n"] for r in rows) > 0 and estimated > 0 and fallback > 0
    assert len(said) == 4, said
    assert said[0].startswith("figures include induced work")
    assert said[1].startswith(f"{estimated} induced re-read(s) sized as estimates")
    assert said[2].startswith(f"{fallback} of {len(rows)} replayed runs are judged by the "
                              "tokenizer count")
    assert " run(s) are sized as estimates (redacted text by its declared length" in said[3]
    stored = json.loads((tmp_path / "j" / "summary.json").read_text())["notes"]
    assert [" ".join(n.split()) for n in stored] == said
    _, in_text = _run(*common, "--out", str(tmp_path / "t"))
    assert in_text == said


def test_a_run_not_replayed_is_in_the_notes_with_report_too(samples: Path,
                                                            tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(samples / "claude-code" / "short.jsonl", logs / "short.jsonl")
    prompt = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
              "timestamp": "2026-02-10T21:11:56.906Z", "isSidechain": False,
              "message": {"role": "user", "content": "start the server"}}
    (logs / "asked.jsonl").write_text(json.dumps(prompt) + "\n")  # a prompt, no reply
    for extra in ([], ["--report"]):
        out = tmp_path / f"o{len(extra)}"
        stdout, said = _run(str(logs), "-p", "none", "--cache-dir", str(tmp_path / "c"),
                            "--out", str(out), "--json", *extra)
        rows = {r["source"]: r for r in json.loads(stdout)}
        assert rows["asked.jsonl"]["note"] == "not replayed: no request"
        note = ("1 run(s) with no recorded request not replayed: asked.jsonl — start the server "
                "(`replay inspect FILE` says why)")
        assert said == [note]
        assert json.loads((out / "summary.json").read_text())["notes"] == [note]
