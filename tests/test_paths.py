"""Odd paths in and out: the tool writes only inside its output folder, whatever the logs say."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()


def _claude_line(rec: dict) -> str:  # type: ignore[type-arg]
    return json.dumps(rec) + "\n"


def _hostile_log(path: Path) -> None:
    """A Claude Code transcript whose tool calls name absolute paths, `..` and odd characters."""
    recs = [{"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": "s",
             "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "touch ../../escape and /tmp/abs"}}]
    parent = "u0"
    for i, target in enumerate(["/etc/passwd", "../../../outside.txt", "a b/\u00e9\u4e2d\n.py",
                                "..", "/"]):
        recs.append({"type": "assistant", "uuid": f"a{i}", "parentUuid": parent, "sessionId": "s",
                     "timestamp": f"2026-01-01T00:0{i}:01Z",
                     "message": {"id": f"m{i}", "role": "assistant", "model": "m",
                                 "content": [{"type": "tool_use", "id": f"t{i}", "name": "Write",
                                              "input": {"file_path": target, "content": "x"}}],
                                 "usage": {"input_tokens": 10, "output_tokens": 2}}})
        recs.append({"type": "user", "uuid": f"r{i}", "parentUuid": f"a{i}", "sessionId": "s",
                     "timestamp": f"2026-01-01T00:0{i}:02Z",
                     "message": {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}})
        parent = f"r{i}"
    path.write_text("".join(_claude_line(r) for r in recs))


def _tree(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_nothing_is_written_outside_the_output_folder(tmp_path: Path) -> None:
    logs = tmp_path / "in put" / "..odd..names"
    logs.mkdir(parents=True)
    _hostile_log(logs / "sess ion é.jsonl")
    _hostile_log(logs / "..jsonl")
    outside = tmp_path / "outside.jsonl"
    _hostile_log(outside)
    os.symlink(outside, logs / "link-out.jsonl")  # a symlink leading out of the input folder
    out = tmp_path / "out"
    before = _tree(tmp_path)
    cwd = os.getcwd()
    os.chdir(logs)  # relative targets in the logs would land here if anything wrote them
    try:
        for args in (["ingest", str(logs), "--out", str(out / "ds")],
                     ["run", "--policy", "two-tier-corrected", str(logs), "--out", str(out / "run"),
                      "--report"],
                     ["sweep", "-p", "two-tier-corrected", "--axis", "tiers.1.trigger.at_tokens=50,100",
                      str(logs), "--out", str(out / "sweep"), "--jobs", "1"]):
            result = runner.invoke(app, args)
            assert result.exit_code == 0, (args, result.output)
    finally:
        os.chdir(cwd)
    new = _tree(tmp_path) - before
    assert new, "the commands wrote nothing at all"
    escaped = [p for p in new if out not in p.parents and p != out]
    assert escaped == []
    # the symlinked file was read (it is a log the user pointed at), under its link name
    runs = runner.invoke(app, ["runs", str(out / "ds"), "--json"])
    assert runs.exit_code == 0, (runs.output, runs.exception)
    assert "link-out.jsonl" in {r["source"] for r in json.loads(runs.stdout)}
