"""``arrow_columns.column`` builds the arrays ``pa.array`` builds, without importing pandas."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.ingest.arrow_columns import (
    NUMPY_ROWS,
    all_false,
    column,
    repeated,
    string_columns,
)
from replay.ingest.arrow_read import int64_total, utf8_lengths
from replay.ingest.schema import SCHEMAS

INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False) | st.integers(-(2**53), 2**53)
TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # no lone surrogates
VALUES: dict[pa.DataType, st.SearchStrategy[Any]] = {
    pa.string(): TEXT,
    pa.int64(): INT64,
    pa.float64(): FLOATS,
    pa.bool_(): st.booleans(),
    pa.list_(pa.int64()): st.lists(st.none() | INT64, max_size=4),
    pa.list_(pa.string()): st.lists(st.none() | TEXT, max_size=4),
}


def test_every_column_type_of_the_store_is_built_here() -> None:
    types = {f.type for schema in SCHEMAS.values() for f in schema}
    assert types <= set(VALUES), types - set(VALUES)


@pytest.mark.parametrize("type_", list(VALUES), ids=str)
@given(data=st.data())
def test_same_array_as_pa_array(type_: pa.DataType, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.none() | VALUES[type_], max_size=40))
    built = column(values, type_)
    built.validate(full=True)
    expected = pa.array(values, type_)
    assert built.type == expected.type
    assert built.null_count == expected.null_count
    assert built.to_pylist() == expected.to_pylist()
    assert built.equals(expected)


@pytest.mark.parametrize("type_", list(VALUES), ids=str)
@given(data=st.data())
def test_same_array_as_pa_array_past_the_numpy_threshold(type_: pa.DataType,
                                                        data: st.DataObject) -> None:
    """From ``NUMPY_ROWS`` values on, integers and offsets are read through numpy: the same
    arrays (the values are drawn from a few, so a draw stays small)."""
    few = data.draw(st.lists(st.none() | VALUES[type_], min_size=1, max_size=5))
    values = data.draw(st.lists(st.sampled_from(few), min_size=NUMPY_ROWS,
                                max_size=NUMPY_ROWS + 40))
    built = column(values, type_)
    built.validate(full=True)
    assert built.equals(pa.array(values, type_))


def test_numpy_int64_values_are_taken_as_they_are() -> None:
    values = np.arange(-3, NUMPY_ROWS * 2, dtype=np.int64)
    assert column(values, pa.int64()).equals(pa.array(values.tolist(), pa.int64()))


@given(st.lists(st.none() | st.floats(allow_nan=False) | INT64, max_size=20))
def test_float64_refuses_what_pa_array_refuses_and_builds_what_it_builds(
        values: list[float | int | None]) -> None:
    try:
        expected = pa.array(values, pa.float64())
    except pa.ArrowInvalid:  # an integer that float64 would round
        with pytest.raises(ValueError):
            column(values, pa.float64())
    else:
        assert column(values, pa.float64()).equals(expected)


@pytest.mark.parametrize(("values", "type_"), [
    ([1, True], pa.int64()),
    (["a", 1], pa.string()),
    ([b"a"], pa.string()),
    ([1.5], pa.int64()),
    ([1], pa.bool_()),
    ([True], pa.float64()),
    (["a"], pa.list_(pa.string())),
    ([[1, "a"]], pa.list_(pa.int64())),
])
def test_a_value_of_another_type_is_refused(values: list[Any], type_: pa.DataType) -> None:
    with pytest.raises(TypeError):
        column(values, type_)


def test_errors_as_pa_array_raises_them() -> None:
    with pytest.raises(OverflowError):
        column([2**63], pa.int64())
    for big in (2**63, -(2**63) - 1):  # the numpy path
        with pytest.raises(OverflowError):
            column([0] * NUMPY_ROWS + [big], pa.int64())
    with pytest.raises(UnicodeEncodeError):
        column(["a\ud800"], pa.string())


@given(values=st.lists(st.none() | st.booleans() | INT64 | TEXT | FLOATS, max_size=12))
def test_one_value_columns_met_again_are_as_built_the_first_time(values: list[Any]) -> None:
    """A one-value column of a value met before is given again (``_ONES``): the same array
    as ``pa.array``'s, of the column's type, and a value of another type is still refused
    (True equals 1 and 1.0, but is no ``int64`` value)."""
    for _ in range(2):
        for value in values:
            for type_ in (pa.string(), pa.int64()):
                try:
                    expected = pa.array([value], type_)
                except (pa.ArrowException, TypeError, ValueError):
                    with pytest.raises((TypeError, ValueError, OverflowError)):
                        column([value], type_)
                    continue
                if type(value) is float:  # (pa.array takes a whole float as an int64)
                    continue
                built = column([value], type_)
                assert built.type == type_ and built.equals(expected)


def test_a_one_value_column_of_1_does_not_answer_for_true() -> None:
    assert column([1], pa.int64()).to_pylist() == [1]
    with pytest.raises(TypeError):
        column([True], pa.int64())
    assert column(["1"], pa.string()).to_pylist() == ["1"]
    assert column([None], pa.string()).type == pa.string()
    assert column([None], pa.int64()).type == pa.int64()


@pytest.mark.parametrize("value", [2**53 + 1, 2**53 + 2, -(2**53) - 1, 2**64])
def test_an_integer_no_float64_holds_exactly_is_refused_as_pa_array_refuses_it(
        value: int) -> None:
    with pytest.raises(pa.ArrowInvalid):
        pa.array([value], pa.float64())
    with pytest.raises(ValueError):  # not rounded to the nearest float64, silently
        column([1.5, value], pa.float64())


def test_ingesting_imports_no_pandas(tmp_path: Any) -> None:
    """The point of the module: an ingest process never imports pandas (pyarrow's pa.array
    would, on its first call)."""
    log = tmp_path / "s.jsonl"
    log.write_text('{"type": "user", "sessionId": "s", "uuid": "u1", "message": {"role": '
                   '"user", "content": "hi"}}\n{"type": "assistant", "sessionId": "s", "uuid": '
                   '"u2", "parentUuid": "u1", "message": {"id": "m", "role": "assistant", '
                   '"content": [{"type": "text", "text": "hello"}], "usage": {"input_tokens": '
                   '3, "output_tokens": 1}}}\n')
    code = ("import sys; from pathlib import Path; from replay.ingest.batch import ingest; "
            f"r = ingest([Path({str(log)!r})], Path({str(tmp_path / 'ds')!r}), jobs=1); "
            "assert r.parsed and not r.failed, r; print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


@given(st.lists(st.none() | TEXT, max_size=40), st.integers(0, 40), st.integers(0, 40))
def test_utf8_lengths_are_binary_lengths(values: list[str | None], start: int, size: int) -> None:
    """Each value's UTF-8 bytes read from a string array's offsets, a slice's too (a null: 0),
    are ``pc.binary_length``'s."""
    import pyarrow.compute as pc

    array = pa.array(values, pa.string()).slice(start, size)
    expected = [n or 0 for n in pc.binary_length(array).to_pylist()]
    assert utf8_lengths(array).tolist() == expected
    assert utf8_lengths(array).dtype == np.int64


