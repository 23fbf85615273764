"""How deep JSON may nest (``replay.ingest.parsers.json_depth``): one limit, ``MAX_DEPTH``,
for the generic decoder (``json_decode.loads``, ``iter_records``) and the typed one (``iter_typed``
with Claude Code's ``Line``) alike, whatever the caller's stack.  Before it, msgspec and
``json`` went as deep as Python's recursion limit left them room: 995-997 levels from a shallow
stack, a few hundred from a deep one."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers import json_depth
from replay.ingest.parsers.claude_code_records import decode, line_of
from replay.ingest.parsers.json_decode import loads
from replay.ingest.parsers.json_depth import MAX_DEPTH, nesting
from replay.ingest.parsers.jsonl import first_record, iter_records, iter_typed
from replay.ingest.parsers.source import Issue, Source

T = TypeVar("T")
_CALL_DEPTHS = (0, 400, 900)
"""Frames already on the stack when the parser is called (the recursion limit is 1000)."""


def _at_depth(frames: int, fn: Callable[[], T]) -> T:
    return _at_depth(frames - 1, fn) if frames else fn()


def _line(depth: int, key: str, kind: str = "[") -> bytes:
    """A Claude Code user line whose ``key`` holds arrays (or objects) nested so that the
    line has ``depth`` arrays and objects open at once (the line's own object counted)."""
    inner = depth - 1
    if kind == "[":
        value = "[" * inner + "]" * inner
    else:
        value = '{"k":' * inner + "1" + "}" * inner
    return f'{{"type":"user","uuid":"u1","{key}":{value}}}'.encode()


def _read(data: bytes, typed: bool) -> tuple[list[int], list[str]]:
    src = Source(path="t.jsonl", rel="t.jsonl", data=data, sha256="")
    issues: list[Issue] = []
    found = iter_typed(src, issues, decode, line_of) if typed else iter_records(src, issues)
    return [no for no, _ in found], [i.reason for i in issues]


def _value_depth(value: Any) -> int:
    """How many lists and dicts ``value`` has one inside another at most (without recursion:
    the values measured are as deep as the recursion limit)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth)
            todo.extend((child, depth + 1) for child in node)
    return deepest


@pytest.mark.parametrize("frames", _CALL_DEPTHS)
@pytest.mark.parametrize("kind", ["[", "{"])
def test_loads_refuses_exactly_past_the_limit_at_any_call_depth(frames: int, kind: str) -> None:
    under = _line(MAX_DEPTH, "message", kind)
    over = _line(MAX_DEPTH + 1, "message", kind)
    assert _value_depth(_at_depth(frames, lambda: loads(under))) == MAX_DEPTH
    with pytest.raises(RecursionError, match="nested over 1,000 levels"):
        _at_depth(frames, lambda: loads(over))


@pytest.mark.parametrize("frames", _CALL_DEPTHS)
@pytest.mark.parametrize("key", ["message", "data"])  # read by the parser; skipped by Line
@pytest.mark.parametrize("typed", [False, True])
def test_a_line_just_under_is_read_just_over_refused_on_every_path(
        frames: int, key: str, typed: bool) -> None:
    data = b"\n".join((_line(MAX_DEPTH - 1, key), _line(MAX_DEPTH, key),
                       _line(MAX_DEPTH + 1, key), b'{"type":"user"}'))
    lines, issues = _at_depth(frames, lambda: _read(data, typed))
    assert lines == [1, 2, 4]
    assert issues == ["JSON nested too deeply (over 1,000 levels) (line skipped)"]


@pytest.mark.parametrize("typed", [False, True])
def test_the_limit_holds_where_decoders_could_go_deeper(typed: bool) -> None:
    """With the recursion limit raised, msgspec and ``json`` decode past ``MAX_DEPTH``: each
    line is measured first, and the same lines are read and refused."""
    data = b"\n".join((_line(MAX_DEPTH, "data"), _line(MAX_DEPTH + 1, "data")))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(MAX_DEPTH * 3)
    try:
        assert json_depth.check_each()
        assert _read(data, typed) == (
            [1], ["JSON nested too deeply (over 1,000 levels) (line skipped)"])
        with pytest.raises(RecursionError):
            loads(_line(MAX_DEPTH + 1, "message"))
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("frames", _CALL_DEPTHS)
def test_format_sniffing_reads_the_first_line_at_any_call_depth(frames: int) -> None:
    head = _line(MAX_DEPTH - 1, "data") + b"\n"
    assert _at_depth(frames, lambda: first_record(head)) is not None
    assert _at_depth(frames, lambda: first_record(_line(MAX_DEPTH + 1, "data"))) is None


_TEXT = st.text(alphabet=st.sampled_from('ab"\\[]{}\n'), max_size=6)
_VALUES = st.recursive(st.none() | st.integers() | _TEXT, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=30)


@settings(max_examples=100, deadline=None)
@given(_VALUES, st.booleans())
def test_nesting_counts_arrays_and_objects_not_brackets_in_strings(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert nesting(text.encode()) == nesting(text) == _value_depth(value)



@settings(max_examples=60, deadline=None)
@given(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3), st.integers(0, 1 << 16),
       st.integers(0, 2 * MAX_DEPTH), st.sampled_from("[{"), st.booleans())
def test_too_deep_is_nesting_past_the_limit(levels: int, mix: int, n_quoted: int, quoted: str,
                                            as_bytes: bool) -> None:
    """Whether a text is too deep is its measured nesting past ``MAX_DEPTH``, also where it
    holds more opening brackets than that in a string, or nests lists and objects mixed
    (level ``i`` an object when bit ``i % 17`` of ``mix`` is set)."""
    inner = '"' + quoted * n_quoted + '"'
    for i in range(levels):
        inner = '{"k": ' + inner + "}" if mix >> (i % 17) & 1 else "[" + inner + "]"
    data: str | bytes = inner.encode() if as_bytes else inner
    assert json_depth.too_deep(data) == (nesting(data) > MAX_DEPTH) == (levels > MAX_DEPTH)
