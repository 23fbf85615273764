"""``entry_file.row_groups``' text bytes: a plain string column's from its first and last offsets,
any other (nulls, a dictionary) value by value; the same total either way."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from replay.ingest import entry_file

TEXT = st.text(st.sampled_from(["a", "é", "日", "😀", "\n"]), max_size=6)


@given(st.lists(st.lists(st.none() | TEXT, max_size=8), min_size=1, max_size=3),
       st.integers(0, 30), st.integers(0, 30), st.booleans())
def test_text_bytes_are_the_values_utf8_bytes(chunks: list[list[str | None]], start: int,
                                              size: int, dictionary: bool) -> None:
    if dictionary:  # (a dictionary's null row is counted as its first value's: never made)
        chunks = [[t for t in c if t is not None] for c in chunks]
    column = pa.chunked_array([pa.array(c, pa.string()) for c in chunks], pa.string())
    column = column.slice(start, size)
    expected = sum(n or 0 for n in pc.binary_length(column).to_pylist())
    if dictionary:
        column = pc.dictionary_encode(column)
    assert entry_file._text_bytes(column) == expected
    for chunk in column.chunks:
        assert entry_file._text_bytes(chunk) == sum(
            n or 0 for n in pc.binary_length(chunk.cast(pa.string())).to_pylist())
