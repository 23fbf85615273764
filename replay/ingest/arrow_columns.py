"""Python value lists → Arrow arrays of the store's column types, without ``pa.array``.

``pa.array`` imports pandas the first time it is called in a process (pyarrow asks whether the
list is a pandas object): about 0.2-0.3 s of CPU and 40 MB in every ingest process, for columns
that only ever hold plain Python values.  ``column`` builds the same arrays from buffers for the
types the store's tables use (``replay.ingest.schema``): ``string``, ``int64``, ``float64``,
``bool`` and lists of ``int64`` or ``string``, with ``None`` as null (an ``int64`` column may
also come as an ``array('q')`` or a numpy ``int64`` array, taken as it is); any other type is
handed to ``pa.array``.

It takes exactly the values of the column's type (``bool`` is no ``int64``, an ``int`` is a
``float64``, a tuple is a list) and raises ``TypeError`` for any other value, ``OverflowError``
for an integer beyond ``int64``, ``ValueError`` for an integer a ``float64`` would round (beyond
2**53), and ``UnicodeEncodeError`` for a string that is not valid Unicode (a lone surrogate),
as ``pa.array`` does; the arrays equal ``pa.array``'s (a property
test checks it).

Not here: which columns a table has (``replay.ingest.schema``), the tables
(``replay.ingest.run_tables``), the other way, arrays read back
(``replay.ingest.arrow_read``), integers packed by ``struct`` (``replay.packed_values``).
"""

from __future__ import annotations

import functools
import struct
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from typing import Any

import numpy as np
import pyarrow as pa

from replay.packed_values import int64s

_NONE = type(None)
_STRING, _INT64, _FLOAT64, _BOOL = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_ACCEPTED: dict[pa.DataType, frozenset[type]] = {
    _STRING: frozenset((str, _NONE)),
    _INT64: frozenset((int, _NONE)),
    _FLOAT64: frozenset((float, int, _NONE)),
    _BOOL: frozenset((bool, _NONE)),
}
_ZERO: dict[pa.DataType, Any] = {_STRING: "", _INT64: 0, _FLOAT64: 0.0, _BOOL: False}
_TYPES = (_STRING, _INT64, _FLOAT64, _BOOL)
_INT64_ID = _INT64.id
_ACCEPTED_OF = {id(t): accepted for t, accepted in _ACCEPTED.items()}
_ZERO_OF = {id(t): zero for t, zero in _ZERO.items()}
"""``_ACCEPTED`` and ``_ZERO`` by the id of a type of ``_TYPES`` (a pyarrow type hashes its
name: ~1,000 instructions a look-up)."""
_LISTS = frozenset((list, tuple, _NONE))
_DIGITS = bytes.maketrans(b"\x00\x01", b"01")
_EXACT = 2**53  # the largest magnitude up to which every integer is a float64
_INT32_MAX = 2**31 - 1
NUMPY_ROWS = 64
"""From this many values on, a column's integers and its strings' lengths are packed into one
buffer (``int64s``; the offsets one numpy ``cumsum``) instead of an ``array``, whose
constructor parses each value as a call's argument (~200 instructions a value, a third of a
string column's cost); below it, numpy's cost a call is more than it saves."""


