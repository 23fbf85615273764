"""Records of a type the parser does not know are left out of the runs and said on every command
that reads logs (``replay.cli.inputs_said.unknown_note``; ``unknown_records`` in ``ingest --json``),
parsed now or reused from the cache: a Codex rollout appended to a Claude Code session was read
as the session alone, its 81 requests gone with exit 0 and no word but the coverage column of
``replay runs``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app

CLAUDE = "claude-code/short.jsonl"
CODEX = "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def test_a_second_format_appended_to_a_log_is_counted_and_said(samples: Path,
                                                              tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "two.jsonl").write_bytes((samples / CLAUDE).read_bytes()
                                     + (samples / CODEX).read_bytes())
    (logs / "clean.jsonl").write_bytes((samples / CLAUDE).read_bytes())
    appended = _lines(samples / CODEX)  # independent count: the appended file's records
    runner = CliRunner()
    got = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"), "--json",
                              "-q"])
    assert got.exit_code == 0, got.output
    unknown = json.loads(got.stdout)["unknown_records"]
    assert list(unknown) == ["two.jsonl"]  # the clean copy holds none
    assert sum(unknown["two.jsonl"].values()) == appended
    for _ in range(2):  # parsed, then reused from the project cache: said both times
        ran = runner.invoke(app, ["run", "-p", "none", str(logs), "--out", str(tmp_path / "o"),
                                  "--cache-dir", str(tmp_path / "c"), "-q"])
        assert ran.exit_code == 0, ran.output
        (note,) = [line for line in ran.stderr.splitlines() if "does not know" in line]
        assert note.startswith(f"note: {appended:,} records of a type the parser does not know")
        assert "two.jsonl: " in note and "clean.jsonl" not in note