def test_utf8_lengths_of_a_null_spanning_bytes_is_0() -> None:
    """A null's offsets may span bytes (Arrow allows it: a crafted file's column)."""
    from array import array

    offsets = pa.py_buffer(array("i", [0, 2, 5, 6]))
    valid = pa.py_buffer(bytes([0b101]))
    text = pa.Array.from_buffers(pa.string(), 3, [valid, offsets, pa.py_buffer(b"abcdef")], 1)
    assert utf8_lengths(text).tolist() == [2, 0, 1]
    assert utf8_lengths(text.slice(1)).tolist() == [0, 1]


@given(st.lists(st.lists(st.none() | st.integers(-(2**40), 2**40), max_size=NUMPY_ROWS + 20),
                max_size=4),
       st.integers(0, NUMPY_ROWS + 20), st.integers(0, NUMPY_ROWS + 20))
def test_int64_total_is_pc_sum(chunks: list[list[int | None]], start: int, size: int) -> None:
    """The sum of an int64 column read from its buffers, of chunks, slices, nulls (a null's slot
    holding a value) and all-null chunks, is ``pc.sum``'s (None -> 0), below ``NUMPY_ROWS``
    values (summed by Python) and from it on (by numpy)."""
    import pyarrow.compute as pc

    arrays = [pa.array([7 if v is None else v for v in values], pa.int64()) for values in chunks]
    arrays = [pa.Array.from_buffers(pa.int64(), len(a), [pa.array([v is not None for v in values
                                                                    ]).buffers()[1],
                                                         a.buffers()[1]])
              if None in values else a for a, values in zip(arrays, chunks)]
    column_ = pa.chunked_array(arrays, pa.int64()).slice(start, size)
    assert int64_total(column_) == (pc.sum(column_).as_py() or 0)
    for chunk in column_.chunks:
        assert int64_total(chunk) == (pc.sum(chunk).as_py() or 0)
    assert int64_total(pa.nulls(3, pa.int64())) == 0


