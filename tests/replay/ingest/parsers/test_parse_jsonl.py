"""The parsers' JSON decoder (``replay.ingest.parsers.json_decode.loads``), documents read with their
big arrays undecoded (``load_json(lazy=...)``) and lazily found item lines."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import json_depth, jsonl
from replay.ingest.parsers import json_text as json_text_module
from replay.ingest.parsers.json_decode import item, loads
from replay.ingest.parsers.json_depth import MAX_DEPTH, nesting
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import ItemLines, array_items, load_json
from replay.ingest.parsers.source import Source

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80), st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


def _outcome(decode: Any, data: bytes | str) -> tuple[str, str]:
    try:
        return "ok", repr(decode(data))  # repr: nan == nan, -0.0 != 0.0, int != float
    except RecursionError:
        return "RecursionError", ""
    except (ValueError, UnicodeDecodeError) as exc:
        return type(exc).__name__, str(exc)


def _stdlib(data: bytes | str) -> Any:
    return json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)


@settings(max_examples=100, deadline=None)
@given(_VALUES, st.booleans(), st.booleans())
def test_loads_equals_json_loads_on_any_value(value: Any, ascii_only: bool, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    data: bytes | str = text.encode("utf-8", "surrogatepass") if as_bytes else text
    assert _outcome(loads, data) == _outcome(_stdlib, data)


@pytest.mark.parametrize("data", [
    b'123456789012345678901234567890', b'-9223372036854775809', b'18446744073709551616',
    b'"\\ud800"', b'{"\\udc00": 1}', b'NaN', b'[-Infinity]', b'1e400', b'{"a": 1, "a": 2}',
    b'"\xff"', b'\xef\xbb\xbf{}', b'[1,]', b'{"a": 1} x', b'', b'[' * 5000 + b']' * 5000,
    b'"\xed\xa0\x80"', b'0.1e-400', b'9007199254740993.0', b'{"a":"\x01"}', b'[1e308, -0.0]',
])
def test_loads_equals_json_loads_on_edge_cases(data: bytes) -> None:
    """Values msgspec refuses (or reads otherwise) get json's value or json's error."""
    assert _outcome(loads, data) == _outcome(_stdlib, data)


def test_loads_raises_what_json_raises() -> None:
    with pytest.raises(UnicodeDecodeError) as bad_utf8:
        loads(b'{"a": "\xff"}')
    assert bad_utf8.value.start == 7
    with pytest.raises(json.JSONDecodeError) as bad_json:
        loads(b'{"a": 1,\n "b": }')
    assert (bad_json.value.lineno, bad_json.value.colno) == (2, 7)
    assert math.isnan(loads("NaN"))


_EDGES = (b'{"a": NaN}', b'{"a": "\\ud800"}', b'{"a": 1e400}', b'{"a": 1, "a": 2}',
          b'{"a": "\xff"}', b'{"a": 1,}', b'[1]', b'"x"', b'{"a": 1} x', b'{"a": "\xed\xa0\x80"}',
          b'{"a": ' + b'[' * 1200 + b']' * 1200 + b'}', b'{"a": ' + b'[' * 900 + b']' * 900 + b'}',
          b'{"a": 123456789012345678901234567890}')


def _line_outcomes(data: bytes) -> tuple[list[str], list[str]]:
    """(repr of each record, each issue) of ``iter_records`` over ``data``."""
    issues: list[jsonl.Issue] = []
    src = Source(path="t.jsonl", rel="t.jsonl", data=data, sha256="")
    records = [f"{no} {value!r}" for no, value in jsonl.iter_records(src, issues)]
    return records, [str(i) for i in issues]


def _line_reference(data: bytes) -> tuple[list[str], list[str]]:
    """The same, line by line with the standard library."""
    records, issues = [], []
    lines = data.split(b"\n")
    for no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            if nesting(raw) > MAX_DEPTH:  # (json's own limit is the recursion limit's)
                raise RecursionError
            value = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            issues.append(f"t.jsonl:{no}: invalid UTF-8 at byte {exc.start} (line skipped)")
            continue
        except RecursionError:
            issues.append(f"t.jsonl:{no}: {jsonl._TOO_DEEP} (line skipped)")
            continue
        except ValueError as exc:
            what = "incomplete last line (file still being written?)" if no == len(lines) \
                else "malformed JSON"
            issues.append(f"t.jsonl:{no}: {what}: {exc} (line skipped)")
            continue
        if isinstance(value, dict):
            records.append(f"{no} {value!r}")
        else:
            issues.append(f"t.jsonl:{no}: expected a JSON object, got {type(value).__name__}")
    return records, issues


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_VALUES.map(lambda v: json.dumps({"v": v}).encode("utf-8",
                                                                              "surrogatepass")),
                          _VALUES.map(lambda v: json.dumps(v).encode()),
                          st.sampled_from(_EDGES)), max_size=6), st.booleans())
def test_iter_records_reads_each_line_as_json_loads(lines: list[bytes], newline: bool) -> None:
    """Each line's record or issue is the standard library's reading of that line: what
    msgspec reads (decoded in the walk's loop) and what it refuses (read again by ``loads``:
    NaN, lone surrogates, big numbers, deep nesting, bad UTF-8, a line that is no object)."""
    data = b"\n".join(lines) + (b"\n" if newline else b"")
    expected = _line_reference(data)
    assert _line_outcomes(data) == expected
    limit = sys.getrecursionlimit()  # (raised under the test runner: each line measured)
    if not json_depth.OWN_C_LIMIT and limit > MAX_DEPTH:
        sys.setrecursionlimit(MAX_DEPTH)  # as a plain run has it: no line measured first
        try:
            assert not json_depth.check_each()
            assert _line_outcomes(data) == expected
        finally:
            sys.setrecursionlimit(limit)


_KEYS = st.one_of(st.text(max_size=5), st.integers(-(2**70), 2**70), st.none(), st.booleans(),
                 st.floats(allow_nan=True, allow_infinity=True))
_ENCODABLE = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                          | st.tuples(inner, inner)
                          | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=20)


def _encoded(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return "ok", encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=150, deadline=None)
@given(_ENCODABLE)
def test_json_text_equals_json_dumps(value: Any) -> None:
    """The once-made C encoder writes what ``json.dumps(ensure_ascii=False)`` writes: NaN and
    infinities, lone surrogates, big integers, keys that are numbers, booleans or null."""
    assert json_text(value) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("value", [{1j: 1}, {"a": {1, 2}}, [object()], b"x"])
def test_json_text_refuses_what_json_dumps_refuses(value: Any) -> None:
    assert _encoded(json_text, value) == _encoded(lambda v: json.dumps(v, ensure_ascii=False),
                                                  value)


def _nested(depth: int) -> Any:
    value: Any = {"a": "b"}
    for _ in range(depth):
        value = [value]
    return value


def test_json_text_nesting_and_cycles_as_json_dumps() -> None:
    """At the nesting where json's encoder (``json_text``'s other way) meets the recursion
    limit, ``json_text`` raises as it does (msgspec's encoder would go one level further), as
    for a circular value; a value nested less is written as ``json.dumps`` writes it."""
    def refused(depth: int) -> bool:
        try:
            "".join(json_text_module._encode_chunks(_nested(depth), 0))  # type: ignore[misc]
        except RecursionError:
            return True
        return False

    low, high = 1, 20_000  # the least depth json's encoder refuses, from here
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if refused(middle) else (middle + 1, high)
    circular: list[Any] = []
    circular.append(circular)
    for value in (_nested(low), circular):
        with pytest.raises(RecursionError):
            json_text(value)
    for depth in (150, 250):
        assert json_text(_nested(depth)) == json.dumps(_nested(depth), ensure_ascii=False)


def _src(data: bytes) -> Source:
    return Source(path="x.json", rel="x.json", data=data, sha256="0" * 64)


_LAZY = (None, "events")


def _read(data: bytes, lazy: tuple[str | None, ...]) -> tuple[str, list[str]]:
    """``load_json``'s document, its lazy arrays' items decoded (``item``), and its issues."""
    issues: list[Any] = []
    with mock.patch.object(jsonl, "LAZY_MIN_BYTES", 0):  # lazy whatever the size
        doc = load_json(_src(data), issues, lazy)
    if isinstance(doc, list) and None in lazy:
        doc = [item(v) for v in doc]
    elif isinstance(doc, dict):
        doc = {k: [item(v) for v in d] if k in lazy and isinstance(d, list) else d
               for k, d in doc.items()}
    return repr(doc), [str(i) for i in issues]


@settings(max_examples=100, deadline=None)
@given(st.lists(_VALUES, max_size=4), _VALUES, st.booleans(), st.booleans())
def test_a_lazy_document_reads_as_the_whole_one(events: list[Any], other: Any, wrapped: bool,
                                                 ascii_only: bool) -> None:
    """Read with its event list undecoded, item by item, a document gives the values (and for
    one that is not UTF-8 or not JSON as msgspec reads it, the issues) of the whole decode."""
    doc: Any = {"other": other, "events": events} if wrapped else events
    data = json.dumps(doc, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert _read(data, _LAZY) == _read(data, ())


@pytest.mark.parametrize("data", [
    b'[1, NaN]', b'[{"a": "\\ud800"}]', b'["\xff"]', b'{"events": ["\xed\xa0\x80"]}',
    b'{"events": [1e400, {"a": 1, "a": 2}], "x": 1, "events": [2]}', b'[1, 2', b'[1] x',
    b'{"events": [1,]}', b'[' * 5000 + b']' * 5000, b'{"events": 3}', b'"text"', b'',
    b'{"events": [[' + b'[' * 3000 + b']' * 3000 + b']]}', b'{"events": [{"a": Infinity}]}',
    b'[123456789012345678901234567890, -0.0, 0.1e-400]', b'{"x": [1], "events": []}',
])
def test_a_lazy_document_reads_as_the_whole_one_on_edge_cases(data: bytes) -> None:
    """Same values, same issues (a malformed document is said the same way), whatever msgspec
    refuses or reads otherwise."""
    assert _read(data, _LAZY) == _read(data, ())


def test_a_lazy_array_is_left_undecoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrays named are lists of undecoded items (the rest of the document decoded); an
    array not named, and a document under ``LAZY_MIN_BYTES``, hold values."""
    data = b'{"events": [{"id": 1}, [2]], "other": [{"id": 3}], "n": 4}'
    assert load_json(_src(data), [], ("events",))["events"] == [{"id": 1}, [2]]  # small
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", len(data))
    doc = load_json(_src(data), [], ("events",))
    assert [type(v) for v in doc["events"]] == [msgspec.Raw, msgspec.Raw]
    assert [item(v) for v in doc["events"]] == [{"id": 1}, [2]]
    assert (doc["other"], doc["n"]) == ([{"id": 3}], 4)
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", 0)
    top = load_json(_src(b' [{"id": 1}, 2] '), [], (None,))
    assert [type(v) for v in top] == [msgspec.Raw, msgspec.Raw]
    assert load_json(_src(b' [{"id": 1}, 2] '), [], ("events",)) == [{"id": 1}, 2]


def test_item_lines_are_found_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"steps": [\n {"a": 1},\n\n {"b": 2}\n]}'
    calls = []

    def spy(src: Source, key: str | None) -> tuple[list[tuple[int, Any]], int]:
        calls.append(key)
        return array_items(src, key)

    monkeypatch.setattr("replay.ingest.parsers.jsonl.array_items", spy)
    lines = ItemLines(_src(data), "steps", 2)
    assert calls == []
    assert (lines[1], lines.at(0)()) == (4, 2)
    assert calls == ["steps"]  # once
    assert [ItemLines(_src(data), "steps", 3)[k] for k in range(3)] == [0, 0, 0]
    known = ItemLines(_src(b"not read"), "steps", 1, found=[(7, {})])
    assert known[0] == 7


