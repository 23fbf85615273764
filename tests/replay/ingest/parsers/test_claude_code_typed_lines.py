"""Claude Code lines decoded into ``Line`` Structs (``claude_code_records.decode``): the parse is
the one the generic decoding gives, whatever a line holds (fields of other types, lines that
are no object, JSON msgspec refuses, bytes that are not UTF-8 in a field the Struct skips)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from replay.ingest.parsers import claude_code
from replay.ingest.parsers.claude_code_records import Line, Message, decode, line_of
from replay.ingest.parsers.source import Issue
from tests.replay.ingest.parsers.parsed_rows import stand_in_source

SAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample" / "claude-code"


def _refused(data: bytes) -> Line:
    raise ValueError("not decoded typed")


def _refused_lines(data: memoryview) -> list[Line]:
    raise ValueError("not decoded typed")


def _parse(data: bytes, *, typed: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """Everything the parse gives (runs, issues, coverage) as one text, decoded typed or every
    line the generic way (``iter_typed``'s fallback)."""
    with monkeypatch.context() as m:
        if not typed:
            m.setattr(claude_code, "decode", _refused)
            m.setattr(claude_code, "decode_lines", _refused_lines)
        src, issues = stand_in_source("t/s.jsonl", data), list[Issue]()
        drafts = claude_code.parse(src, issues)
    return repr(([(d.run, d.messages, d.requests, d.events) for d in drafts],
                 [str(i) for i in issues], src.coverage.by_type(),
                 src.coverage.no_conversation))


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(
    ["", "u1", "u2", "s", "user", "assistant", "system", "progress", "attachment",
     "compact_boundary", "microcompact_boundary", "2026-01-01T00:00:00Z", "ai-title"]))
_VALUE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(
                          ["type", "text", "content", "id", "name", "input", "tool_use_id",
                           "usage", "input_tokens", "trigger", "preTokens", "uuids"]),
                          inner, max_size=4), max_leaves=12)
_KEYS = ("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "timestamp", "message",
         "isSidechain", "agentId", "version", "subtype", "attachment", "isCompactSummary",
         "compactMetadata", "forkedFrom", "aiTitle", "data", "toolUseResult")
_MESSAGE = st.fixed_dictionaries({}, optional={
    "content": st.one_of(st.text(max_size=3), st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": _SCALAR}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "id": _SCALAR,
                               "name": st.just("Bash"), "input": _VALUE}),
        st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": _SCALAR,
                               "content": _VALUE}), _VALUE), max_size=3), _VALUE),
    "id": _SCALAR, "model": _SCALAR, "usage": _VALUE})
_RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "progress", "system", "attachment"])},
    optional={k: _MESSAGE if k == "message" else _VALUE for k in _KEYS if k != "type"})
_LINE = st.one_of(_RECORD.map(json.dumps), _VALUE.map(json.dumps),
                  st.sampled_from(['{"type": "user", "x": NaN}', '{"type": "user"', "[1, 2]",
                                   '{"type": "user", "uuid": "\\ud800"}', "   "]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_LINE, max_size=8))
def test_typed_lines_parse_as_generic_ones(lines: list[str]) -> None:
    """Any lines, typed or not: the same runs, issues and coverage (a field of another type is
    read as it is; a line the Struct decoder refuses takes the generic path)."""
    data = "\n".join(lines).encode()
    with pytest.MonkeyPatch.context() as mp:
        assert _parse(data, typed=True, monkeypatch=mp) == _parse(data, typed=False,
                                                                  monkeypatch=mp)


@pytest.mark.parametrize("name", ["short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"])
def test_typed_lines_parse_the_samples_as_generic_ones(name: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data = (SAMPLES / name).read_bytes()
    assert _parse(data, typed=True, monkeypatch=monkeypatch) == _parse(
        data, typed=False, monkeypatch=monkeypatch)


def _user(uuid: str, parent: str | None, **more: Any) -> bytes:
    return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                       "message": {"role": "user", "content": f"hi {uuid}"}, **more}).encode()


def test_invalid_utf8_in_a_skipped_field_still_skips_the_line() -> None:
    """msgspec passes over a field the Struct does not hold unchecked: a line that is not
    ASCII is checked first, so one with invalid UTF-8 anywhere is skipped with its issue, as
    before, and the lines around it are read."""
    bad = _user("u2", "u1", toolUseResult="\x00").replace(b"\\u0000", b"\xff")
    data = b"\n".join([_user("u1", None), bad, _user("u3", "u1")]) + b"\n"
    src, issues = stand_in_source("t/s.jsonl", data), list[Issue]()
    drafts = claude_code.parse(src, issues)
    at = bad.index(b"\xff")
    assert [(i.line, i.reason) for i in issues] == [(2, f"invalid UTF-8 at byte {at} (line skipped)")]
    assert len(drafts) == 1 and drafts[0].messages["text"] == ["hi u1", "hi u3"]


