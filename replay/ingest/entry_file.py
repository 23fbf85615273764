"""One store entry as one Parquet file: the four tables of a source file's runs ↔ bytes.

The file's rows are the ``messages`` table (one row per content block, the bulk of an entry;
one row group, or row groups of at most ``ROW_GROUP_TEXT_BYTES`` of text for a big file);
the ``runs``, ``requests`` and ``events`` tables are in its footer, in the Parquet key-value
metadata under ``ENTRY_FOOTER`` keys, each an Arrow IPC stream with its schema.  Any Parquet
reader reads the messages; ``decode`` (and ``replay sql``) the four tables.  ``write`` writes
a file's tables at once, ``EntryWriter`` the same bytes from its runs' tables given a run at a
time.

Why not a Parquet file per table: writing a Parquet column chunk has a fixed cost of about
10 µs whatever its rows, so the 49 columns of the three small tables (a one-row ``runs``, an
``events`` table that is empty in most files) cost more to write than most entries' messages;
an IPC stream of a small table costs a few µs.  Each file created is a file-system operation
more as well.

Not here: where entries live and their checksums (``replay.ingest.store``), the tables'
columns (``replay.ingest.schema``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from replay.errors import StoreError
from replay.ingest.arrow_read import utf8_lengths
from replay.ingest.ipc_stream import ipc_stream
from replay.ingest.names import TOKEN_COLUMN
from replay.ingest.schema import SCHEMA_VERSION, SCHEMAS
from replay.memory import release_freed_memory

ENTRY_FOOTER: dict[str, bytes] = {name: f"ctxreplay:{name}".encode()
                                  for name in ("runs", "requests", "events")}
"""Table → its key in the entry file's key-value metadata (the messages are the rows)."""
PARQUET_OPTIONS: dict[str, Any] = {"compression": "lz4", "use_dictionary": False,
                                   "write_statistics": False}
"""How entries are written: LZ4 (LZ4_RAW in the file); no dictionary pages or column
statistics (they make the files bigger and the writes slower, and whole entries are always
read).  LZ4 rather than zstd: writing the samples' entries takes about 0.6x the CPU of zstd
for files about 1.4x bigger (1.48 vs 1.07 MB; ``benchmarks/ingest_speed.py``), and a store is
written once per log but its writes are a tenth of an ingest.  Readers take any codec: entries
written with zstd read as before."""

ROW_GROUP_TEXT_BYTES = 2 << 20
"""The most text bytes (UTF-8) of one row group of an entry's messages (a row holding more is a
row group of its own): a big file's rows are written a row group at a time, so a text column
kept as a dictionary (``run_tables.tokenize``'s ``shared_text``: a Claude Code session's
branches repeat its prefix) is made plain a row group at a time, never whole.  An entry with
less text is one row group, as before."""


def encode(tables: Mapping[str, pa.Table | None]) -> bytes:
    """The entry file of ``tables`` (name → table; each cast to its schema first when it
    differs, a missing or None table written empty)."""
    sink = pa.BufferOutputStream()  # in memory, then one plain write: less overhead
    _write(tables, sink, None)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def write(tables: Mapping[str, pa.Table | None], out: BinaryIO) -> str:
    """Write the entry file of ``tables`` (as ``encode``) to ``out``; returns its sha256 (hex).
    An entry of more than one row group (``row_groups``) goes to ``out`` as it is encoded,
    not held whole in memory first."""
    messages = tables.get("messages")
    groups = row_groups(messages.column("text")) if messages is not None else [(0, 0)]
    if len(groups) == 1:
        sink = pa.BufferOutputStream()  # in memory, then one plain write: less overhead
        _write(tables, sink, groups)
        data = sink.getvalue()
        out.write(data)
        return hashlib.sha256(data).hexdigest()
    hashing = _Hashing(out)
    _write(tables, pa.PythonFile(hashing, mode="w"), groups)
    return hashing.digest.hexdigest()