def column(values: Sequence[Any], type_: pa.DataType, *, wide: bool = False) -> pa.Array:
    """``values`` as an Arrow array of ``type_`` (``None``: null), equal to
    ``pa.array(values, type_)``.  ``wide``: strings that are often not ASCII (message texts:
    see ``_strings``).

    Raises:
        TypeError: a value that is not of ``type_``.
        OverflowError: an integer beyond ``int64``.
        ValueError: an integer of a ``float64`` column that it would round.
        UnicodeEncodeError: a string that is not valid Unicode.
    """
    type_ = canonical_type(type_)  # (then told apart by identity below)
    if type_ is _INT64 and (type(values) is array and values.typecode == "q"
                            or isinstance(values, np.ndarray) and values.dtype == np.int64
                            and values.ndim == 1 and values.flags.c_contiguous):
        return pa.Array.from_buffers(_INT64, len(values), [None, pa.py_buffer(values)], 0)
    if len(values) == 1 and (one := one_value(values[0], type_)) is not None:
        return one
    if type_ is _STRING:
        try:  # the common case first: only strings (_strings refuses anything else)
            return _strings(values, None, 0, wide)
        except TypeError:
            pass
    accepted = _ACCEPTED_OF.get(id(type_))  # (the id of a live object: no other's)
    if accepted is None:
        if isinstance(type_, pa.ListType) and type_.value_type in (_INT64, _STRING):
            return _list(values, type_)
        return pa.array(values, type_)  # no column of the store has it
    found = set(map(type, values))
    if not found <= accepted:
        wrong = next(v for v in values if type(v) not in accepted)
        raise TypeError(f"expected {type_} values, got {type(wrong).__name__}: {wrong!r:.80}")
    n = len(values)
    valid, nulls = None, 0
    if _NONE in found:
        if len(found) == 1:  # (many of a file's columns: a field its format does not have)
            return null_column(n, type_)
        valid, nulls = _validity(values)
        fill = _ZERO_OF[id(type_)]  # the buffers hold a slot per row: a null's a zero value
        values = [fill if v is None else v for v in values]
    if type_ is _STRING:
        return _strings(values, valid, nulls, wide)
    if type_ is _INT64:  # (OverflowError: an integer beyond int64, from either)
        if n < NUMPY_ROWS:
            ints: bytes | array[int] | np.ndarray = array("q", values)
        else:
            try:
                ints = int64s(values, n)
            except struct.error:  # (an integer beyond int64: numpy's OverflowError, as before)
                ints = np.fromiter(values, np.int64, n)
        return pa.Array.from_buffers(_INT64, n, [valid, pa.py_buffer(ints)], nulls)
    if type_ is _FLOAT64:
        if int in found:  # pa.array refuses an integer a float64 would round; so does this
            inexact = next((v for v in values if type(v) is int and abs(v) > _EXACT), None)
            if inexact is not None:
                raise ValueError(f"integer {inexact} has no exact float64 value")
        return pa.Array.from_buffers(_FLOAT64, n, [valid, pa.py_buffer(array("d", values))],
                                     nulls)
    return pa.Array.from_buffers(_BOOL, n, [valid, _bits(bytes(values))], nulls)


def canonical_type(type_: pa.DataType) -> pa.DataType:
    """``type_`` as this module's object of it when it is a ``string``, ``int64``, ``float64``
    or ``bool`` type (``column`` then tells them apart by identity: ``==`` of two pyarrow types
    costs ~1,300 instructions, and a schema's field gives a new type object each time it is
    read); any other type as it is."""
    for known in _TYPES:
        if type_ is known:
            return known
    for known in _TYPES:
        if type_ == known:
            return known
    return type_


def repeated(values: Sequence[Any], counts: Sequence[int]) -> pa.Array | None:
    """``column`` of each of ``values`` repeated its count of times, in order, as a ``string``
    column (a run's id on each of its rows), made from each value's UTF-8 repeated and numpy's
    offsets, not from a list of every row's value (for ``NUMPY_ROWS`` rows or more: below,
    that list costs less); None when a value is not a string or not valid Unicode (``column``
    of that list then raises or repairs as it does for any column).

    Raises:
        OverflowError: the values' total is past 2 GiB (as ``column``).
    """
    if not all(type(v) is str for v in values):
        return None
    try:
        encoded = [v.encode("utf-8") for v in values]
    except UnicodeEncodeError:
        return None
    n = sum(counts)
    ends = np.zeros(n + 1, np.int64)
    np.cumsum(np.repeat(np.fromiter(map(len, encoded), np.int64, len(encoded)), counts),
              out=ends[1:])
    if ends[-1] > _INT32_MAX:
        raise OverflowError(f"{ends[-1]:,} bytes in one column: past an int32 offset")
    data = b"".join([e * k for e, k in zip(encoded, counts)])
    return pa.Array.from_buffers(_STRING, n, [None, pa.py_buffer(ends.astype(np.int32)),
                                              pa.py_buffer(data)], 0)


