"""A field of the wrong type where a parser looks a value up (a list or an object is no key of
its tables) is said in the log's terms — the field, what it holds, what was expected — never in
Python's ("unhashable type: 'list'", "NoneType"), and costs no more than that record: planted
in a real file of each format where a hostile-input sweep found Python's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
PYTHON_WORDS = ("unhashable", "NoneType", "object is not", "not iterable", "not subscriptable",
                "has no attribute")


def _set(node: Any, where: tuple[Any, ...], value: Any) -> None:
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value


def _planted(path: Path, tmp_path: Path, where: tuple[Any, ...], value: Any) -> ParsedFile:
    """``path`` with the value at ``where`` (a JSON Lines file: its first item is the line's
    index) replaced by ``value``, parsed."""
    out = tmp_path / f"planted{path.suffix}"
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").split("\n")
        rec = json.loads(lines[where[0]])
        _set(rec, where[1:], value)
        lines[where[0]] = json.dumps(rec)
        out.write_text("\n".join(lines), encoding="utf-8")
    else:
        doc = json.loads(path.read_bytes())
        _set(doc, where, value)
        out.write_text(json.dumps(doc), encoding="utf-8")
    parsed = parse_file(out, tmp_path)
    for issue in parsed.issues:
        assert not any(w in issue.reason for w in PYTHON_WORDS), issue.reason
    return parsed


CODEX = FIXTURES / "codex" / ("rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-"
                              "0123456789ab.jsonl")
CLAUDE = FIXTURES / "claude_code" / "dag_compact_after_rewind.jsonl"


@pytest.mark.parametrize("value", [["response_item"], {"a": 1}], ids=["list", "dict"])
def test_codex_a_line_type_that_is_no_string(tmp_path: Path, value: Any) -> None:
    parsed = _planted(CODEX, tmp_path, (3, "type"), value)
    said = [(i.line, i.reason) for i in parsed.issues if "line type" in i.reason]
    assert said == [(4, f"line type is {type(value).__name__}, not a string (record skipped)")]


@pytest.mark.parametrize("value", [["user"], {"a": 1}, None], ids=["list", "dict", "null"])
def test_codex_a_message_role_that_is_no_string(tmp_path: Path, value: Any) -> None:
    line = next(k for k, text in enumerate(CODEX.read_text(encoding="utf-8").split("\n"))
                if '"type":"message"' in text and '"role":"user"' in text)
    parsed = _planted(CODEX, tmp_path, (line, "payload", "role"), value)
    said = [(i.line, i.reason) for i in parsed.issues if "role" in i.reason]
    held = "null" if value is None else type(value).__name__
    why = f"message role is {held}, not a string (user/assistant/developer/system)"
    assert said == [(line + 1, f"{why} (record skipped)")]


@pytest.mark.parametrize("value", [["sample_init"], {"a": 1}], ids=["list", "dict"])
def test_inspect_an_event_kind_that_is_no_string_is_one_unknown_event(tmp_path: Path,
                                                                      value: Any) -> None:
    path = FIXTURES / "inspect_ai" / "hand-made-compaction.json"
    before = parse_file(path, path.parent)
    after = _planted(path, tmp_path, ("samples", 0, "events", 1, "event"), value)  # sample_init
    assert not [i for i in after.issues if "rest of the sample skipped" in i.reason]
    assert before.tables is not None and after.tables is not None
    assert after.tables.messages.num_rows == before.tables.messages.num_rows
    assert after.coverage["event (its 'event' no string)"] == {"unknown": 1}


@pytest.mark.parametrize("value", [["text"], {"a": 1}], ids=["list", "dict"])
def test_claude_code_a_block_type_that_is_no_string_is_read_as_an_unknown_block(
        tmp_path: Path, value: Any) -> None:
    after = _planted(CLAUDE, tmp_path, (0, "message", "content", 0, "type"), value)
    assert not [i for i in after.issues if "record skipped" in i.reason]
    assert after.tables is not None
    texts = after.tables.messages.column("text").to_pylist()
    assert any('"text": "Start"' in t for t in texts)  # the block's JSON, as any unknown type


def test_claude_code_null_content_is_said_as_null(tmp_path: Path) -> None:
    after = _planted(CLAUDE, tmp_path, (0, "message", "content"), None)
    assert [i.reason for i in after.issues if "message.content" in i.reason] == [
        "message.content is null, expected a string or a list (record skipped)"]


def test_opencode_null_parts_are_said_as_null(tmp_path: Path) -> None:
    path = FIXTURES / "opencode" / "cart-discount.export.json"
    after = _planted(path, tmp_path, ("messages", 0, "parts"), None)
    assert [i.reason for i in after.issues if "parts" in i.reason] == [
        "messages[0]: parts is null, not a list (message skipped)"]
