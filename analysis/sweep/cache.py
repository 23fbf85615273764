"""The sweep cache: metric rows already computed, so extending a grid computes only new cells.

One Parquet file per run under the cache directory (``out/sweep_cache/`` by
default; named by ``safe_names.file_name`` of the run id), one row per setting, holding the row's ``metrics`` values and two keys:

- ``setting`` — the policy's ``digest()`` (every field of the policy);
- ``run_key`` — what else the numbers depend on: the run's source sha256, the
  store's tokenizers and schema version (the tail of its store entry key), the
  engine's ``TRACE_VERSION`` and ``fast_metrics.METRICS_VERSION``.

A row is reused only when both keys match; rows of another ``run_key`` (or a file of another
``CACHE_FORMAT``) are dropped the next time the run's file is written.  Each file carries in its metadata the run id
and the ``run_key`` it answers and a checksum of its rows: a file that fails them (copied over
another run's, edited, truncated) is dropped, counted (``SweepStats.n_cache_dropped``) and
rewritten after its rows are replayed again.  Files are replaced atomically
(temporary name + rename), by the parent process only.  Policies with a Python
tier (``module:Class``) are never cached: their code can change without their
digest changing.

Not here: computing rows (``analysis.sweep.core``).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis.per_run.fast_metrics import FLOAT_COLUMNS, METRIC_COLUMNS, METRICS_VERSION
from replay.atomic_files import atomic_write_bytes
from replay.engine.trace import TRACE_VERSION
from replay.ingest.input_files import Unreadable, read_input
from replay.ingest.store import Entry
from replay.safe_names import file_name

TEXT_VALUES: tuple[str, ...] = ("policy", "truth_source")
"""A replay's values that are text: the policy's name and the truth that judged the run
(``replay.engine.truth.TRUTH_SOURCES``)."""
VALUE_COLUMNS: tuple[str, ...] = (*TEXT_VALUES, *METRIC_COLUMNS)
"""A replay's values, as the sweep's units give them back (``analysis.sweep.unit.UnitRows``)."""
ROW_COLUMNS: tuple[str, ...] = ("setting", "run_id", *VALUE_COLUMNS)
"""The columns of a (run, setting) row, as the cache keeps it."""
_TEXT_COLUMNS: tuple[str, ...] = ("setting", "run_id", *TEXT_VALUES)
_DTYPES: dict[str, str] = {**{c: "object" for c in _TEXT_COLUMNS},  # → str
                           **{c: "float64" if c in FLOAT_COLUMNS else "int64"
                              for c in METRIC_COLUMNS}}
_SCHEMA = pa.schema([("run_key", pa.string())] + [(c, pa.string()) for c in _TEXT_COLUMNS]
                    + [(c, pa.float64() if c in FLOAT_COLUMNS else pa.int64())
                       for c in METRIC_COLUMNS])


def rows_frame(rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """Rows in ``ROW_COLUMNS`` order as a frame with their dtypes (int64 / float64 / str)."""
    columns = list(zip(*rows)) if rows else [()] * len(ROW_COLUMNS)
    return columns_frame(dict(zip(ROW_COLUMNS, columns)))


def columns_frame(columns: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """Columns of rows (``ROW_COLUMNS`` → values, one per row) as a frame with their dtypes
    (int64 / float64 / str): the one conversion a sweep makes, once for all its rows."""
    df = pd.DataFrame({c: np.array(columns[c], dtype=_DTYPES[c]) for c in ROW_COLUMNS})
    return df.astype({c: "str" for c in _TEXT_COLUMNS})


def run_key(sha256: str, entry: Entry) -> str:
    """The cache key of one run's data under this engine and these metrics."""
    data = entry.key.split("-", 2)[-1]
    return f"{sha256}:{data}:trace{TRACE_VERSION}:metrics{METRICS_VERSION}"


@dataclass(frozen=True, slots=True)
class Cached:
    """What the cache holds for one run: the rows still valid, and whether its file failed
    its check (then dropped: its rows are replayed again and the file rewritten)."""

    rows: pd.DataFrame
    damaged: bool = False


def read_cached(cache_dir: Path, run_id: str, key: str) -> Cached:
    """The cached rows of one run under ``key``, one per setting (``ROW_COLUMNS``).

    A file is believed only when it answers this run and key (its metadata and every row's
    ``run_id``) and its rows match the checksum written with them; a file of another
    ``run_key`` or of another ``CACHE_FORMAT`` is stale (no rows, not damaged); anything else
    is damaged (no rows).

    Args:
        cache_dir: the cache directory.
        run_id: the run.
        key: ``run_key`` of the run as it is now.
    """
    table, damaged = _read_table(cache_dir, run_id, key)
    if table is None:
        return Cached(rows_frame([]), damaged=damaged)
    return Cached(table.select(list(ROW_COLUMNS)).to_pandas(use_threads=False))


