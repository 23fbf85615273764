"""``replay redact`` keeps what a parser reads for structure: ids, timestamps and a format's enums
round-trip (or get one stand-in each), a marker carries the figures of the block it stands in,
and equal texts in blocks of other sizes get markers of their own.

Checked on the third-party Codex catalog (``tests/fixtures/codex_catalog``: every 0.146-0.149
record type, its values trimmed to one placeholder shared by ids, times and texts) and on a
small Codex rollout written here.  The copy and the original are walked side by side as plain
JSON, independently of the redactor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.ingest.parse_file import parse_file
from replay.redact import redact
from tests.conftest import REPO

CATALOG = REPO / "tests" / "fixtures" / "codex_catalog" / "agent-sessions-stage0-codex-0.146.jsonl"
PLACEHOLDER = "[trimmed for fixture]"
_STRUCTURE = ("call_id", "turn_id", "timestamp", "window_id", "previous_window_id",
              "first_window_id", "id", "started_at", "completed_at", "name", "rolloutIds")
_FIGURES = ("role", "kind", "n_chars", "n_bytes", "n_lines", "tokens_o200k", "tokens_cl100k",
            "tokens_estimated", "is_error")


def _records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _side_by_side(a: Any, b: Any, key: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(key, original value, copy value) of every leaf, the two records walked together (a dict
    by its items in order: the copy keeps every key, in place)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for (ka, va), (_kb, vb) in zip(a.items(), b.items()):
            yield from _side_by_side(va, vb, ka)
    elif isinstance(a, list) and isinstance(b, list):
        for va, vb in zip(a, b):
            yield from _side_by_side(va, vb, key)
    else:
        yield key, a, b


def _redact_one(path: Path, out: Path, stand_ins: int = 0) -> Path:
    report = redact([path.parent], out)
    [f] = report.files
    assert f.written and not f.issues, [i.reason for i in f.issues]
    assert report.n_stand_ins == stand_ins  # said in the summary line and --json
    return out / f.archived_as


def test_the_codex_catalog_round_trips_with_its_ids(tmp_path: Path) -> None:
    """Before: 11 issues (call ids, tool names and times replaced by markers, one marker shared
    by a call id and a text, a block's size on ``action.type``, ``metadata.turn_id`` and the
    ``changes`` keys hashed away)."""
    # one stand-in: the placeholder, written where an id or a time is
    copy = _redact_one(CATALOG, tmp_path / "out", stand_ins=1)
    a, b = parse_file(CATALOG).tables, parse_file(copy).tables
    assert a is not None and b is not None
    for col in _FIGURES:
        assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), col
    assert b.requests.num_rows == a.requests.num_rows
    # the orphaned result of the original (the catalog's trimmed call ids) is still the only one
    orphans = [i for i in parse_file(copy).issues if "has no earlier call" in i.reason]
    assert len(orphans) == 1
    stand_in: dict[tuple[str, str], str] = {}
    types: list[tuple[str, str]] = []
    for ra, rb in zip(_records(CATALOG), _records(copy), strict=True):
        for key, u, v in _side_by_side(ra, rb):
            if key in _STRUCTURE and isinstance(u, str) and u:
                assert "REDACTED" not in v, (key, u, v)  # never a text marker
                if " " not in u:
                    assert v == u, (key, u)  # one token: kept as written
                assert stand_in.setdefault((key, u), v) == v  # one stand-in per value
            if key == "type" and isinstance(u, str):
                types.append((u, v))
    # distinct values keep distinct stand-ins (calls still pair, records stay apart)
    assert len(set(stand_in.values())) == len({u for _, u in stand_in})
    # the web search action types are the format's own words: kept
    assert {u for u, v in types if u == v} >= {"search", "openPage", "findInPage"}
    text = copy.read_text()
    assert PLACEHOLDER not in text and "/tmp/repo" not in text and "example.invalid" not in text
    # patch changes stay keyed by the path's hash, the same hash the citation's path has
    [patch] = [r["payload"] for r in _records(copy)
               if r.get("payload", {}).get("type") == "patch_apply_end"][:1]
    [cited] = [r["payload"]["memory_citation"]["entries"][0]["path"] for r in _records(copy)
               if "memory_citation" in r.get("payload", {})][:1]
    assert list(patch["changes"]) == [cited] and cited.endswith(".txt")
    turns = [r["payload"]["metadata"] for r in _records(copy)
             if isinstance(r.get("payload", {}).get("metadata"), dict)]
    assert turns and all(list(m) == ["turn_id"] for m in turns)


def _line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2026-08-03T10:48:56.000Z", "type": kind,
                       "payload": payload})


def test_equal_texts_in_blocks_of_other_sizes_get_their_own_markers(tmp_path: Path) -> None:
    """The same words as a whole user message and inside a tool output beside an image: one
    marker for both could carry one block's figures only (before: "a marker shared with
    another block", the output's block read 15 characters instead of 23)."""
    words = "the same words"
    src = tmp_path / "in" / "rollout.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join([
        _line("session_meta", {"id": "s1", "cli_version": "0.146.0"}),
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": words}]}),
        _line("response_item", {"type": "function_call", "call_id": "c1", "name": "view",
                                "arguments": json.dumps({"path": "/home/u/a.png"})}),
        _line("response_item", {"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_text", "text": words},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}),
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": words}]}),
    ]) + "\n")
    copy = _redact_one(src, tmp_path / "out")
    a, b = parse_file(src).tables, parse_file(copy).tables
    assert a is not None and b is not None
    for col in _FIGURES:
        assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), col
    texts = b.messages["text"].to_pylist()
    user = [t for t, r in zip(texts, b.messages["role"].to_pylist()) if r == "user"]
    output = [t for t, r in zip(texts, b.messages["role"].to_pylist()) if r == "tool"]
    assert len(user) == 2 and user[0] == user[1]  # equal blocks still read equal
    assert output and user[0] not in output[0]  # the larger block has a marker of its own
    assert words not in copy.read_text()


