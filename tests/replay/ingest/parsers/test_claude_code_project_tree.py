"""``replay ingest ~/.claude/projects`` must just work: besides transcripts, a project folder
holds session files of nothing but ``summary`` / ``file-history-snapshot`` records, subagents'
``agent-*.meta.json`` and workflow journals, and workflow subagents nested deeper than
``subagents/``.  Those are no failures (exit 0) and are named, never silently dropped; the
runs are counted against the tree written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app

SID = "22220000-0000-4000-8000-000000000002"


def _msg(kind: str, uuid: str, parent: str | None, sid: str, text: str, *,
         side: bool = False) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
                           "isSidechain": side, "version": "2.1.150",
                           "timestamp": "2026-11-02T09:00:00.000Z"}
    if kind == "user":
        rec["message"] = {"role": "user", "content": text}
    else:
        rec["message"] = {"id": f"msg_{uuid}", "role": "assistant", "model": "claude-opus-4-5",
                          "content": [{"type": "text", "text": text}],
                          "usage": {"input_tokens": 40, "output_tokens": 3}}
    return rec


def _write(path: Path, recs: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _tree(root: Path) -> dict[str, int]:
    """A project folder; returns the requests per transcript, counted here."""
    proj = root / "-home-me-repo"
    _write(proj / f"{SID}.jsonl", [_msg("user", "u1", None, SID, "run the docs workflow"),
                                   _msg("assistant", "a1", "u1", SID, "started")])
    wf = proj / SID / "subagents" / "workflows" / "wf_01"
    _write(wf / "agent-ag01.jsonl", [
        dict(_msg("user", "s1", None, f"{SID}#agent-ag01", "sweep docs", side=True),
             agentId="ag01"),
        dict(_msg("assistant", "s2", "s1", f"{SID}#agent-ag01", "swept", side=True),
             agentId="ag01")])
    _write(wf / "journal.jsonl", [{"type": "started", "key": "v2:h0", "agentId": "ag01"},
                                  {"type": "result", "key": "v2:h0", "agentId": "ag01",
                                   "result": "swept"}])
    (wf / "agent-ag01.meta.json").write_text(json.dumps({"agentType": "general-purpose"}))
    (proj / SID / "subagents" / "agent-ab02.meta.json").write_text(json.dumps({"agentType": "x"}))
    (proj / "sessions-index.json").write_text(json.dumps({"version": 1, "entries": [
        {"sessionId": SID, "fullPath": str(proj / f"{SID}.jsonl"), "firstPrompt": "run"}]}))
    _write(proj / "a1b2c3d4-0000-4000-8000-000000000001.jsonl", [
        {"type": "summary", "summary": "Fixing the build", "leafUuid": "u9"},
        {"type": "summary", "summary": "Refactor", "leafUuid": "u8"}])
    _write(proj / "a1b2c3d4-0000-4000-8000-000000000003.jsonl", [
        {"type": "file-history-snapshot", "messageId": "m1", "isSnapshotUpdate": False,
         "snapshot": {"messageId": "m1", "trackedFileBackups": {}, "timestamp": "2026-11-01"}}])
    return {f"-home-me-repo/{SID}.jsonl": 1,
            f"-home-me-repo/{SID}/subagents/workflows/wf_01/agent-ag01.jsonl": 1}


def test_a_project_folder_ingests_with_exit_0_and_names_what_holds_no_conversation(
        tmp_path: Path) -> None:
    expected = _tree(tmp_path / "projects")
    out = tmp_path / "ds"
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "projects"), "--out", str(out),
                                      "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["failed"] == [] and doc["issues"] == []
    assert doc["runs"] == len(expected)
    assert sorted(doc["no_conversation"]) == sorted(f"-home-me-repo/{name}" for name in (
        f"{SID}/subagents/workflows/wf_01/journal.jsonl",
        f"{SID}/subagents/workflows/wf_01/agent-ag01.meta.json",
        f"{SID}/subagents/agent-ab02.meta.json",
        "a1b2c3d4-0000-4000-8000-000000000001.jsonl",
        "a1b2c3d4-0000-4000-8000-000000000003.jsonl", "sessions-index.json"))
    assert "summary x2" in doc["no_conversation"][
        "-home-me-repo/a1b2c3d4-0000-4000-8000-000000000001.jsonl"]
    runs = CliRunner().invoke(app, ["runs", str(out), "--json"])
    by_source = {r["source"]: r for r in json.loads(runs.stdout)}
    assert {k: r["requests"] for k, r in by_source.items()} == expected
    sub = by_source[f"-home-me-repo/{SID}/subagents/workflows/wf_01/agent-ag01.jsonl"]
    session = by_source[f"-home-me-repo/{SID}.jsonl"]
    assert sub["parent"] == session["source"]  # linked to its session (was unlinked)
    plain = CliRunner().invoke(app, ["ingest", str(tmp_path / "projects"), "--out", str(out)])
    assert plain.exit_code == 0 and "6 files hold no conversation" in plain.output


def test_metadata_with_anything_else_is_still_a_failed_input(tmp_path: Path) -> None:
    """Only a file of nothing but Claude Code's own metadata records is "no conversation":
    one unknown record or a broken line keeps it a failure, said."""
    odd = tmp_path / "odd.jsonl"
    _write(odd, [{"type": "summary", "summary": "x", "leafUuid": "u9"}, {"type": "other"}])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"type": "summary", "summary": "x", "leafUuid": "u9"})
                      + "\n{not json\n")
    for path in (odd, broken):
        result = CliRunner().invoke(app, ["ingest", str(path), "--out", str(tmp_path / "ds")])
        assert result.exit_code == 1, result.output
        assert "no conversation" not in result.output
