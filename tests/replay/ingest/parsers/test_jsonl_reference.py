"""JSON Lines read against a reference reader written here with the json module (split on
newlines; a blank or whitespace line skipped; an object a record, numbered by its line; any
other line an issue at its number): ``iter_records`` and ``jsonl_list.record_list`` give its
records and say a problem on exactly its lines.  The properties beside this one compare two
ways of reading with each other; this one catches a bug both would share (a blank line
decoded, a line numbered one off)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers import jsonl, jsonl_list
from replay.ingest.parsers.jsonl import iter_records
from replay.ingest.parsers.jsonl_list import record_list
from replay.ingest.parsers.source import Issue, Source

_LINES = st.sampled_from([
    b'{"type":"user"}', b'{"a":1}', b"{}", b'{"a":[1,{"b":2}]}', '{"a":"\u00e9"}'.encode(),
    b"", b" ", b"\t", b"  \t ", b'{"a":', b"[1]", b'"text"', b"7", b'{"a":1} {"b":2}',
    b'{"a":NaN}', b'{"a":"\xff"}', b' {"a":4}', b'{"a":5} ', b"{not json"])


def _reference(data: bytes) -> tuple[list[tuple[int, Any]], list[int]]:
    """Records (line number, object) and the numbers of the lines that are no object."""
    records, bad = [], []
    for no, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:  # (UnicodeDecodeError included)
            bad.append(no)
            continue
        if isinstance(value, dict):
            records.append((no, value))
        else:
            bad.append(no)
    return records, bad


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINES, max_size=20), last_newline=st.booleans())
def test_records_and_problems_are_the_reference_readers(lines: list[bytes],
                                                        last_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    records, bad = _reference(data)
    with pytest.MonkeyPatch.context() as mp:  # (Hypothesis raises the recursion limit, which
        # makes every line measured first: the batches are read as a real ingest reads them)
        mp.setattr(jsonl, "check_each", lambda: False)
        mp.setattr(jsonl_list, "check_each", lambda: False)
        for read in (lambda s, i: list(iter_records(s, i)), record_list):
            issues: list[Issue] = []
            src = Source(path="f.jsonl", rel="f.jsonl", data=data, sha256="0" * 64)
            got = read(src, issues)
            assert [(no, json.loads(json.dumps(r))) for no, r in got] == records
            assert sorted({i.line for i in issues}) == bad