def test_a_blocks_figures_go_on_the_marker_of_its_longest_text(tmp_path: Path) -> None:
    """A call whose arguments hold a short and a long text: the block's figures are declared by
    the long text's marker, zeros by the short one's (before: by whichever came first)."""
    src = tmp_path / "in" / "rollout.jsonl"
    src.parent.mkdir()
    args = {"pattern": "x1", "explanation": "look for every caller of the parser, then list them"}
    src.write_text("\n".join([
        _line("session_meta", {"id": "s1", "cli_version": "0.146.0"}),
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "go"}]}),
        _line("response_item", {"type": "function_call", "call_id": "c1", "name": "grep",
                                "arguments": json.dumps(args)}),
    ]) + "\n")
    copy = _redact_one(src, tmp_path / "out")
    a = parse_file(src).tables
    assert a is not None
    [call] = [r for r in _records(copy) if r["payload"].get("type") == "function_call"]
    written = json.loads(call["payload"]["arguments"])
    chars = {k: int(v.split("chars=")[1].split()[0]) for k, v in written.items()}
    [block] = [n for n, t in zip(a.messages["n_chars"].to_pylist(),
                                 a.messages["text"].to_pylist()) if "explanation" in t]
    assert chars == {"pattern": 0, "explanation": block}


def test_codex_context_messages_stay_no_user_turn(tmp_path: Path) -> None:
    """Codex writes ``<environment_context>`` user messages itself; its parser does not count
    them as a user turn, so a compaction after one is still mid-turn (``auto``).  Redacted as a
    bare marker, the message read as a turn and the trigger as '' (before: "events.trigger: 1 of
    1 rows read other than the original's")."""
    src = tmp_path / "in" / "rollout.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join([
        _line("session_meta", {"id": "s1", "cli_version": "0.146.0"}),
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "do the thing"}]}),
        _line("response_item", {"type": "function_call", "call_id": "c1", "name": "shell",
                                "arguments": json.dumps({"command": ["ls"]})}),
        _line("response_item", {"type": "function_call_output", "call_id": "c1",
                                "output": "a.txt"}),
        _line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text",
             "text": "<environment_context>\n  <cwd>/home/u/app</cwd>\n</environment_context>"}]}),
        _line("compacted", {"message": "what was done so far"}),
    ]) + "\n")
    copy = _redact_one(src, tmp_path / "out")
    a, b = parse_file(src).tables, parse_file(copy).tables
    assert a is not None and b is not None
    # a model call, then no user turn before the compaction: mid-turn
    assert a.events["trigger"].to_pylist() == b.events["trigger"].to_pylist() == ["auto"]
    text = copy.read_text()
    assert "<environment_context>[REDACTED_CTXREPLAY" in text and "/home/u" not in text