def test_mini_orphan_result_reports_its_line(tmp_path: Path) -> None:
    """The line of a tool result whose call is unknown, found after a whole-document decode."""
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
                {"role": "tool", "tool_call_id": "nope", "content": "out"}]
    text = json.dumps({"info": {"mini_version": "1.0.0"}, "messages": messages,
                       "trajectory_format": "mini-swe-agent-1"}, indent=1)
    path = tmp_path / "orphan.traj.json"
    path.write_text(text)
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    line = next(n for n, s in enumerate(text.split("\n")) if '"role": "tool"' in s)  # 0-based:
    # the 1-based line of the "{" just above
    assert [(i.line, "no earlier call" in i.reason) for i in parsed.issues] == [(line, True)]


def test_json_int_is_the_one_reading_of_a_recorded_count() -> None:
    """Every parser reads usage counts through counts.json_int: whole numbers (also 12.0 as some
    writers put them) are counts; booleans, strings, NaN, infinities and fractions are not."""
    from replay.ingest.parsers.counts import json_int

    assert [json_int(v) for v in (12, 0, 12.0, -3)] == [12, 0, 12, -3]  # sign checked later
    assert [json_int(v) for v in (True, False, "12", float("nan"), float("inf"), 1.5, None,
                                  [1], {"n": 1})] == [None] * 9


