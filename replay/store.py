"""The Parquet store: a dataset directory of ingested runs, written atomically.

Layout::

    DIR/manifest.json                       source → entry key, format, counts
    DIR/data/<key>/{runs,messages,requests}.parquet

An entry key is derived from the source's sha256, its relative path, the
tokenizers and the schema version, so re-ingesting an unchanged file finds its
entry and does nothing.  Every file is written under a temporary name and
renamed; the manifest is replaced last, so an interrupted ingest leaves the
previous good state readable.  A source that fails to parse keeps its old entry.

Not here: parsing (``replay.parsers``), tokenising (``replay.ingest``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replay.errors import StoreError
from replay.schema import SCHEMA_VERSION, SCHEMAS

TABLES = ("runs", "messages", "requests")
PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "use_dictionary": False,
                                   "write_statistics": False}
"""How entries are written: zstd; no dictionary pages or column statistics (with zstd they make
the files bigger and the writes slower, and whole entries are always read)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One ingested source file in the store."""

    source: str
    key: str
    sha256: str
    format: str
    n_runs: int


@dataclass(frozen=True, slots=True)
class RunTables:
    """The three tables of one or more runs."""

    runs: pa.Table
    messages: pa.Table
    requests: pa.Table


def entry_key(sha256: str, source: str, tokenizers: tuple[str, ...], parsers_version: str = "") -> str:
    """The cache key of a source: content, location, tokenizers, parser and schema versions."""
    where = hashlib.sha1(source.encode()).hexdigest()[:8]
    toks = "+".join(t.split("_")[0] for t in tokenizers) or "none"
    parsers = f"-p{parsers_version}" if parsers_version else ""
    return f"{sha256[:24]}-{where}-{toks}{parsers}-v{SCHEMA_VERSION}"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_entry(root: Path, key: str, tables: RunTables) -> None:
    """Write one entry's tables into ``root/data/key`` atomically (whole directory rename)."""
    final = root / "data" / key
    tmp = root / "data" / f".{key}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in TABLES:
        table = getattr(tables, name)
        if not table.schema.equals(SCHEMAS[name], check_metadata=True):
            table = table.cast(SCHEMAS[name])
        buf = pa.BufferOutputStream()  # in memory, then one plain write: much less overhead
        pq.write_table(table, buf, **PARQUET_OPTIONS)
        (tmp / f"{name}.parquet").write_bytes(buf.getvalue().to_pybytes())
    if final.exists():  # moved aside, not deleted first: missing only between two renames
        old = root / "data" / f".{key}.old{os.getpid()}"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def has_entry(root: Path, key: str) -> bool:
    """Whether a complete entry with this key is stored."""
    return all((root / "data" / key / f"{n}.parquet").is_file() for n in TABLES)


def read_manifest(root: Path) -> dict[str, Entry]:
    """The manifest of a store (empty for a new directory)."""
    path = root / "manifest.json"
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise StoreError(f"{path}: schema version {doc.get('schema_version')!r}, this ctxreplay "
                             f"reads {SCHEMA_VERSION!r}; re-ingest into a new directory")
        return {s: Entry(source=s, **e) for s, e in doc["entries"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{path}: corrupt manifest ({exc})") from exc


def write_manifest(root: Path, entries: dict[str, Entry]) -> None:
    """Replace the manifest atomically."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "entries": {s: {"key": e.key, "sha256": e.sha256, "format": e.format, "n_runs": e.n_runs}
                    for s, e in sorted(entries.items())},
    }
    atomic_write_bytes(root / "manifest.json", json.dumps(doc, indent=1).encode())


def is_store(path: Path) -> bool:
    """Whether ``path`` is a dataset directory written by ``replay ingest``."""
    return (path / "manifest.json").is_file()


def read_entry(root: Path, key: str) -> RunTables:
    """One entry's tables, checked against the schema."""
    tables = {}
    for name in TABLES:
        path = root / "data" / key / f"{name}.parquet"
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as exc:
            raise StoreError(f"{path}: unreadable ({exc})") from exc
        if table.schema.metadata is None or table.schema.metadata.get(b"schema_version") != (
            SCHEMA_VERSION.encode()
        ) or not table.schema.equals(SCHEMAS[name], check_metadata=False):
            raise StoreError(f"{path}: not schema version {SCHEMA_VERSION}; re-ingest")
        tables[name] = table
    return RunTables(**tables)


def iter_entries(root: Path) -> Iterator[RunTables]:
    """The store's entries one at a time, in source order (memory bounded by one entry)."""
    for entry in read_manifest(root).values():
        yield read_entry(root, entry.key)


def read_store(root: Path) -> RunTables:
    """All runs of a store as three tables."""
    if not is_store(root):
        raise StoreError(f"{root}: not a ctxreplay dataset (no manifest.json); run `replay ingest`")
    parts = list(iter_entries(root))
    if not parts:
        return RunTables(*(SCHEMAS[n].empty_table() for n in TABLES))
    return RunTables(*(pa.concat_tables([getattr(p, n) for p in parts]) for n in TABLES))


def runs(root: Path) -> pa.Table:
    """The ``runs`` rows of a store plus each run's ``tokens_o200k`` total (``replay runs``)."""
    if not is_store(root):
        raise StoreError(f"{root}: not a ctxreplay dataset (no manifest.json); run `replay ingest`")
    return read_runs(root, list(read_manifest(root).values()), with_tokens=True)


_MERGE_EVERY = 256
"""Entries read between merges of their run rows (see ``read_runs``)."""


def read_runs(root: Path, entries: list[Entry], *, with_tokens: bool = False) -> pa.Table:
    """The ``runs`` rows of ``entries`` as one table, read entry by entry; message texts are
    never loaded.  ``with_tokens`` adds each run's ``tokens_o200k`` total.

    Each small file read holds its own schema and buffers (~25 KB for a one-run entry), so rows
    are merged into contiguous arrays every few hundred entries: an archive of 10,000 runs
    costs a few MB here, not hundreds.
    """
    groups: list[pa.Table] = []
    part: list[pa.Table] = []
    for entry in entries:
        folder = root / "data" / entry.key
        try:
            table = pq.ParquetFile(folder / "runs.parquet").read()
            if with_tokens:
                table = _with_tokens(table, pq.ParquetFile(folder / "messages.parquet").read(
                    columns=["run_id", "tokens_o200k"]))
        except (OSError, pa.ArrowInvalid) as exc:
            raise StoreError(f"{folder}: unreadable ({exc})") from exc
        if table.num_rows != entry.n_runs:
            raise StoreError(f"{folder}: {table.num_rows} runs stored, the manifest says "
                             f"{entry.n_runs}; re-ingest")
        part.append(table)
        if len(part) == _MERGE_EVERY:
            groups.append(pa.concat_tables(part).combine_chunks())
            part = []
    if part:
        groups.append(pa.concat_tables(part).combine_chunks())
    if not groups:
        empty = SCHEMAS["runs"].empty_table()
        return _with_tokens(empty, None) if with_tokens else empty
    return pa.concat_tables(groups).combine_chunks()


def _with_tokens(runs_table: pa.Table, messages: pa.Table | None) -> pa.Table:
    total: dict[str, int] = {}
    if messages is not None:
        sums = messages.group_by("run_id").aggregate([("tokens_o200k", "sum")])
        total = dict(zip(sums["run_id"].to_pylist(), sums["tokens_o200k_sum"].to_pylist()))
    return runs_table.append_column("tokens_o200k", pa.array(
        [total.get(r) or 0 for r in runs_table["run_id"].to_pylist()], pa.int64()))
