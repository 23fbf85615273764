"""Tests that craft a dataset's Parquet files by hand and want them read past the entry
checksum (to reach the checks behind it) stamp the manifest again, as a forger would; and
``forge`` rewrites one table of an entry's file as a hand would, with no check at all."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from replay.ingest import store
from replay.ingest.entry_file import ENTRY_FOOTER


def restamp(root: Path) -> None:
    """Give every entry of the store at ``root`` the checksum of its files as they are now."""
    entries = store.read_manifest(root)
    store.write_manifest(root, {s: dataclasses.replace(e, checksum=_checksum(root, e.key))
                                for s, e in entries.items()})


def _checksum(root: Path, key: str) -> str:
    """The checksum of entry ``key``'s file as it is now (``store.entry_checksum``)."""
    return store.entry_checksum(key, [hashlib.sha256(store.entry_file(root, key).read_bytes())
                                      .hexdigest()])


def forge(path: Path, table: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite table ``table`` of the entry file at ``path`` as ``change`` makes it (schema,
    metadata and all: nothing is cast or checked), the other tables as they were."""
    file = pq.ParquetFile(path)
    kept = set(ENTRY_FOOTER.values())
    footer = {k: v for k, v in (file.metadata.metadata or {}).items() if k in kept}
    messages = file.read()
    messages = messages.replace_schema_metadata({k: v for k, v in messages.schema.metadata.items()
                                                 if k not in footer})
    if table == "messages":
        messages = change(messages)
    else:
        old = pa.ipc.open_stream(footer[ENTRY_FOOTER[table]]).read_all()
        new = change(old)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, new.schema) as writer:
            writer.write_table(new)
        footer[ENTRY_FOOTER[table]] = sink.getvalue().to_pybytes()
    with pq.ParquetWriter(path, messages.schema) as writer:
        writer.write_table(messages)
        writer.add_key_value_metadata(footer)