@given(st.one_of(st.integers(), st.integers(min_value=-2**70, max_value=2**70), st.booleans(),
                 st.sampled_from([2**40 - 1, 2**40, 2**40 + 1, 2**62]),
                 st.floats(allow_nan=True, allow_infinity=True), st.none(), st.text(max_size=3)))
def test_counts_read_every_value_as_their_definition(value: object) -> None:
    """``json_int`` and ``not_a_count`` check a plain int first (the common case, no call
    more); whatever the value, they answer as the definition does: a whole number of a
    float or an int that is no bool; a count is one from 0 to MAX_COUNT (2**40)."""
    from replay.ingest.parsers.counts import json_int, not_a_count

    whole = int(value) if isinstance(value, float) and value.is_integer() else \
        value if isinstance(value, int) and not isinstance(value, bool) else None
    assert json_int(value) == whole and type(json_int(value)) is type(whole)
    want = type(value).__name__ if whole is None else \
        None if 0 <= whole <= 1_099_511_627_776 else "negative or out of range"
    assert not_a_count(value) == want


@pytest.mark.parametrize("at", [0, 16382, 16383, 16384])
def test_utf8_check_reads_every_character(at: int) -> None:
    """A character anywhere is read whole; a cut or broken one anywhere is refused."""
    data = b"a" * at + "\u20ac\U0001f600".encode() + b"b"
    assert jsonl._is_utf8(data)
    assert not jsonl._is_utf8(data + b"\xe2\x82")  # a cut character at the very end
    assert not jsonl._is_utf8(data[:at + 1] + data[at + 2:])  # a broken one inside


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


_ODD = st.sampled_from([b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80",
                        b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff",
                        b"\x80", b"\xc2", b"\xe2\x82", b"\xf0\x9f\x98"])
"""Surrogates, overlong forms, past U+10FFFF, bytes never in UTF-8, cut sequences."""


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass")),
                          st.binary(max_size=4), _ODD), max_size=8).map(b"".join))
def test_utf8_check_refuses_what_decoding_refuses(data: bytes) -> None:
    """``_is_utf8`` (Arrow's validation) accepts exactly the bytes ``bytes.decode`` reads."""
    assert jsonl._is_utf8(data) == _utf8(data)