@pytest.mark.parametrize("n", [1, NUMPY_ROWS - 1, NUMPY_ROWS, 3 * NUMPY_ROWS])
def test_int64_total_either_side_of_numpy(n: int) -> None:
    values = [(-1) ** k * k * 1_000_003 for k in range(n)]
    array = column(values, pa.int64())
    assert int64_total(array) == sum(values)
    assert int64_total(array.slice(1)) == sum(values[1:])
    assert int64_total(pa.chunked_array([array])) == sum(values)


@given(st.lists(st.tuples(st.text(), st.integers(0, 2 * NUMPY_ROWS)), max_size=4))
def test_repeated_is_the_column_of_every_row(runs: list[tuple[str, int]]) -> None:
    """A run id on each of its rows (``run_tables._concat``): the array ``column`` makes of
    the list of every row's value, buffer for buffer; None for a string that is not valid
    Unicode (that list is then converted, and repaired, as any column is)."""
    rows = [value for value, k in runs for _ in range(k)]
    made = repeated([value for value, _ in runs], [k for _, k in runs])
    try:
        expected = column(rows, pa.string())
    except UnicodeEncodeError:
        assert made is None or not rows
        return
    assert made is not None
    assert made.equals(expected)
    assert [b.to_pybytes() if b else None for b in made.buffers()] == \
        [b.to_pybytes() if b else None for b in expected.buffers()]


def test_repeated_takes_strings_only() -> None:
    assert repeated(["a", None], [1, 2]) is None
    assert repeated([1], [3]) is None


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, NUMPY_ROWS, 1000])
def test_all_false_is_the_column_of_falses(n: int) -> None:
    made, expected = all_false(n), column([False] * n, pa.bool_())
    assert made.equals(expected) and made.null_count == 0
    assert [b.to_pybytes() if b else None for b in made.buffers()] == \
        [b.to_pybytes() if b else None for b in expected.buffers()]


@given(st.lists(st.lists(TEXT, max_size=6), max_size=5))
def test_string_columns_are_each_lists_column(lists: list[list[str]]) -> None:
    made = string_columns(lists)
    assert made is not None and len(made) == len(lists)
    for array, values in zip(made, lists):
        array.validate(full=True)
        assert array.equals(column(values, pa.string()))
        assert array.to_pylist() == values


@pytest.mark.parametrize("bad", [None, 1, b"x", "\ud800"], ids=repr)
def test_string_columns_leave_a_list_column_would_not_take_as_strings_to_it(bad: Any) -> None:
    """None when a value is a null, not a string, or not valid Unicode: each list is then
    converted alone (``column`` makes the nulls, raises, or the caller repairs the text)."""
    assert string_columns([["a", "b"], ["c", bad]]) is None
