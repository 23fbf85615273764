"""mini-swe-agent: a trajectory decoded typed (``mini_swe_agent_records.typed``: the fields read,
each response's ``choices`` skipped) is parsed as the generic decoding parses it, and a document
the typed decoding does not take as it is falls back to the generic way: the same runs, issues
and coverage as before, down to a skipped field the generic decoding refuses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import replay.ingest.parsers.mini_swe_agent as mini
import replay.ingest.parsers.mini_swe_agent_records as records
from replay.ingest.parsers.mini_swe_agent_records import long_digits, typed
from replay.ingest.parsers.source import Issue, Source

SAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample" / "mini-swe-agent"
LIMIT = sys.get_int_max_str_digits()


def _doc(**top: Any) -> dict[str, Any]:
    reply = {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls\n```",
             "extra": {"response": {"id": "r1", "model": "m", "choices": [
                 {"index": 0, "message": {"content": "THOUGHT: look", "role": "assistant"}}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 1}}}}
    doc: dict[str, Any] = {"info": {"mini_version": "1.0.0"}, "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"}, reply,
        {"role": "user", "content": "<output>a</output>", "extra": {"timestamp": 1.7e9}}],
        "trajectory_format": "mini-swe-agent-1"}
    doc.update(top)
    return doc


def _parsed(data: bytes, generic: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """What ``parse`` makes of ``data``: typed when it takes it, or (``generic``) always the
    generic way."""
    with monkeypatch.context() as m:
        if generic:
            m.setattr(records, "typed", lambda data: None)
        src = Source(path="t.traj.json", rel="t.traj.json", data=data, sha256="0" * 64)
        issues: list[Issue] = []
        runs = mini.parse(src, issues)
    return ([(r.run, {k: list(v) for k, v in r.messages.items()}, r.requests) for r in runs],
            issues, src.coverage.counts)


def _text(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def _replaced(old: str, new: str) -> bytes:
    text = json.dumps(_doc())
    assert old in text
    return text.replace(old, new, 1).encode("utf-8", "surrogatepass")


TAKEN = {
    "plain": _text(_doc()),
    "bare list": _text(_doc()["messages"]),
    "no info": _text({k: v for k, v in _doc().items() if k != "info"}),
    "role null": _replaced('"role": "system"', '"role": null'),
    "role missing": _replaced('"role": "system", ', ""),
    "extra null": _replaced('"extra": {"timestamp"', '"extra": null, "x": {"timestamp"'),
    "response null": _replaced('"response": {', '"response": null, "r": {'),
    "usage a list": _replaced('"usage": {', '"usage": [1], "u": {'),
    "a duplicate role": _replaced('"role": "system"', '"role": "user", "role": "system"'),
    "unknown message keys": _replaced('"role": "system"', '"role": "system", "z": [1, {}]'),
    "a float out of range skipped": _replaced('"choices": [', '"choices": [1e400, '),
}
REFUSED = {
    "a key not known here": _text(_doc(extra_key=1)),
    "no messages": _text({k: v for k, v in _doc().items() if k != "messages"}),
    "messages an object": _text(_doc(messages={})),
    "a message no object": _text(_doc(messages=[*_doc()["messages"], 3])),
    "extra a list": _replaced('"extra": {"timestamp": 1700000000.0}', '"extra": [1]'),
    "response a string": _replaced('"response": {', '"response": "r", "r": {'),
    "a duplicate extra": _replaced('"extra": {"timestamp"', '"extra": 5, "extra": {"timestamp"'),
    "a lone surrogate skipped (msgspec checks it)": _replaced('"choices": [',
                                                             '"choices": ["\\ud800", '),
    "a long digit string (digits in a row: not told from an integer)": _replaced(
        '"choices": [', '"choices": ["' + "9" * (LIMIT + 9) + '", '),
    "a lone surrogate read": _replaced('"content": "sys"', '"content": "\\ud800"'),
    "an integer too long skipped": _replaced('"choices": [', f'"choices": [{"9" * (LIMIT + 1)}, '),
    "an integer too long in a key not read": _replaced('"role": "system"', '"role": "system", '
                                                       f'"z": -{"7" * (LIMIT + 50)}'),
    "not UTF-8 where skipped": _text(_doc()).replace(b'"choices": [', b'"choices": ["\xff", '),
    "a byte order mark": b"\xef\xbb\xbf" + _text(_doc()),
    "bytes after it": _text(_doc()) + b" x",
    "cut short": _text(_doc())[:-40],
    "nested too deeply where skipped": _replaced('"choices": [', '"choices": [' + "[" * 1100
                                                 + "]" * 1100 + ", "),
}


@pytest.mark.parametrize("name", sorted(TAKEN))
def test_a_document_taken_typed_is_parsed_as_the_generic_way_parses_it(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = TAKEN[name]
    assert typed(data) is not None
    got, want = _parsed(data, False, monkeypatch), _parsed(data, True, monkeypatch)
    assert got == want and got[0]  # (a run, its messages)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_document_typed_decoding_does_not_take_is_read_the_generic_way(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = REFUSED[name]
    assert typed(data) is None
    assert _parsed(data, False, monkeypatch) == _parsed(data, True, monkeypatch)


def test_an_integer_too_long_where_skipped_loses_the_document_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic decoding refuses it (Python reads no integer that long), the typed one would
    pass over it: the document is damaged, its messages salvaged, as before typed decoding."""
    runs, issues, _ = _parsed(REFUSED["an integer too long skipped"], False, monkeypatch)
    assert runs and any("digits" in i.reason for i in issues)
    assert any("damaged file" in i.reason for i in issues)


def test_long_digits_finds_every_run_over_the_limit_and_no_other() -> None:
    n = LIMIT + 1
    for size in (n - 1, n, n + 1, 2 * n + 3):
        for at in (0, 1, n - 1, n, n + 1, 3 * n - 2):
            data = b"x" * at + b"7" * size + b"x" * 5
            assert long_digits(data) is (size >= n), (size, at)
            assert long_digits(data + b"1" * (n - 1)) is (size >= n)
    assert not long_digits(b"")
    assert not long_digits(b"12x" * (3 * n))


def test_the_samples_are_taken_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(SAMPLES.glob("*.json"))
    assert len(files) == 4
    for path in files:
        data = path.read_bytes()
        assert typed(data) is not None, path.name
        assert _parsed(data, False, monkeypatch) == _parsed(data, True, monkeypatch), path.name