def test_a_field_of_another_type_is_read_as_generic_decoding_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong-typed fields reach the parser as they are (its checks decide), typed or not."""
    data = b"\n".join([_user("u1", None), _user("u2", "u1", isSidechain="yes", agentId=7),
                       _user("u3", 5, sessionId=["s"]),
                       b'{"type": "assistant", "uuid": "u4", "message": "text"}'])
    typed = _parse(data, typed=True, monkeypatch=monkeypatch)
    assert typed == _parse(data, typed=False, monkeypatch=monkeypatch)
    assert "assistant record has no 'message' object" in typed


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from((*Line.__struct_fields__, "data", "cwd")), _VALUE))
def test_line_of_a_record_is_its_typed_decoding(record: dict[str, Any]) -> None:
    """A record decoded the generic way and made a ``Line`` is the ``Line`` the Struct decoder
    gives, every field as the record has it (absent: None; UNSET for ``parentUuid`` and the
    run-level fields whose null is said: ``sessionId``, ``version``, ``agentId``, the titles)."""
    line = line_of(record)
    msg = record.get("message")
    if msg is None or isinstance(msg, dict):
        assert line == decode(json.dumps(record).encode())
    else:  # a ``message`` that is no object: refused by the typed decoder, kept as it is
        with pytest.raises(msgspec.ValidationError):
            decode(json.dumps(record).encode())
    for key in Line.__struct_fields__:
        want = record.get(key, UNSET if key in (
            "parentUuid", "sessionId", "version", "agentId", "customTitle", "aiTitle") else None)
        if key == "message" and isinstance(want, dict):  # its fields ``record`` reads
            assert isinstance(line.message, Message)
            want = Message(**{k: v for k, v in want.items() if k in Message.__struct_fields__})
        assert getattr(line, key) == want


def _reply(**more: Any) -> str:
    """An assistant reply to ``_user("u1", None)``; ``usage_*`` and ``message_*`` keys set
    fields of its usage and message, the others of the record."""
    usage: dict[str, Any] = {"input_tokens": 5, "output_tokens": 2}
    msg: dict[str, Any] = {"id": "m1", "model": "claude", "role": "assistant",
                           "content": [{"type": "text", "text": "yo"}], "usage": usage}
    rec: dict[str, Any] = {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
                           "sessionId": "s", "message": msg}
    for key, value in more.items():
        where, _, name = key.partition("_")
        (usage if where == "usage" else msg if where == "message" else rec)[
            name if where in ("usage", "message") else key] = value
    return json.dumps(rec, allow_nan=True)


_HOSTILE = {
    "usage NaN": [_reply(usage_input_tokens=math.nan)],
    "usage infinite": [_reply(usage_input_tokens=-math.inf)],
    "usage beyond any float": [('{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":'
                               '"s","message":{"id":"m","model":"c","content":[],"usage":'
                               '{"input_tokens":1e999}}}')],
    "usage a huge int": [_reply(usage_input_tokens=10**40)],
    "usage a string": [_reply(usage_output_tokens="2")],
    "usage negative": [_reply(usage_input_tokens=-3)],
    "type a list": [_reply(type=["assistant"])],
    "uuid a number": [_reply(uuid=7)],
    "content an object": [_reply(message_content={"type": "text", "text": "x"})],
    "duplicate keys": [('{"type":"assistant","type":"user","uuid":"a1","parentUuid":"u1",'
                       '"sessionId":"s","message":{"role":"user","content":"x"},'
                       '"message":{"role":"user","content":"y"}}')],
    "a BOM in the middle": ["\ufeff" + _reply()],
    "CRLF": [_reply() + "\r"],
    "NUL": ["\x00", _reply(data="a\x00b")],
    "lone surrogates": [_reply(message_content=[{"type": "text", "text": "\ud800"}]),
                        _reply(uuid="a2", toolUseResult="\udfff")],
    "NaN in a skipped field": [_reply(data=math.nan)],
    "an invalid escape in a skipped field": ['{"type":"user","uuid":"u2","data":"\\x"}'],
    "a line of whitespace": [" \t\r\f\v" * 1000],
}


@pytest.mark.parametrize("lines", _HOSTILE.values(), ids=_HOSTILE.keys())
def test_hostile_lines_parse_as_generic_ones(lines: list[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines crafted to catch the Struct decoder out (values msgspec refuses or reads its own
    way, bytes it passes over unchecked in a skipped field): the same runs, issues and
    coverage as decoded the generic way, and no parser failure."""
    data = "\n".join([_user("u1", None).decode(), *lines]).encode("utf-8", "surrogatepass")
    typed = _parse(data, typed=True, monkeypatch=monkeypatch)
    assert typed == _parse(data, typed=False, monkeypatch=monkeypatch)
    assert "hi u1" in typed
