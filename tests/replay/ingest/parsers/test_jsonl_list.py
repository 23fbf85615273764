"""Every record of a JSON Lines file at once (``jsonl_list.record_list``): the pairs and issues
``iter_records`` gives, whichever way the file is read."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from replay.ingest.parsers import jsonl_list
from replay.ingest.parsers.jsonl import iter_records
from replay.ingest.parsers.jsonl_list import record_list
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

_FILES = {
    "plain": b'{"a":1}\n{"b":[1,2]}\n',
    "no newline at the end": b'{"a":1}\n{"b":2}',
    "crlf": b'{"a":1}\r\n{"b":2}\r\n',
    "crlf, a line of two carriage returns": b'{"a":1}\r\r\n{"b":2}\r\n',
    "crlf, a carriage return alone between lines": b'{"a":1}\r\n\r\n{"b":2}\r\n',
    "a carriage return between two values": b'{"a":1}\r{"b":2}\r\n',
    "blank line": b'{"a":1}\n\n{"b":2}\n',
    "blank line at the end": b'{"a":1}\n\n',
    "spaces only": b'{"a":1}\n   \n{"b":2}\n',
    "not an object": b'{"a":1}\n[1]\n{"b":2}\n',
    "malformed": b'{"a":1}\n{"b":\n{"c":3}\n',
    "two values on a line": b'{"a":1} {"b":2}\n{"c":3}\n',
    "NaN (json reads it)": b'{"a":NaN}\n{"b":2}\n',
    "incomplete last line": b'{"a":1}\n{"b":2',
    "empty": b"",
    "newline only": b"\n",
}


def _both(data: bytes) -> tuple[tuple[list[tuple[int, object]], list[Issue]], ...]:
    got = []
    for read in (record_list, lambda s, i: list(iter_records(s, i))):
        issues: list[Issue] = []
        src = Source(path="f.jsonl", rel="f.jsonl", data=data, sha256="0")
        got.append((read(src, issues), issues, src.coverage.by_type()))
    return tuple(got)


@pytest.mark.parametrize("data", list(_FILES.values()), ids=list(_FILES))
def test_the_same_records_and_issues_as_iter_records(data: bytes) -> None:
    listed, read = _both(data)
    assert listed == read


def test_a_file_of_objects_is_not_read_a_line_at_a_time() -> None:
    with mock.patch.object(jsonl_list, "iter_records", side_effect=AssertionError):
        assert record_list(Source(path="f", rel="f", data=_FILES["plain"], sha256="0"), []) \
            == [(1, {"a": 1}), (2, {"b": [1, 2]})]


def test_a_file_of_objects_ending_in_crlf_is_not_either() -> None:
    """A carriage return before each newline (a file written on Windows) is read a batch at a
    time too: the same pairs as the file without them."""
    with mock.patch.object(jsonl_list, "iter_records", side_effect=AssertionError):
        for data in (_FILES["crlf"], _FILES["crlf"][:-2], _FILES["crlf"][:-1]):
            assert record_list(Source(path="f", rel="f", data=data, sha256="0"), []) \
                == [(1, {"a": 1}), (2, {"b": 2})]


def test_a_file_with_a_line_that_is_no_object_is() -> None:
    src = Source(path="f", rel="f", data=_FILES["not an object"], sha256="0")
    with mock.patch.object(jsonl_list, "iter_records", wraps=iter_records) as read:
        record_list(src, [])
    assert read.call_count == 1


@pytest.mark.parametrize("path", sorted((FIXTURES / "codex").rglob("*.jsonl"))
                         + sorted((FIXTURES / "codex_catalog").glob("*.jsonl")),
                         ids=lambda p: p.name)
def test_codex_fixtures_read_the_same(path: Path) -> None:
    listed, read = _both(path.read_bytes())
    assert listed == read
