"""The sweep cache: metric rows already computed, so extending a grid computes only new cells.

One Parquet file per run under the cache directory (``out/sweep_cache/`` by
default; named by ``safe_names.file_name`` of the run id), one row per setting, holding the row's ``metrics`` values and two keys:

- ``setting`` — the policy's ``digest()`` (every field of the policy);
- ``run_key`` — what else the numbers depend on: the run's source sha256, the
  store's tokenizers and schema version (the tail of its store entry key), the
  engine's ``TRACE_VERSION`` and ``fast_metrics.METRICS_VERSION``.

A row is reused only when both keys match; rows of another ``run_key`` are
dropped the next time the run's file is written.  Files are replaced atomically
(temporary name + rename), by the parent process only.  Policies with a Python
tier (``module:Class``) are never cached: their code can change without their
digest changing.

Not here: computing rows (``analysis.sweep.core``).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.per_run.fast_metrics import FLOAT_COLUMNS, METRIC_COLUMNS, METRICS_VERSION
from replay.atomic_files import atomic_write_bytes
from replay.engine.trace import TRACE_VERSION
from replay.ingest.store import Entry
from replay.safe_names import file_name

ROW_COLUMNS: tuple[str, ...] = ("setting", "run_id", "policy", *METRIC_COLUMNS)
"""The columns of computed rows, as the sweep's workers return them."""
_DTYPES: dict[str, str] = {"setting": "object", "run_id": "object", "policy": "object",  # → str
                           **{c: "float64" if c in FLOAT_COLUMNS else "int64"
                              for c in METRIC_COLUMNS}}
_SCHEMA = pa.schema([("run_key", pa.string()), ("setting", pa.string()), ("run_id", pa.string()),
                     ("policy", pa.string())]
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
    return df.astype({c: "str" for c in ROW_COLUMNS[:3]})


def run_key(sha256: str, entry: Entry) -> str:
    """The cache key of one run's data under this engine and these metrics."""
    data = entry.key.split("-", 2)[-1]
    return f"{sha256}:{data}:trace{TRACE_VERSION}:metrics{METRICS_VERSION}"


def read_cached(cache_dir: Path, run_id: str, key: str) -> pd.DataFrame:
    """The cached rows of one run under ``key``, one per setting (``ROW_COLUMNS``).

    Args:
        cache_dir: the cache directory.
        run_id: the run.
        key: ``run_key`` of the run as it is now.

    Returns:
        The rows still valid (none when there is no file, or it is unreadable).
    """
    path = _path(cache_dir, run_id)
    table = None
    if path.is_file():
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid):
            table = None
    if table is None or not table.schema.equals(_SCHEMA, check_metadata=False):
        return rows_frame([])
    df = table.to_pandas()
    valid: pd.DataFrame = df.loc[df["run_key"] == key, list(ROW_COLUMNS)]
    return valid.reset_index(drop=True)


def write_cached(cache_dir: Path, run_id: str, key: str, rows: pd.DataFrame) -> Path:
    """Store the rows of one run under ``key`` (merged with the valid rows already there).

    Args:
        cache_dir: the cache directory.
        run_id: the run.
        key: ``run_key`` of the run.
        rows: rows with ``ROW_COLUMNS``.

    Returns:
        The file written.
    """
    merged = pd.concat([read_cached(cache_dir, run_id, key), rows[list(ROW_COLUMNS)]],
                       ignore_index=True)
    merged = merged.drop_duplicates("setting", keep="last").sort_values("setting")
    table = pa.Table.from_pandas(merged.assign(run_key=key)[_SCHEMA.names], schema=_SCHEMA,
                                 preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    path = _path(cache_dir, run_id)
    atomic_write_bytes(path, buf.getvalue())
    return path


def _path(cache_dir: Path, run_id: str) -> Path:
    """The run's file: a safe name made from its id (a run id is data: never joined raw)."""
    return cache_dir / file_name(run_id, ".parquet")
