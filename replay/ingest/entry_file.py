"""One store entry as one Parquet file: the four tables of a source file's runs ↔ bytes.

The file's rows are the ``messages`` table (one row per content block, the bulk of an entry);
the ``runs``, ``requests`` and ``events`` tables are in its footer, in the Parquet key-value
metadata under ``ENTRY_FOOTER`` keys, each an Arrow IPC stream with its schema.  Any Parquet
reader reads the messages; ``decode`` (and ``replay sql``) the four tables.

Why not a Parquet file per table: writing a Parquet column chunk has a fixed cost of about
10 µs whatever its rows, so the 49 columns of the three small tables (a one-row ``runs``, an
``events`` table that is empty in most files) cost more to write than most entries' messages;
an IPC stream of a small table costs a few µs.  Each file created is a file-system operation
more as well.

Not here: where entries live and their checksums (``replay.ingest.store``), the tables'
columns (``replay.ingest.schema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replay.errors import StoreError
from replay.ingest.schema import SCHEMA_VERSION, SCHEMAS

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

IPC_OPTIONS = pa.ipc.IpcWriteOptions()
"""How a table is written as an Arrow IPC stream in a store (the footer tables, the run
index's rows): Arrow's current stream format, named here once.  Without options pyarrow makes
them anew for every writer from two environment variables (``ARROW_PRE_0_15_IPC_FORMAT``,
``ARROW_PRE_1_0_METADATA_VERSION``: about 35 µs a writer, four writers a file); a store's
format does not follow them."""


def encode(tables: Mapping[str, pa.Table | None]) -> bytes:
    """The entry file of ``tables`` (name → table; each cast to its schema first when it
    differs, a missing or None table written empty)."""
    footer = {key: _ipc(_schema_of(table, name) if (table := tables.get(name)) is not None
                        else SCHEMAS[name].empty_table())
              for name, key in ENTRY_FOOTER.items()}
    sink = pa.BufferOutputStream()  # in memory, then one plain write: less overhead
    with pq.ParquetWriter(sink, SCHEMAS["messages"], **PARQUET_OPTIONS) as writer:
        writer.write_table(_schema_of(tables["messages"], "messages"))
        writer.add_key_value_metadata(footer)
    data: bytes = sink.getvalue().to_pybytes()
    return data


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


def decode_runs(data: bytes, shown: str) -> tuple[pa.Table, pa.Table]:
    """An entry file's runs table and its messages' ``run_id`` and ``tokens_o200k`` columns
    (the run index's rows), without the rest of the messages.

    Raises:
        StoreError: as ``decode``.
    """
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        runs = _read_ipc(file.metadata.metadata or {}, ENTRY_FOOTER["runs"], shown)
        tokens = file.read(columns=["run_id", "tokens_o200k"], use_threads=False)
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise StoreError(f"{shown}: unreadable ({exc})") from exc
    return _checked(runs, "runs", shown), tokens


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


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    stream: bytes = sink.getvalue().to_pybytes()
    return stream


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