def string_columns(lists: Sequence[Sequence[Any]]) -> list[pa.Array] | None:
    """``column(values, pa.string())`` of each of ``lists``, made as one column of them all and
    sliced back into an array a list: ``column``'s steps a column (its checks, its buffers, the
    array: ~2.5 µs) once for several (a small file's messages: nine string columns of a few
    rows).  None when a value is not a string, a string is not valid Unicode or their bytes are
    past 2 GiB: convert each list with ``column`` then (it makes the nulls, raises, or is
    repaired, as for any column).

    The arrays share one array's buffers, each from its own offset: right for a Parquet writer,
    which reads their values, not for an Arrow IPC stream, which may write bytes beyond a slice's
    own (its buffers' padding from the next slice's)."""
    try:
        joined = _strings(list(chain.from_iterable(lists)), None, 0)
    except (TypeError, UnicodeEncodeError, OverflowError):
        return None
    out, start = [], 0
    for values in lists:
        out.append(joined.slice(start, len(values)))
        start += len(values)
    return out


def all_false(n: int) -> pa.Array:
    """``column([False] * n, pa.bool_())`` from a zeroed bitmap, without the list."""
    return pa.Array.from_buffers(_BOOL, n, [None, pa.py_buffer(bytes((n + 7) // 8))], 0)


def true_at(rows: Iterable[int], n: int) -> pa.Array:
    """``column([i in rows for i in range(n)], pa.bool_())`` (``rows``: indices below ``n``)
    from a bitmap set at ``rows``, without a value a row."""
    flags = np.zeros(n, np.bool_)
    flags[list(rows)] = True
    return pa.Array.from_buffers(_BOOL, n, [None, pa.py_buffer(
        np.packbits(flags, bitorder="little").tobytes())], 0)


def int64_values(values: list[int]) -> list[int] | np.ndarray:
    """A list of integers this program made (lengths, counts: never a bool or another type) as
    an int64 array when it holds ``NUMPY_ROWS`` or more (``column`` then takes it as it is: no
    type test a value), else as it is, and as it is too when one is beyond int64 (``column``
    then raises for it)."""
    if len(values) < NUMPY_ROWS:
        return values
    try:
        return np.frombuffer(int64s(values, len(values)), np.int64)
    except struct.error:
        return values


def one_value(value: Any, type_: pa.DataType) -> pa.Array | None:
    """``column([value], type_)`` of a string or an integer (or None) of a ``string`` or
    ``int64`` column (``type_``: ``canonical_type``'s) in fewer steps (a one-row table's columns: a file's ``runs``, most small
    files' ``requests``), the array of a value met before given again (``_ONES``: an array is
    immutable; most of a file's one-row columns hold a value of the file before, a format's
    name, a count, None: a dict look-up instead of ~18,000 instructions of buffers); None for
    any other value or type, and for a string that is not valid Unicode (``column`` then
    takes it as it takes any list: it raises).

    Raises:
        OverflowError: an integer beyond ``int64`` (as ``column``).
    """
    kind = type(value)
    if kind is not str and kind is not int and value is not None:
        return None
    string = type_ is _STRING  # (``type_``: ``canonical_type``'s)
    if not string and type_ is not _INT64:
        return None
    key = (string, kind, value)  # (the kind: True == 1, but no bool is taken here)
    made = _ONES.get(key)
    if made is not None:
        return made
    if kind is str and string:
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        made = pa.Array.from_buffers(_STRING, 1, [None, pa.py_buffer(array("i", (0, len(data)))),
                                                  pa.py_buffer(data)], 0)
    elif kind is int and not string:
        made = pa.Array.from_buffers(_INT64, 1, [None, pa.py_buffer(array("q", (value,)))], 0)
    elif value is None:
        made = null_column(1, type_)
    else:
        return None
    if kind is not str or len(value) <= _ONES_MAX_CHARS:
        if len(_ONES) >= _ONES_MAX:
            _ONES.clear()
        _ONES[key] = made
    return made


_ONES: dict[tuple[bool, type, Any], pa.Array] = {}
"""(a ``string`` column?, the value's type, the value) -> ``one_value``'s array of it, for values
of up to ``_ONES_MAX_CHARS`` characters; emptied when it holds ``_ONES_MAX``."""
_ONES_MAX = 4096
_ONES_MAX_CHARS = 256


def null_column(n: int, type_: pa.DataType) -> pa.Array:
    """``pa.nulls(n, type_)``, made once for each type and length up to ``NUMPY_ROWS`` (an
    array is immutable: a file's columns of a field its format does not have share it, ~1.4 µs
    a column less; of a type of ``_TYPES``, found by its id: an ``lru_cache`` hashes the type's
    name)."""
    if n > NUMPY_ROWS:
        return pa.nulls(n, type_)
    key = (n, id(type_))  # (the id of a live object: no other's)
    made = _NULLS.get(key)
    if made is None:
        made = _small_nulls(n, type_)
        if any(type_ is known for known in _TYPES):
            _NULLS[key] = made
    return made


_NULLS: dict[tuple[int, int], pa.Array] = {}
"""(rows, the id of a type of ``_TYPES``) -> ``null_column`` of them (at most ``NUMPY_ROWS``
rows of four types)."""


@functools.lru_cache(maxsize=256)
def _small_nulls(n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type_)


def _strings(values: Sequence[str], valid: pa.Buffer | None, nulls: int,
             wide: bool = False) -> pa.Array:
    """A string column: one UTF-8 buffer of every value and the offsets of each value's bytes.
    ASCII values are joined and encoded at once (one copy of the text, no bytes a value).
    Whether they are is told by their join (``str.isascii`` of it: constant time), made first
    unless ``wide``: where most columns hold ASCII (ids, names, paths, timestamps) that spares
    a test a value; where they are often not (``wide``: message texts, where one non-ASCII
    character makes the join a wider copy of the whole column, thrown away), each value is
    tested first.

    Raises:
        TypeError: a value is not a string.
    """
    data: bytes | None = None
    if wide:
        if all(map(str.isascii, values)):  # (constant time per string)
            data = "".join(values).encode("ascii")
    else:
        joined = "".join(values)  # (TypeError: a value that is no string, as ``isascii``)
        if joined.isascii():
            data = joined.encode("ascii")
        del joined
    if data is not None:
        lengths: Iterable[int] = map(len, values)
    else:
        encoded = [str.encode(v, "utf-8") for v in values]  # UnicodeEncodeError: a surrogate
        data = b"".join(encoded)
        lengths = map(len, encoded)
    offsets = _offsets(lengths, len(values))
    return pa.Array.from_buffers(_STRING, len(values), [valid, pa.py_buffer(offsets),
                                                        pa.py_buffer(data)], nulls)


def _offsets(lengths: Iterable[int], n: int) -> array[int] | np.ndarray:
    """The int32 offsets of ``n`` values of these lengths (0, then each value's end).

    Raises:
        OverflowError: the values' total is past 2 GiB.
    """
    if n < NUMPY_ROWS:
        return array("i", [*accumulate(lengths, initial=0)])
    ends = np.zeros(n + 1, np.int64)
    np.cumsum(np.frombuffer(int64s(lengths, n), np.int64), out=ends[1:])
    if ends[-1] > _INT32_MAX:
        raise OverflowError(f"{ends[-1]:,} bytes in one column: past an int32 offset")
    return ends.astype(np.int32)


def _list(values: Sequence[Any], type_: pa.ListType) -> pa.Array:
    """A list column: offsets into one child column of all the lists' items."""
    found = set(map(type, values))
    if not found <= _LISTS:
        wrong = next(v for v in values if type(v) not in _LISTS)
        raise TypeError(f"expected {type_} values, got {type(wrong).__name__}: {wrong!r:.80}")
    n = len(values)
    valid, nulls = _validity(values) if _NONE in found else (None, 0)
    lists = [() if v is None else v for v in values] if nulls else values
    offsets = _offsets(map(len, lists), n)
    items = column(list(chain.from_iterable(lists)), type_.value_type)
    return pa.Array.from_buffers(type_, n, [valid, pa.py_buffer(offsets)], nulls,
                                 children=[items])


def _validity(values: Sequence[Any]) -> tuple[pa.Buffer, int]:
    """The validity bitmap of ``values`` (bit i set: row i is not null) and the number of
    nulls."""
    flags = bytes([v is not None for v in values])
    return _bits(flags), len(flags) - sum(flags)


def _bits(flags: bytes) -> pa.Buffer:
    """One byte 0 or 1 per row → Arrow's bitmap (row i: bit i, least significant first)."""
    if not flags:
        return pa.py_buffer(b"")
    digits = flags[::-1].translate(_DIGITS)  # b"0"/b"1", the last row first
    return pa.py_buffer(int(digits, 2).to_bytes((len(flags) + 7) // 8, "little"))