class EntryWriter:
    """An entry file written from its runs' tables one run at a time (``add``), each let go
    once its rows are written: the messages go out a row group (``row_groups``) at a time as
    soon as more text is waiting than one holds, the small tables' rows are kept for the
    footer.  The bytes are ``write``'s of the runs' tables concatenated (an entry of one row
    group is written by ``write`` itself, at ``close``)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.parts: dict[str, list[pa.Table]] = {name: [] for name in (*ENTRY_FOOTER, "messages")}
        """Each table's rows not yet written (of the messages: less text than a row group
        holds, but for the newest run's), a run at a time; a table with no rows is kept only
        while no run had rows (the entry's table is then that run's)."""
        self.sizes: list[np.ndarray] = []
        """The text bytes of each message row waiting, a run at a time."""
        self.waiting = 0
        """Their sum: the text bytes of the message rows waiting."""
        self.hashing = _Hashing(out)
        self.writer: pq.ParquetWriter | None = None

    def add(self, tables: Mapping[str, pa.Table | None]) -> None:
        """The next run's (or runs') tables."""
        for name, parts in self.parts.items():
            table = tables.get(name)
            if table is not None and (table.num_rows or not parts):
                if table.num_rows and parts and not parts[-1].num_rows:
                    parts.clear()  # (an empty table kept for want of rows)
                add_part(parts, table)
                if name == "messages" and table.num_rows:
                    self.sizes.append(sizes := _value_bytes(table.column("text")))
                    self.waiting += int(sizes.sum())
                    if len(self.sizes) >= MERGED_PARTS:
                        self.sizes = [np.concatenate(self.sizes)]
        if self.waiting <= ROW_GROUP_TEXT_BYTES:
            return
        sizes = np.concatenate(self.sizes) if len(self.sizes) > 1 else self.sizes[0]
        ends = np.cumsum(sizes)
        if self.writer is None:  # more than one row group: each written as it fills
            self.writer = pq.ParquetWriter(pa.PythonFile(self.hashing, mode="w"),
                                           SCHEMAS["messages"], **PARQUET_OPTIONS)
        rows = pa.concat_tables(self.parts["messages"])
        start = used = 0
        while int(ends[-1]) - used > ROW_GROUP_TEXT_BYTES:  # (cut as ``row_groups`` cuts)
            stop = max(int(np.searchsorted(ends, used + ROW_GROUP_TEXT_BYTES, "right")),
                       start + 1)
            self.writer.write_table(_schema_of(
                rows.slice(start, stop - start).combine_chunks(), "messages"))
            start, used = stop, int(ends[stop - 1])
            release_freed_memory()  # (as ``_write``: the group's pages given back)
        self.parts["messages"] = [rows.slice(start).combine_chunks()]
        self.sizes = [sizes[start:]]
        self.waiting = int(ends[-1]) - used

    def abandon(self) -> None:
        """Stop: the file is removed unfinished.  Its Parquet writer, if one was opened, is
        closed now, while the file is open (at garbage collection it would write into a
        closed file and print "Exception ignored")."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def close(self) -> str:
        """Write what is waiting and the footer; returns the file's sha256 (hex)."""
        tables = {name: (parts[0] if len(parts) == 1 else pa.concat_tables(parts)
                         ).combine_chunks() if parts else None
                  for name, parts in self.parts.items()}
        if self.writer is None:
            return write(tables, self.out)
        if (rows := tables["messages"]) is not None and rows.num_rows:
            self.writer.write_table(_schema_of(rows, "messages"))
        self.writer.add_key_value_metadata(_footer(tables))
        self.writer.close()
        return self.hashing.digest.hexdigest()


MERGED_PARTS = 64
"""Tables a list of a big file's parts (``add_part``: its runs' tables, a run at a time) holds
at most before they are made one: thousands of small runs in one file (a session each) held as
thousands of tables took ~60 KB a run of objects around a few hundred bytes of rows."""


def add_part(parts: list[pa.Table], table: pa.Table) -> None:
    """``table`` after ``parts`` (tables of one schema, rows in order), the list made one table
    once it holds ``MERGED_PARTS`` (the same rows, in the same order)."""
    parts.append(table)
    if len(parts) >= MERGED_PARTS:
        parts[:] = [pa.concat_tables(parts).combine_chunks()]


def row_groups(text: pa.ChunkedArray | pa.Array) -> list[tuple[int, int]]:
    """The (start, stop) rows of each row group of an entry's messages whose ``text`` column
    this is: one for all when the text is at most ``ROW_GROUP_TEXT_BYTES``, else each as many
    rows as keep it at most that (or one row)."""
    n = len(text)
    total = _text_bytes(text)
    if total <= ROW_GROUP_TEXT_BYTES:
        return [(0, n)]
    ends = np.cumsum(_value_bytes(text))
    out, start, used = [], 0, 0
    while start < n:
        stop = int(np.searchsorted(ends, used + ROW_GROUP_TEXT_BYTES, "right"))
        stop = max(stop, start + 1)
        out.append((start, stop))
        start, used = stop, int(ends[stop - 1])
    return out


