"""A sweep's table, made once from its cells: the rows the units computed and those the cache held.

A unit gives back one row of values per replay it made and, for each of its settings, which of
those rows is that setting's (``analysis.sweep.unit.UnitRows``): settings that share a replay
share its row, so a sweep of 1,000 settings over 25 runs carries some 600 rows, not 25,000.
``Cells`` gathers them with the cached rows (``analysis.sweep.cache``) and makes the table in
one pass: the cells' order (run_id, then setting id) from the ranks of the runs and of the
settings' ids, each column taken from its values in that order, one frame made of them.

The table: ``run_id``, ``source``, ``setting`` (the policy digest), one column per swept path,
``policy``, then the ``metrics()`` columns, sorted by (run_id, setting), index 0..n-1.

Not here: computing rows (``analysis.sweep.unit``), the cache files (``analysis.sweep.cache``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.per_run.fast_metrics import FLOAT_COLUMNS
from analysis.sweep.cache import ROW_COLUMNS, VALUE_COLUMNS, columns_frame
from analysis.sweep.grid import Setting
from analysis.sweep.unit import UnitRows
from replay.corpus import Corpus

_DTYPES: dict[str, Any] = {c: np.float64 if c in FLOAT_COLUMNS else np.int64
                           for c in VALUE_COLUMNS[1:]}
"""A metric column's dtype (``policy`` is text)."""


class Cells:
    """The (run, setting) cells of a sweep, as units and the cache give them."""

    def __init__(self, settings: Sequence[Setting]) -> None:
        self._settings = settings
        self._run: list[str] = []
        """Each cell's run."""
        self._setting: list[int] = []
        """Each cell's setting, by its index in ``settings``."""
        self._value: list[int] = []
        """Each cell's row of values: k >= 0 is ``_computed[k]``, -1 - k the k-th cached row."""
        self._computed: list[tuple[Any, ...]] = []
        """Rows the units computed, ``VALUE_COLUMNS`` each."""
        self._n_computed_cells = 0
        self._cached: list[pd.DataFrame] = []
        self._n_cached = 0

    @property
    def n_computed(self) -> int:
        """Cells computed now (those of the units added)."""
        return self._n_computed_cells

    @property
    def n_cached(self) -> int:
        """Cells taken from the cache."""
        return self._n_cached

    def add_unit(self, done: UnitRows) -> None:
        """A unit's cells: its settings, each with the row of the replay that made it."""
        first = len(self._computed)
        self._computed += done.values
        self._run += [done.run_id] * len(done.indices)
        self._setting += done.indices
        self._value += [first + k for k in done.rows]
        self._n_computed_cells += len(done.indices)

    def add_cached(self, rows: pd.DataFrame) -> None:
        """Rows the cache held (``ROW_COLUMNS``), one cell each; their settings are among the
        sweep's."""
        if rows.empty:
            return
        first: dict[str, int] = {}
        for i, s in enumerate(self._settings):
            first.setdefault(s.id, i)
        self._run += rows["run_id"].tolist()
        self._setting += [first[s] for s in rows["setting"].tolist()]
        self._value += [-1 - k for k in range(self._n_cached, self._n_cached + len(rows))]
        self._cached.append(rows)
        self._n_cached += len(rows)

    def computed_frame(self) -> pd.DataFrame:
        """The cells computed now as rows of ``ROW_COLUMNS`` (for the cache), in the order added."""
        where = [k for k, v in enumerate(self._value) if v >= 0]
        value_ix = np.array([self._value[k] for k in where], dtype=np.int64)
        columns: dict[str, Any] = {
            "setting": [self._settings[self._setting[k]].id for k in where],
            "run_id": [self._run[k] for k in where]}
        for c, values in zip(VALUE_COLUMNS, self._computed_columns()):
            columns[c] = values[value_ix]
        return columns_frame(columns)

    def _computed_columns(self) -> list[np.ndarray]:
        """The computed rows' values, one array per ``VALUE_COLUMNS``."""
        rows = self._computed
        by_column = list(zip(*rows)) if rows else [()] * len(VALUE_COLUMNS)
        return [np.array(v, dtype=object if c == "policy" else _DTYPES[c])
                for c, v in zip(VALUE_COLUMNS, by_column)]

    def table(self, corpus: Corpus) -> pd.DataFrame:
        """The tidy table: keys, source, parameters, policy, metrics; sorted by run and setting."""
        settings = self._settings
        computed = self._computed_columns()
        n_computed = len(self._computed)
        values = []
        for c, arr in zip(VALUE_COLUMNS, computed):
            parts = [arr] + [np.asarray(f[c].to_numpy(), dtype=arr.dtype) for f in self._cached]
            values.append(np.concatenate(parts) if len(parts) > 1 else arr)
        value_ix = np.array(self._value, dtype=np.int64)
        value_ix = np.where(value_ix >= 0, value_ix, n_computed - 1 - value_ix)
        runs = sorted(set(self._run))
        run_rank = {r: k for k, r in enumerate(runs)}
        ids = sorted({s.id for s in settings})
        id_rank = {s: k for k, s in enumerate(ids)}
        setting_rank = np.array([id_rank[s.id] for s in settings], dtype=np.int64)
        cell_run = np.array([run_rank[r] for r in self._run], dtype=np.int64)
        cell_setting = np.array(self._setting, dtype=np.int64)
        order = np.argsort(cell_run * max(1, len(ids)) + setting_rank[cell_setting],
                           kind="stable")
        cell_run, cell_setting, value_ix = cell_run[order], cell_setting[order], value_ix[order]
        source = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["source"].to_pylist()))
        run_ids = pd.array(runs, dtype="str")
        sources = pd.array([source.get(r) or "" for r in runs], dtype="str")
        out: dict[str, Any] = {  # arrays only: no Series, whose indexes the frame would align
            "run_id": run_ids.take(cell_run),
            "source": sources.take(cell_run),
            "setting": pd.array([s.id for s in settings], dtype="str").take(cell_setting)}
        params = [p for p, _ in settings[0].params] if settings else []
        held = {s.id: dict(s.params) for s in settings}
        for p in params:
            per_setting = np.empty(len(settings), dtype=object)
            per_setting[:] = [held[s.id][p] for s in settings]
            out[p] = pd.Series(per_setting[cell_setting], dtype="object").infer_objects().array
        out["policy"] = pd.array(values[0][value_ix], dtype="str")
        for c, arr in zip(VALUE_COLUMNS[1:], values[1:]):
            out[c] = arr[value_ix]
        return pd.DataFrame(out)


__all__ = ["ROW_COLUMNS", "Cells"]
