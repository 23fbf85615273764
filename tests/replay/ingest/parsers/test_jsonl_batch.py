"""Lines decoded a batch at a time (``jsonl_batch.plain_lines``, ``iter_typed(lines=)``) are
the lines, values, issues and coverage read one at a time, whatever the lines hold: blank
lines, two values on a line, a value going on over a newline, carriage returns, lines that do
not decode, batches ending anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.ingest.parsers import jsonl, jsonl_batch
from replay.ingest.parsers.jsonl import iter_typed
from replay.ingest.parsers.source import Issue
from tests.replay.ingest.parsers.parsed_rows import stand_in_source

SAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample" / "claude-code"


class _Line(msgspec.Struct):
    type: Any = None
    a: Any = None


_DECODER = msgspec.json.Decoder(_Line)


def _of_dict(record: dict[str, Any]) -> _Line:
    return _Line(**{k: v for k, v in record.items() if k in _Line.__struct_fields__})


def _read(data: bytes, batched: bool) -> tuple[list[tuple[int, Any]], list[str], Any]:
    src, issues = stand_in_source("t/s.jsonl", data), list[Issue]()
    got = list(iter_typed(src, issues, _DECODER.decode, _of_dict,
                          lines=_DECODER.decode_lines if batched else None))
    return got, [str(i) for i in issues], src.coverage.by_type()


_PLAIN = st.sampled_from(['{"type":"user"}', '{"a":1}', "{}", '{"a":[1,2]}', '{"a":"\u00e9"}'])
_TRICKY = st.sampled_from([
    '{"a":1}{"a":2}', '{"a":1} {"a":2}', "", " ", "\t", '{"a":', "1}", '{"a":{"b":1}', "}",
    '{"a":3}\r', "[1]", ',"a":2}', '{"type":7}', '{"a":NaN}', '{"a":"\\ud800"}', ' {"a":4}',
    '{"a":5} '])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PLAIN | _TRICKY, max_size=8), st.integers(1, 48), st.booleans())
@example(['{"a":1}{"a":2}', "", '{"type":"user"}'], 48, False)  # (a blank line evens the count)
@example(['{"a":1}{"a":2}', '{"a":', "1}"], 48, False)  # (a value over a newline evens it)
@example(['{"a":{"b":1}', '}', '{"a":1}{"a":2}'], 48, True)
def test_batches_read_as_lines_one_at_a_time(parts: list[str], batch_bytes: int,
                                             newline_at_end: bool) -> None:
    data = ("\n".join(parts) + ("\n" if newline_at_end else "")).encode("utf-8", "surrogatepass")
    if not data:
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonl_batch, "BATCH_BYTES", batch_bytes)
        mp.setattr(jsonl, "check_each", lambda: False)  # (hypothesis raises the recursion
        # limit, where every line is measured and read alone: ``iter_typed``)
        assert _read(data, batched=True) == _read(data, batched=False)


def test_plain_lines_are_read_a_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The samples' lines are all plain: every one is read in a batch (none decoded alone), so
    the test above compares the batch path, not the line path with itself."""
    data = (SAMPLES / "tool_heavy.jsonl").read_bytes()
    batches: list[int] = []

    def counted(view: memoryview) -> list[_Line]:
        values = _DECODER.decode_lines(view)
        batches.append(len(values))
        return values

    def alone(raw: bytes) -> _Line:
        raise AssertionError("a line decoded alone")

    monkeypatch.setattr(jsonl_batch, "BATCH_BYTES", 4096)
    src = stand_in_source("t/s.jsonl", data)
    got = list(iter_typed(src, [], alone, _of_dict, lines=counted))
    assert len(batches) > 1 and sum(batches) == len(got) == data.count(b"\n")
    assert [no for no, _ in got] == list(range(1, len(got) + 1))
