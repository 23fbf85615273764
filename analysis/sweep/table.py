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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.per_run.fast_metrics import FLOAT_COLUMNS
from analysis.sweep.cache import ROW_COLUMNS, TEXT_VALUES, VALUE_COLUMNS, columns_frame
from analysis.sweep.grid import Setting
from analysis.sweep.unit import UnitRows
from replay.corpus import Corpus

_DTYPES: dict[str, Any] = {c: object if c in TEXT_VALUES else
                           np.float64 if c in FLOAT_COLUMNS else np.int64 for c in VALUE_COLUMNS}
"""A value column's dtype (``TEXT_VALUES``: Python strings, made ``str`` in the table)."""


class Cells:
    """The (run, setting) cells of a sweep, as units and the cache give them.

    The cells are the cached ones, then each unit's, in the order the units were announced
    (``expect``: the plan's) or, unannounced, came (``add_unit``).  ``prepare`` orders them and
    makes the table's key columns (run, source, setting, parameters) before the last units'
    rows arrive (the sweep calls it when one task is left: a core is free then), with the
    columns of the rows computed by then, so that ``table`` only adds the last rows' and
    gathers the values when they have."""

    def __init__(self, settings: Sequence[Setting]) -> None:
        self._settings = settings
        self._cached_run: list[str] = []
        """Each cached cell's run."""
        self._cached_setting: list[int] = []
        """Each cached cell's setting, by its index in ``settings``."""
        self._cached: list[pd.DataFrame] = []
        self._n_cached = 0
        self._units: list[tuple[str, tuple[int, ...]]] = []
        """Each unit's run and settings, announced or added."""
        self._unit_rows: list[list[int] | None] = []
        """Each unit's cells' rows in ``_computed`` (None: not added yet)."""
        self._waiting: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        """Units announced and not added yet, by run and settings."""
        self._added: list[int] = []
        """The units added, in the order they were."""
        self._computed: list[tuple[Any, ...]] = []
        """Rows the units computed, ``VALUE_COLUMNS`` each."""
        self._early: tuple[int, list[np.ndarray]] | None = None
        """The columns of the first rows computed, made by ``prepare``: how many, the arrays."""
        self._n_computed_cells = 0
        self._keys: _Keys | None = None

    @property
    def n_computed(self) -> int:
        """Cells computed now (those of the units added)."""
        return self._n_computed_cells

    @property
    def n_cached(self) -> int:
        """Cells taken from the cache."""
        return self._n_cached

    def expect(self, units: Sequence[tuple[str, tuple[int, ...]]]) -> None:
        """Units still to come, each its run and its settings' indices: their cells are ordered
        with the others by ``prepare``, before their rows arrive."""
        for unit in units:
            self._waiting.setdefault(unit, []).append(len(self._units))
            self._units.append(unit)
            self._unit_rows.append(None)
        self._keys = None

    def add_unit(self, done: UnitRows) -> None:
        """A unit's cells: its settings, each with the row of the replay that made it."""
        key = (done.run_id, tuple(done.indices))
        waiting = self._waiting.get(key)
        if waiting:
            at = waiting.pop(0)
        else:  # not announced
            at = len(self._units)
            self._units.append(key)
            self._unit_rows.append(None)
            self._keys = None
        first = len(self._computed)
        self._computed += done.values
        self._unit_rows[at] = [first + k for k in done.rows]
        self._added.append(at)
        self._n_computed_cells += len(done.indices)

    def add_cached(self, rows: pd.DataFrame) -> None:
        """Rows the cache held (``ROW_COLUMNS``), one cell each; their settings are among the
        sweep's."""
        if rows.empty:
            return
        first: dict[str, int] = {}
        for i, s in enumerate(self._settings):
            first.setdefault(s.id, i)
        self._cached_run += rows["run_id"].tolist()
        self._cached_setting += [first[s] for s in rows["setting"].tolist()]
        self._cached.append(rows)
        self._n_cached += len(rows)
        self._keys = None

    def computed_frame(self) -> pd.DataFrame:
        """The cells computed now as rows of ``ROW_COLUMNS`` (for the cache), in the order added."""
        settings = self._settings
        value_ix = np.array([v for at in self._added for v in self._unit_rows[at] or ()],
                            dtype=np.int64)
        columns: dict[str, Any] = {
            "setting": [settings[i].id for at in self._added for i in self._units[at][1]],
            "run_id": [self._units[at][0] for at in self._added
                       for _ in self._units[at][1]]}
        for c, values in zip(VALUE_COLUMNS, self._computed_columns()):
            columns[c] = values[value_ix]
        return columns_frame(columns)

    def _computed_columns(self) -> list[np.ndarray]:
        """The computed rows' values, one array per ``VALUE_COLUMNS``: those ``prepare`` made
        of the rows there then, and the later rows'."""
        if self._early is None:
            return _columns(self._computed)
        n, early = self._early
        return [np.concatenate((a, b)) for a, b in zip(early, _columns(self._computed[n:]))]

    def prepare(self, corpus: Corpus) -> None:
        """Order every cell, cached, added or announced, by run and setting id, and make the
        table's key columns in that order (``table`` does it when this was not done)."""
        settings = self._settings
        cell_runs = self._cached_run + [r for r, ix in self._units for _ in ix]
        runs = sorted(set(cell_runs))
        run_rank = {r: k for k, r in enumerate(runs)}
        ids = sorted({s.id for s in settings})
        id_rank = {s: k for k, s in enumerate(ids)}
        setting_rank = np.array([id_rank[s.id] for s in settings], dtype=np.int64)
        cell_run = np.array([run_rank[r] for r in cell_runs], dtype=np.int64)
        cell_setting = np.array(self._cached_setting + [i for _, ix in self._units for i in ix],
                                dtype=np.int64)
        order = np.argsort(cell_run * max(1, len(ids)) + setting_rank[cell_setting],
                           kind="stable")
        cell_run, cell_setting = cell_run[order], cell_setting[order]
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
        self._keys = _Keys(order, out)
        self._early = (len(self._computed), _columns(self._computed))

    def table(self, corpus: Corpus) -> pd.DataFrame:
        """The tidy table: keys, source, parameters, policy, metrics; sorted by run and setting."""
        if self._keys is None:
            self.prepare(corpus)
        assert self._keys is not None
        if any(rows is None for rows in self._unit_rows):
            raise ValueError("a sweep's table before every unit announced was added")
        computed = self._computed_columns()
        n_computed = len(self._computed)
        values = []
        for c, arr in zip(VALUE_COLUMNS, computed):
            parts = [arr] + [np.asarray(f[c].to_numpy(), dtype=arr.dtype) for f in self._cached]
            values.append(np.concatenate(parts) if len(parts) > 1 else arr)
        value_ix = np.array([*range(n_computed, n_computed + self._n_cached),
                             *(v for rows in self._unit_rows for v in rows or ())],
                            dtype=np.int64)[self._keys.order]
        out = dict(self._keys.columns)
        for c, arr in zip(VALUE_COLUMNS, values):
            out[c] = pd.array(arr[value_ix], dtype="str") if c in TEXT_VALUES else arr[value_ix]
        return pd.DataFrame(out)


def _columns(rows: Sequence[tuple[Any, ...]]) -> list[np.ndarray]:
    """Rows of ``VALUE_COLUMNS`` as one array per column."""
    by_column = list(zip(*rows)) if rows else [()] * len(VALUE_COLUMNS)
    return [np.array(v, dtype=_DTYPES[c]) for c, v in zip(VALUE_COLUMNS, by_column)]


@dataclass(frozen=True, slots=True)
class _Keys:
    """What ``Cells.prepare`` made: the cells' order and the table's key columns in it."""

    order: np.ndarray
    """Cell positions (cached cells, then each unit's), in the table's order."""
    columns: dict[str, Any]
    """run_id, source, setting and each parameter, in the table's order."""


__all__ = ["ROW_COLUMNS", "Cells"]