def _read_table(cache_dir: Path, run_id: str, key: str) -> tuple[pa.Table | None, bool]:
    """``read_cached``'s rows as the file holds them (with ``run_key``), or None and whether
    the file was damaged."""
    path = _path(cache_dir, run_id)
    if not path.is_file():
        return None, False
    try:
        # from bytes in memory: a ParquetFile on a path starts Arrow's I/O thread, which a
        # process exiting with it alive can abort in (tests/replay/cli/test_native_threads.py)
        table = pq.ParquetFile(pa.BufferReader(read_input(path, follow=False))).read(
            use_threads=False)  # (a planted symlink: damaged, not followed)
    except (OSError, Unreadable, pa.ArrowInvalid):
        return None, True
    meta = table.schema.metadata or {}
    if meta.get(_FORMAT) != CACHE_FORMAT:
        return None, False  # written by another ctxreplay: stale, rewritten
    if not table.schema.equals(_SCHEMA, check_metadata=False) or \
            meta.get(_RUN_ID) != run_id.encode("utf-8", "surrogatepass") or \
            meta.get(_CHECKSUM) != _checksum(table, meta.get(_KEY, b"")).encode():
        return None, True
    if meta.get(_KEY) != key.encode("utf-8", "surrogatepass"):
        return None, False  # made by another engine, metrics or data: stale
    if not all(pc.all(pc.equal(table[c], v), skip_nulls=False, min_count=0).as_py() is True
               for c, v in (("run_id", run_id), ("run_key", key))):  # a null is no match
        return None, True
    return table, False


def write_cached(cache_dir: Path, run_id: str, key: str, rows: pd.DataFrame) -> Path:
    """Store the rows of one run under ``key`` (merged with the valid rows already there),
    with the run id, the key and the rows' checksum in the file's metadata.

    Args:
        cache_dir: the cache directory.
        run_id: the run.
        key: ``run_key`` of the run.
        rows: rows with ``ROW_COLUMNS``.

    Returns:
        The file written.

    Raises:
        OSError: the file cannot be written (a full disk); no partial file is left.
    """
    new = pa.Table.from_pandas(rows[list(ROW_COLUMNS)].assign(run_key=key)[_SCHEMA.names], nthreads=1,
                               schema=_SCHEMA, preserve_index=False)
    old, _ = _read_table(cache_dir, run_id, key)
    merged = pa.concat_tables([old.replace_schema_metadata(None), new]) if old is not None \
        else new
    last = {s: i for i, s in enumerate(merged["setting"].to_pylist())}  # a setting's newest row
    order = sorted(last)
    table = merged.take(pa.array([last[s] for s in order], pa.int64()))
    key_bytes = key.encode("utf-8", "surrogatepass")
    table = table.replace_schema_metadata({
        _RUN_ID: run_id.encode("utf-8", "surrogatepass"), _KEY: key_bytes, _FORMAT: CACHE_FORMAT,
        _CHECKSUM: _checksum(table, key_bytes).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    path = _path(cache_dir, run_id)
    atomic_write_bytes(path, buf.getvalue(), within=cache_dir)
    return path


_RUN_ID, _KEY, _CHECKSUM = b"ctxreplay.run_id", b"ctxreplay.run_key", b"ctxreplay.checksum"
"""The file's metadata: the run it answers, the key, the sha256 of its rows (``_checksum``)."""
_FORMAT = b"ctxreplay.cache_format"
CACHE_FORMAT = b"3"
"""The file layout and checksum of this module (2: the checksum hashes numbers as their
little-endian bytes, not as JSON; 3: each row's ``truth_source``); a file of another format is
stale, not damaged."""


def _checksum(table: pa.Table, key: bytes) -> str:
    """sha256 of the key and the rows' values, column by column: strings as JSON, numbers as
    their little-endian 8-byte values with a null mask (one hash per column, no Python object
    per value)."""
    h = hashlib.sha256(key + b"\n")
    present = set(table.column_names)  # once: the list is made anew on each access
    for name in _SCHEMA.names:
        h.update(json.dumps(name).encode() + b"\0")
        if name not in present:
            h.update(b"absent\0")
            continue
        col = table.column(name)
        if pa.types.is_string(col.type):
            h.update(json.dumps(col.to_pylist()).encode("utf-8", "surrogatepass"))
        else:
            h.update(b"%d\0" % col.null_count)
            if col.null_count:
                h.update(pc.is_null(col).to_numpy(zero_copy_only=False).tobytes())
                col = col.fill_null(0)
            h.update(col.to_numpy().astype("<f8" if pa.types.is_floating(col.type) else "<i8",
                                           copy=False).tobytes())
        h.update(b"\0")
    return h.hexdigest()


def _path(cache_dir: Path, run_id: str) -> Path:
    """The run's file: a safe name made from its id (a run id is data: never joined raw)."""
    return cache_dir / file_name(run_id, ".parquet")
