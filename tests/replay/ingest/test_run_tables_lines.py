"""``run_tables.line_counts``: each text's lines from the text column's UTF-8 at once."""

from __future__ import annotations

import tracemalloc
from unittest.mock import patch

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from replay.ingest import run_tables
from replay.ingest.arrow_columns import column
from replay.ingest.run_tables import LINES_NUMPY_ROWS, line_counts

TEXT = st.text(st.sampled_from(["a", "\n", "\r", "é", "\u2028", "日", "😀", "\x85", " "]),
               max_size=12)
"""Newlines among characters whose UTF-8 is several bytes and other line breaks (which
``str.count("\\n")`` does not count, and neither may this)."""


def _expected(texts: list[str]) -> list[int]:
    return [t.count("\n") + 1 if t else 0 for t in texts]


@given(st.lists(TEXT, max_size=80))
def test_lines_as_counted_text_by_text(texts: list[str]) -> None:
    assert line_counts(column(texts, pa.string())).tolist() == _expected(texts)


@given(st.lists(TEXT, min_size=LINES_NUMPY_ROWS, max_size=80))
def test_lines_of_many_texts(texts: list[str]) -> None:  # (one numpy pass, not a count a text)
    assert line_counts(column(texts, pa.string())).tolist() == _expected(texts)


@given(st.lists(TEXT, min_size=1, max_size=80), st.data())
def test_a_slice_of_a_column_counts_its_own_texts(texts: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(texts)))
    stop = data.draw(st.integers(start, len(texts)))
    sliced = column(texts, pa.string()).slice(start, stop - start)
    assert line_counts(sliced).tolist() == _expected(texts[start:stop])


def test_empty_columns() -> None:
    assert line_counts(column([], pa.string())).tolist() == []
    assert line_counts(column(["", ""], pa.string())).tolist() == [0, 0]


@given(st.lists(TEXT, min_size=1, max_size=80), st.data())
def test_a_column_of_big_utf8_is_counted_in_place(texts: list[str], data: st.DataObject) -> None:
    """Past ``LINES_IN_PLACE_BYTES`` (here 0: every column) each string's newlines are counted
    by Arrow where they are: the same counts, a slice's own too."""
    start = data.draw(st.integers(0, len(texts)))
    stop = data.draw(st.integers(start, len(texts)))
    with patch.object(run_tables, "LINES_IN_PLACE_BYTES", 0):
        assert line_counts(column(texts, pa.string())).tolist() == _expected(texts)
        sliced = column(texts, pa.string()).slice(start, stop - start)
        assert line_counts(sliced).tolist() == _expected(texts[start:stop])


def test_a_long_text_is_not_copied_to_count_its_lines() -> None:
    """One text of 8 MiB (past ``LINES_IN_PLACE_BYTES``): Python allocates nothing near its
    size to count it (its UTF-8 was copied into ``bytes``, 1x the text)."""
    text = column(["a\n" * (1 << 22)], pa.string())
    tracemalloc.start()
    try:
        assert line_counts(text).tolist() == [(1 << 22) + 1]
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