def _text_bytes(text: pa.ChunkedArray | pa.Array) -> int:
    """UTF-8 bytes of every value of a string column, or of a dictionary's rows."""
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    if all(c.type == pa.string() and not c.null_count for c in chunks):  # (most entries)
        total = 0  # each chunk's last offset less its first: no array of lengths made
        for c in chunks:
            if len(c):  # (an empty array's offsets may be no buffer at all)
                ends = memoryview(c.buffers()[1])[c.offset * 4:(c.offset + len(c) + 1) * 4
                                                  ].cast("i")
                total += ends[-1] - ends[0]
        return total
    return int(_value_bytes(text).sum())


def _value_bytes(text: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """UTF-8 bytes of each row of a string or dictionary-of-string column (a null: 0)."""
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    parts: list[np.ndarray] = []
    for c in chunks:
        if isinstance(c, pa.DictionaryArray):
            parts.append(utf8_lengths(c.dictionary)[_ints(c.indices)])
        else:
            parts.append(utf8_lengths(c))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _ints(values: pa.Array) -> np.ndarray:
    """An int32 or int64 array's values as numpy (a null: 0), read from its buffer
    (``to_numpy`` imports pandas: ~30 MB)."""
    if values.null_count:
        values = pc.fill_null(values, 0)
    dtype = np.dtype(np.int32 if values.type == pa.int32() else np.int64)
    return np.frombuffer(values.buffers()[1], dtype, len(values), values.offset * dtype.itemsize)


class _Hashing:
    """A binary file that hashes what is written to it (sha256) on its way to ``out``."""

    def __init__(self, out: BinaryIO) -> None:
        self.out, self.digest, self.closed = out, hashlib.sha256(), False

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:  # (``out`` is closed by its owner)
        self.closed = True


def _write(tables: Mapping[str, pa.Table | None], sink: pa.NativeFile,
           groups: list[tuple[int, int]] | None) -> None:
    """``tables`` as an entry file into ``sink``, the messages in ``groups`` (``row_groups``;
    None: found here)."""
    footer = _footer(tables)
    messages = tables.get("messages")
    layout = _key_values()
    with pq.ParquetWriter(sink, SCHEMAS["messages"], **PARQUET_OPTIONS,
                          **({} if layout is None else {"store_schema": False})) as writer:
        if messages is None:
            writer.write_table(SCHEMAS["messages"].empty_table())
        else:
            groups = groups or row_groups(messages.column("text"))
            for start, stop in groups:  # (one: the table as it is)
                part = messages if len(groups) == 1 else messages.slice(start, stop - start)
                writer.write_table(_schema_of(part, "messages"))
                if len(groups) > 1:  # the group's plain text is freed: its pages given back
                    release_freed_memory()  # (else the heap grows by a few MB a group)
        if layout is None:
            writer.add_key_value_metadata(footer)
        else:
            keys, values = layout
            values = {**values, **footer}
            writer.add_key_value_metadata({key: values[key] for key in keys})


@functools.cache
def _key_values() -> tuple[tuple[bytes, ...], dict[bytes, bytes]] | None:
    """The key-value metadata a Parquet writer puts in an entry file besides the footer's
    tables (the messages schema's own keys, and ``ARROW:schema``: the Arrow schema it
    serializes and encodes in base64 for each file it writes, ~100,000 instructions), and the
    order the file holds all the keys in (the writer merges the footer's keys with its own):
    read once a process from a file of no row group written as entries were written before.
    ``_write`` then writes the same bytes with ``store_schema=False`` and these keys given in
    this order.  None when the order cannot be told from that file's bytes (``_write`` then
    lets the writer store the schema)."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, SCHEMAS["messages"], **PARQUET_OPTIONS) as writer:  # (no rows
        # written: ``empty_table`` loads pandas)
        writer.add_key_value_metadata({key: b"" for key in ENTRY_FOOTER.values()})
    data = sink.getvalue().to_pybytes()
    found = pq.ParquetFile(pa.BufferReader(data)).metadata.metadata or {}
    tags = {key: b"\x18" + bytes([len(key)]) + key for key in found}  # (a key: a Thrift string)
    if any(len(key) > 127 or data.count(tag) != 1 for key, tag in tags.items()):
        return None
    keys = tuple(sorted(found, key=lambda key: data.index(tags[key])))
    return keys, {key: value for key, value in found.items() if key not in ENTRY_FOOTER.values()}


def _footer(tables: Mapping[str, pa.Table | None]) -> dict[bytes, bytes]:
    """The key-value metadata holding the runs, requests and events tables (``ENTRY_FOOTER``;
    a missing or None table written empty)."""
    return {key: _footer_ipc(tables.get(name), name) for name, key in ENTRY_FOOTER.items()}


_EMPTY_IPC: dict[str, tuple[pa.Table, bytes]] = {}
"""Table name -> the last table with no rows written in a footer under it, and its stream:
most files' ``events`` (and some formats' ``requests``) are one shared empty table
(``run_tables``), whose stream is then written once a process, not once a file (~10 µs)."""


def _footer_ipc(table: pa.Table | None, name: str) -> bytes:
    """The IPC stream of footer table ``name`` (``ipc_stream`` of it cast to its schema; None: an
    empty one).  A table with no rows that is the very object written last time under this
    name gets that stream again (a table is immutable: the same object, the same bytes)."""
    schema = SCHEMAS[name]
    if table is None:
        return ipc_stream(schema.empty_table(), schema)
    if table.num_rows:
        return ipc_stream(_schema_of(table, name), schema)
    seen = _EMPTY_IPC.get(name)
    if seen is None or seen[0] is not table:
        seen = _EMPTY_IPC[name] = (table, ipc_stream(_schema_of(table, name), schema))
    return seen[1]


def decode(data: bytes, shown: str) -> dict[str, pa.Table]:
    """The four tables of an entry file by name, each checked to be of this schema version.

    Raises:
        StoreError: not a Parquet file, a table missing or unreadable, or of another schema
            (naming ``shown``).
    """
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        footer = file.metadata.metadata or {}
        tables = {name: _read_ipc(footer, key, shown) for name, key in ENTRY_FOOTER.items()}
        tables["messages"] = file.read(use_threads=False)
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"{shown}: unreadable ({exc})") from exc
    return {name: _checked(table, name, shown) for name, table in tables.items()}


def decode_runs(data: bytes, shown: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """An entry file's runs table, its messages' ``run_id`` and token columns
    (``names.TOKEN_COLUMN``) and its requests table (what the run index's rows are made of), without the rest of the
    messages.

    Raises:
        StoreError: as ``decode``.
    """
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        footer = file.metadata.metadata or {}
        runs = _read_ipc(footer, ENTRY_FOOTER["runs"], shown)
        requests = _read_ipc(footer, ENTRY_FOOTER["requests"], shown)
        tokens = file.read(columns=["run_id", *TOKEN_COLUMN.values()], use_threads=False)
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise StoreError(f"{shown}: unreadable ({exc})") from exc
    return _checked(runs, "runs", shown), tokens, _checked(requests, "requests", shown)


def decode_footer(data: bytes, shown: str) -> dict[str, pa.Table]:
    """An entry file's ``runs``, ``requests`` and ``events`` tables (``ENTRY_FOOTER``), without
    its messages.

    Raises:
        StoreError: as ``decode``.
    """
    try:
        footer = pq.ParquetFile(pa.BufferReader(data)).metadata.metadata or {}
        tables = {name: _read_ipc(footer, key, shown) for name, key in ENTRY_FOOTER.items()}
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"{shown}: unreadable ({exc})") from exc
    return {name: _checked(table, name, shown) for name, table in tables.items()}


def _schema_of(table: pa.Table, name: str) -> pa.Table:
    schema = SCHEMAS[name]
    return table if table.schema.equals(schema, check_metadata=True) else table.cast(schema)


def _read_ipc(footer: dict[bytes, bytes], key: bytes, shown: str) -> pa.Table:
    stream = footer.get(key)
    if stream is None:
        raise StoreError(f"{shown}: no {key.decode()} table in its footer; not schema version "
                         f"{SCHEMA_VERSION}; re-ingest")
    table: pa.Table = pa.ipc.open_stream(stream).read_all()
    table.validate(full=True)  # crafted footer bytes: offsets, UTF-8 (ArrowInvalid: StoreError)
    return table


def _checked(table: pa.Table, name: str, shown: str) -> pa.Table:
    """``table`` with its schema's own metadata (a Parquet reader adds the footer's keys to
    the messages'), after checking it is ``name``'s schema of this version."""
    schema = SCHEMAS[name]
    meta = table.schema.metadata
    if meta is None or meta.get(b"schema_version") != SCHEMA_VERSION.encode() \
            or not table.schema.equals(schema, check_metadata=False):
        raise StoreError(f"{shown}: {name} table not of schema version {SCHEMA_VERSION}; "
                         "re-ingest")
    return table.replace_schema_metadata(schema.metadata)
