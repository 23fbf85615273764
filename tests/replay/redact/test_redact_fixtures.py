"""``replay redact`` over the committed parser fixtures of every format: each file written, read
back as the original (the redact check compares every event and run), and no secret left in it.
(Split from ``test_redact.py``, which keeps the archive's replay comparison and the CLI.)
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from replay.ingest.discover import discover
from replay.ingest.parse_file import parse_file
from replay.redact import redact
from replay.redact.secrets import scan
from tests.conftest import REPO

_AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
_MAIL = "alice.smith" + "@example.com"


def test_the_parser_fixtures_redact_with_every_event_kept(tmp_path: Path) -> None:
    """Compactions, microcompactions, persisted outputs (whose declared size the parser reads
    from the text), rewinds, forks: the redact check compares every event and run."""
    fixtures = REPO / "tests" / "fixtures"
    report = redact([fixtures / "claude_code", fixtures / "codex"], tmp_path / "out")
    assert report.ok, [str(i) for i in report.issues]
    a = parse_file(fixtures / "claude_code" / "handmade_2_1_attachments_microcompact.jsonl")
    [name] = [f.archived_as for f in report.files
              if Path(f.source).name == "handmade_2_1_attachments_microcompact.jsonl"]
    b = parse_file(tmp_path / "out" / name)
    assert a.tables is not None and b.tables is not None
    assert "persisted_output" in a.tables.events["kind"].to_pylist()
    assert b.tables.events.drop(["run_id"]).equals(a.tables.events.drop(["run_id"]))


def test_the_other_formats_fixtures_redact(tmp_path: Path) -> None:
    """ATIF, Gemini CLI (JSON and JSON Lines), Inspect (JSON and .eval zips), OpenCode (export
    and events) and plain chat lists: written and read back as the originals (the redact
    check); before, the .eval zips and the hand-made Inspect compaction were refused."""
    fixtures = REPO / "tests" / "fixtures"
    chat = tmp_path / "chat" / "dump.json"
    chat.parent.mkdir()
    chat.write_text(json.dumps({"model": "gpt-4o", "messages": [
        {"role": "system", "content": f"You help {_MAIL}"},
        {"role": "user", "content": "read /home/alice/app.py"},
        {"role": "assistant", "content": None, "usage": {"prompt_tokens": 100},
         "tool_calls": [{"id": "c1", "type": "function", "function": {
             "name": "read_file", "arguments": json.dumps({"path": "/home/alice/app.py"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"KEY={_AKIA}"},
        {"role": "assistant", "content": "done", "usage": {"prompt_tokens": 150}}]}))
    inputs = [fixtures / f for f in ("atif", "gemini_cli", "inspect_ai", "opencode")]
    report = redact([*inputs, chat.parent], tmp_path / "out")
    assert [(f.source, [i.reason for i in f.issues]) for f in report.files
            if not f.written] == []
    written = [f for f in report.files if f.written]
    assert {f.format for f in written} == {"atif", "gemini_cli", "inspect_ai", "opencode", "chat"}
    assert not [i for f in written for i in f.issues]
    for f, _ in discover([tmp_path / "out"]):
        if zipfile.is_zipfile(f):  # an .eval: its members, uncompressed
            with zipfile.ZipFile(f) as z:
                assert scan(b"\n".join(z.read(n) for n in z.namelist())) == [], f
        else:
            assert scan(f.read_bytes()) == [], f
