"""A table's column lists → the schema's Arrow table, each column converted once.

``schema_table(columns, name)`` makes table ``name`` of ``replay.ingest.schema`` from the
parsers' column lists (or arrays already made): each list converted once and let go, an array
of its field's type taken as it is, a table with no rows the schema's one empty table; the
string columns of a small messages table made together (``_joined_strings``); text that is not
valid Unicode repaired as tiktoken repairs it (``valid_unicode``).

Not here: counting tokens and building the four tables of runs (``replay.ingest.run_tables``),
a list → an array (``replay.ingest.arrow_columns``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from replay.ingest.arrow_columns import canonical_type, column, one_value, string_columns
from replay.ingest.schema import SCHEMAS


def schema_table(columns: dict[str, list[Any] | pa.Array], name: str,
                 repaired: list[int] | None = None) -> pa.Table:
    """The schema's table from column lists or arrays (each list converted once, then taken
    out of ``columns``: a list is let go as soon as its array is made; an array already of
    its field's type is taken as it is); with no rows, the one empty table of the schema
    (``_empty``: most files' events).  ``repaired[0]`` is added the strings stored with U+FFFD
    for what was not valid Unicode in them (``_array``)."""
    if not any(map(len, columns.values())):
        return _empty(name)
    return _converted(columns, name, repaired)


@functools.cache
def _empty(name: str) -> pa.Table:
    """Table ``name`` with no rows, made once (a table is immutable: every file without
    events shares it; making it costs a conversion a column)."""
    return _converted({col: [] for col, _ in fields(name)}, name)


LET_GO_ROWS = 1 << 12
"""A table of this many rows or more has each column's list let go as soon as its array is made
(``_converted``), not all held until every array is made; a smaller one is made by one list
comprehension (the fewer instructions)."""


def _converted(columns: dict[str, list[Any] | pa.Array], name: str,
               repaired: list[int] | None = None) -> pa.Table:
    of = fields(name)
    values = [columns.pop(col) for col, _ in of]
    if name in JOINED_TABLES:
        _joined_strings(values, name)
    if len(values[0]) == 1:  # (a one-row table's values: ``one_value`` straight away, most
        # of them arrays made before)
        arrays = [a if type(v) is list and len(v) == 1 and (a := one_value(
            v[0], type_)) is not None else _as(v, type_, repaired)
            for v, (_, type_) in zip(values, of)]
    elif len(values[0]) < LET_GO_ROWS:  # (a table of another size: no column is asked
        # whether it holds one value)
        arrays = [_as(v, type_, repaired) for v, (_, type_) in zip(values, of)]
    else:
        arrays = []
        for i, (_, type_) in enumerate(of):  # (each list let go once its array is made: a
            v, values[i] = values[i], None  # big table's lists not all beside its arrays)
            arrays.append(_as(v, type_, repaired))
            del v
    del values
    schema = SCHEMAS[name]
    for i, array in enumerate(arrays):
        if isinstance(array, pa.DictionaryArray):  # of the field's type (``_as``:
            # ``shared_texts``), the one array not of its field's type
            schema = schema.set(i, schema.field(i).with_type(array.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _as(values: list[Any] | pa.Array, type_: pa.DataType,
        repaired: list[int] | None = None) -> pa.Array:
    """``values`` as an array of ``type_``: a list converted, an array of another type cast,
    but for a dictionary of ``type_`` values (kept: ``tokenize``'s ``shared_text``)."""
    if not isinstance(values, pa.Array):
        return _array(values, type_, repaired)
    if values.type == type_ or (isinstance(values.type, pa.DictionaryType)
                                and values.type.value_type == type_):
        return values
    return values.cast(type_)


JOINED_TABLES = frozenset({"messages"})
"""Tables whose string columns of Python lists are made arrays together
(``arrow_columns.string_columns``): the messages, written only to Parquet (the footer's tables
are Arrow IPC streams, which such arrays would change)."""
JOINED_MAX_ROWS = 256
"""``_joined_strings`` joins the string columns of a table of at most this many rows: beyond,
what joining saves (a column's fixed steps) is less than the list of all their values costs."""


def _joined_strings(values: list[list[Any] | pa.Array], name: str) -> None:
    """The string columns of table ``name`` among ``values`` (its columns in order) that are
    Python lists, made arrays together, in place, when the table has 2 to ``JOINED_MAX_ROWS``
    rows (one row: ``column`` gives a value met before its array again) and every value is a
    valid string (else each is converted alone, as any column)."""
    at = [i for i in string_fields(name) if type(values[i]) is list]
    if len(at) < 2 or not 2 <= len(values[at[0]]) <= JOINED_MAX_ROWS:
        return
    made = string_columns([values[i] for i in at])
    if made is not None:
        for i, array in zip(at, made):
            values[i] = array


@functools.cache
def string_fields(name: str) -> tuple[int, ...]:
    """The positions of table ``name``'s ``string`` fields."""
    return tuple(i for i, (_, type_) in enumerate(fields(name)) if type_ == pa.string())


def column_of(values: list[Any], name: str, col: str,
              repaired: list[int] | None = None) -> pa.Array:
    """Column ``col`` of table ``name`` made from its list as ``schema_table`` makes it (which
    then takes it as it is): for a caller that lets a big list go before the others."""
    return _as(values, dict(fields(name))[col], repaired)


@functools.cache
def fields(name: str) -> tuple[tuple[str, pa.DataType], ...]:
    """(name, type) of each field of table ``name``'s schema: read once, not per table made
    (pyarrow makes a new Field object for each field read, 1.5 µs each); each type as
    ``arrow_columns.canonical_type`` (``column`` tells them apart by identity)."""
    return tuple((f.name, canonical_type(f.type)) for f in SCHEMAS[name])


def _array(values: Sequence[Any], type_: pa.DataType,
           repaired: list[int] | None = None) -> pa.Array:
    """``values`` as an Arrow array (``arrow_columns.column``: no pandas imported); strings
    that are not valid Unicode get U+FFFD (any string column may hold one), counted in
    ``repaired[0]``."""
    try:
        return column(values, type_)
    except UnicodeEncodeError:
        fixed = [valid_unicode(v) if isinstance(v, str) else v for v in values]
        if repaired is not None:
            repaired[0] += sum(1 for v, w in zip(values, fixed) if v != w)  # (a repair
            # changes a string: equal, it was valid)
        return column(fixed, type_)


def valid_unicode(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:  # the same repair tiktoken applies before encoding
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
