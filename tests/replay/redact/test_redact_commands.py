"""``replay redact`` writes a command's stand-in wherever the ingest reads a command: under every
key a shell call's command is recorded under (``replay.shell_line.COMMAND_KEYS``, ``code`` too:
redaction kept its own ``{command, cmd}``, so a ``code`` command became a text marker and its
call read as ``exec``), an argument vector joined as the ingest joins it
(``replay.shell_line.unwrap_argv``: ``["cat", "a b.txt"]`` is one file, not ``a`` and
``b.txt``).  The copy classifies every call as the original does, on the same hashed file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from replay.ingest.parse_file import parse_file
from replay.redact import redact
from replay.redact.leaves import Redactor

_NOTES = "/srv/app/notes.txt"
_SPACED = "/srv/app/a b.txt"


def _claude_session() -> list[dict[str, Any]]:
    base = {"isSidechain": False, "userType": "external", "sessionId": "s-1", "cwd": "/srv/app",
            "version": "2.1.39"}
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 100,
             "cache_read_input_tokens": 0, "output_tokens": 20}

    def call(n: int, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"type": "assistant", "requestId": f"r{n}", "message": {
                "model": "claude-opus-4-6", "id": f"msg_{n}", "type": "message",
                "role": "assistant", "usage": usage, "content": [
                    {"type": "tool_use", "id": f"t{n}", "name": name, "input": args}]}},
            {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"text {n}"}]}}]

    recs = [{"type": "user", "message": {"role": "user", "content": "read the notes"}},
            *call(1, "mcp__sandbox__shell", {"code": f"cat {_NOTES}"}),
            *call(2, "Read", {"file_path": _NOTES}),
            *call(3, "mcp__sandbox__shell", {"code": "tail -5 notes.txt | grep x"}),
            *call(4, "mcp__sandbox__shell", {"code": f"sed -i 's/a/b/' {_NOTES}"})]
    out, parent = [], None
    for i, rec in enumerate(recs):
        out.append({"parentUuid": parent, **base, **rec, "uuid": f"u{i}",
                    "timestamp": f"2026-01-15T10:4{i}:00.000Z"})
        parent = f"u{i}"
    return out


def _codex_session() -> list[dict[str, Any]]:
    def line(i: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2026-02-23T12:19:4{i}.000Z", "type": kind, "payload": payload}

    def shell(i: int, command: list[str]) -> list[dict[str, Any]]:
        return [line(i, "response_item", {"type": "function_call", "name": "shell",
                                          "call_id": f"c{i}",
                                          "arguments": json.dumps({"command": command})}),
                line(i, "response_item", {"type": "function_call_output", "call_id": f"c{i}",
                                          "output": json.dumps({"output": f"out {i}",
                                                                "metadata": {"exit_code": 0}})})]

    return [
        line(0, "session_meta", {"id": "019c8a70-dda7-7f33-98ea-f30553347322",
                                 "timestamp": "2026-02-23T12:19:38.535Z", "cwd": "/srv/app",
                                 "originator": "codex_cli_rs", "cli_version": "0.104.0",
                                 "model_provider": "openai"}),
        line(1, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "read it"}]}),
        *shell(2, ["cat", _SPACED]),
        *shell(3, ["bash", "-lc", f"cat '{_SPACED}'"]),
        line(4, "event_msg", {"type": "token_count", "info": {"last_token_usage": {
            "input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 30}}}),
    ]


def _calls(path: Path) -> list[tuple[str, int]]:
    """Each tool call's operation and which file it targets, as the order the files were
    first met in (-1: none): the same in a copy whose paths are hashed."""
    tables = parse_file(path).tables
    assert tables is not None
    files: dict[str, int] = {}
    return [(op, files.setdefault(p, len(files)) if p else -1)
            for kind, op, p in zip(tables.messages["kind"].to_pylist(),
                                   tables.messages["op"].to_pylist(),
                                   tables.messages["path"].to_pylist())
            if kind == "tool_call"]


def test_every_command_the_ingest_reads_gets_a_stand_in_on_the_same_file(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "claude").mkdir(parents=True)
    (src / "codex").mkdir()
    sessions = {"claude/session.jsonl": _claude_session(),
                "codex/rollout-2026-02-23T12-19-38-019c8a70.jsonl": _codex_session()}
    for rel, records in sessions.items():
        (src / rel).write_text("".join(json.dumps(r) + "\n" for r in records))
    report = redact([src], tmp_path / "out")
    assert report.ok, [str(i) for i in report.issues]
    copies = {f.source: tmp_path / "out" / f.archived_as for f in report.files}
    claude, codex = _calls(src / "claude/session.jsonl"), _calls(
        src / "codex/rollout-2026-02-23T12-19-38-019c8a70.jsonl")
    # the originals as the ingest reads them: a 'code' command and a Read on one file, an
    # argv and a bash -lc line on one file with a blank in its name
    assert claude == [("read", 0), ("read", 0), ("read", 1), ("edit", 0)]
    assert codex == [("read", 0), ("read", 0)]
    assert _calls(copies["claude/session.jsonl"]) == claude
    assert _calls(copies["codex/rollout-2026-02-23T12-19-38-019c8a70.jsonl"]) == codex
    for copy in copies.values():
        text = copy.read_text()
        assert "/srv/app" not in text and "notes" not in text and "a b.txt" not in text


def test_a_code_that_is_no_command_keeps_nothing_of_its_value() -> None:
    """A string under ``code`` that is no command (an API error's code) gets the stand-in of an
    ``exec``: its marker and ``run`` (before, its marker alone); nothing of it is kept either
    way."""
    redactor = Redactor()
    redactor.start_file()
    got = redactor.record({"type": "error", "error": {"code": "rate_limit_exceeded"}})
    code = got["error"]["code"]
    assert re.fullmatch(r"echo \[REDACTED_CTXREPLAY id=[0-9a-f]{16}\]; run", code), code
    assert redactor.occurrences == [(code[len("echo [REDACTED_CTXREPLAY id="):-len("]; run")],
                                     "rate_limit_exceeded")]
