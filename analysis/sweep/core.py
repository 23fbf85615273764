"""Threshold sweeps: every setting of a grid replayed over every run, one row per (run, setting).

``sweep(corpus, settings)`` looks up the rows already in the cache (``analysis.sweep.cache``)
for the same run data, policy digest, engine and metrics versions (extending a grid computes only
the new cells), splits the rest into units of one run and a batch of settings, runs them on an
executor (this process, local workers or Dask: ``analysis.sweep.execute``), each unit replaying
its settings over its run, sharing replays between settings where that is exact
(``analysis.sweep.unit``), and makes one table of all rows (``analysis.sweep.table``).  Every
executor runs the same pure unit and the table is sorted by (run_id, setting), so every executor
gives the same table.

The table: ``run_id``, ``source``, ``setting`` (the policy digest), one column per
swept path, ``policy``, then the ``metrics()`` columns.  ``write_sweep`` writes it as
Parquet and CSV with ``settings.json`` and the plots of ``analysis.sweep.plots``.

Not here: grids and designs (``analysis.sweep.grid``), choosing a setting (``analysis.sweep.pareto``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.sweep.cache import read_cached, run_key, write_cached
from analysis.sweep.choice import ChoiceRule, chosen_yaml
from analysis.sweep.execute import auto_jobs, dask_client, execute, plan
from analysis.sweep.grid import Setting
from analysis.sweep.table import Cells
from analysis.sweep.unit import settings_blob
from replay.atomic_files import atomic_write_bytes, make_output_dir
from replay.corpus import Corpus
from replay.engine.share import share_rank
from replay.errors import OutputError, ReplayInputError
from replay.ingest.store import Entry
from replay.policy import Custom, policy_to_dict
from replay.safe_text import csv_cell


@dataclass(frozen=True, slots=True)
class SweepStats:
    """What a sweep did."""

    n_runs: int
    n_settings: int
    n_computed: int
    """(run, setting) rows computed now."""
    n_reused: int
    """Rows taken from the cache."""
    n_units: int
    """Work units sent to the executor."""
    n_workers: int = 1
    """Local worker processes of the pool that replayed them (1: this process or Dask); the
    pool stays up a while, so the plots are drawn in it (``write_sweep(jobs=n_workers)``)."""
    n_cache_dropped: int = 0
    """Runs whose cache file failed its check (another run's, edited, truncated): dropped,
    their rows replayed again (``analysis.sweep.cache``)."""
    n_cache_unwritten: int = 0
    """Runs whose computed rows could not be stored in the cache (``cache_error``: a full
    disk); the rows are in the result all the same."""
    cache_error: str = ""
    n_replays: int = 0
    """Replays made for the rows computed: the other rows are those of a replay that stands for
    their setting's exactly (``analysis.sweep.unit``)."""
    n_runs_loaded: int = 0
    """Units that read and prepared their run (the others' process had kept it from an earlier
    unit or sweep: ``analysis.sweep.unit``)."""
    n_repeated: int = 0
    """Replays made whose trace came out the same as the previous replay's of their unit: they
    took its row, their metrics not computed again (``analysis.sweep.unit``)."""


@dataclass(frozen=True, slots=True)
class SweepResult:
    """The tidy table of a sweep, its settings and what it cost."""

    table: pd.DataFrame
    settings: tuple[Setting, ...]
    stats: SweepStats

    @property
    def params(self) -> list[str]:
        """The swept paths (the table's parameter columns)."""
        return [p for p, _ in self.settings[0].params] if self.settings else []


def sweep(corpus: Corpus, settings: Sequence[Setting], *, jobs: int = 0,
          scheduler: Any = None, cache_dir: Path | None = None, allow_python: bool = False,
          run_ids: Sequence[str] | None = None,
          on_row: Callable[[str], None] | None = None) -> SweepResult:
    """Replay every setting over every run and compute every metric.

    Args:
        corpus: the runs (a store, as ``open_corpus`` gives; in-memory corpora work too).
        settings: the settings (``analysis.sweep.grid.settings``).
        jobs: local worker processes (0: one per core, or this process when the sweep is
            smaller than ``analysis.sweep.execute.INLINE_BELOW_REQUESTS``; 1: in this
            process).
        scheduler: a Dask scheduler address or ``distributed.Client`` (instead of ``jobs``).
        cache_dir: where computed rows are kept and looked up (None: no cache).
        allow_python: allow ``module:Class`` tiers.
        run_ids: the runs to sweep (default: every replayable run).
        on_row: called with the run id after each (run, setting) row, cached or new.

    Returns:
        The table (sorted by run_id, setting), the settings and the stats.

    Raises:
        ReplayError: a setting cannot be replayed (the run and setting are named).
    """
    cacheable = [not any(isinstance(t, Custom) for t in s.policy.tiers) for s in settings]
    if not all(cacheable) and not allow_python:
        raise ReplayInputError("a setting has a module:Class tier, which runs Python code; allow it "
                               "with --allow-python (allow_python=True from Python)")
    ids = list(run_ids) if run_ids is not None else corpus.replayable()
    if cache_dir is not None:  # its own folder in the project cache: never through a symlink
        make_output_dir(cache_dir.parent, cache_dir.name)
    entries = _entries(corpus)
    keys = _run_keys(corpus, ids, entries) if cache_dir is not None else {}
    dropped: list[str] = []
    reused, todo = _lookup(cache_dir, keys, ids, settings, cacheable, dropped)
    rank = share_rank([s.policy for s in settings])  # settings likely to share, side by side
    todo = {rid: sorted(ix, key=rank.__getitem__) for rid, ix in todo.items()}
    if on_row:
        for rid in ([] if reused is None else reused["run_id"]):
            on_row(rid)
    blob = settings_blob([(s.id, s.policy) for s in settings])
    cells = Cells(settings)
    if reused is not None:
        cells.add_cached(reused)
    n_replays = n_loaded = n_repeated = 0
    with dask_client(scheduler) as client:
        workers = (sum(client.nthreads().values()) if client is not None else
                   jobs if jobs > 0 else auto_jobs(corpus, todo))
        tasks = plan(corpus, todo, entries, workers, allow_python)
        cells.expect([(unit.run_id, unit.indices) for task in tasks for unit in task])
        for done in execute(tasks, blob, jobs=workers, client=client,
                            on_last=lambda: cells.prepare(corpus)):
            cells.add_unit(done)
            n_replays += done.n_replays
            n_loaded += done.loaded
            n_repeated += done.n_repeated
            if on_row:
                for _ in done.indices:
                    on_row(done.run_id)
    unwritten: list[str] = []
    if cache_dir is not None:
        new = cells.computed_frame()
        keep = {s.id for s, ok in zip(settings, cacheable) if ok}
        for rid, rows in new[new["setting"].isin(keep)].groupby("run_id", sort=True):
            if rid in keys:
                try:
                    write_cached(cache_dir, str(rid), keys[str(rid)], rows)
                except OSError as exc:  # a full disk: the rows computed are kept in the result
                    unwritten.append(exc.strerror or str(exc))
                except OutputError as exc:  # a symlink planted at the file's name: not written
                    # through, as the rows computed are kept (they were lost: exit 2)
                    unwritten.append(str(exc))
    pool = min(workers, len(tasks)) if client is None and workers > 1 and len(tasks) > 1 else 1
    stats = SweepStats(len(ids), len(settings), cells.n_computed, cells.n_cached,
                       sum(map(len, tasks)), pool,
                       n_cache_dropped=len(dropped), n_cache_unwritten=len(unwritten),
                       cache_error=unwritten[0] if unwritten else "", n_replays=n_replays,
                       n_runs_loaded=n_loaded, n_repeated=n_repeated)
    return SweepResult(cells.table(corpus), tuple(settings), stats)


def _csv(table: pd.DataFrame) -> str:
    """The sweep table as CSV: every text cell and header through ``csv_cell`` (escaped, a
    would-be formula behind a ``'``), numbers as they are."""
    safe = table.rename(columns=lambda c: str(csv_cell(c)))
    for col in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[col]):
            safe[col] = safe[col].astype(object).map(csv_cell)
    return str(safe.to_csv(index=False))


def write_sweep(result: SweepResult, out: Path, *, plots: bool = True,
                chosen: str | None = None, rule: ChoiceRule | None = None, jobs: int = 1,
                on_figure: Callable[[int, int], None] | None = None) -> list[Path]:
    """Write the table (Parquet and CSV), the settings and the plots under ``out``.

    Args:
        result: a sweep's result.
        out: the folder to write to (created).
        plots: also draw each main metric against each swept path and the Pareto fronts.
        chosen: a setting id whose policy is written as ``chosen.yaml`` under its own name,
            with a comment saying how it was chosen (``analysis.sweep.choice``; usable with
            ``replay run --policy``).
        rule: how it was chosen (constraints, metric, design), for that comment.
        jobs: worker processes drawing the plots (1: this process; 0: one per core);
            ``result.stats.n_workers`` draws them in the pool the sweep used.
        on_figure: plots' progress, as for ``sweep_plots.write_plots``.

    Returns:
        The files written.
    """
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(result.table, preserve_index=False, nthreads=1), buf,
                   compression="zstd")
    written = [out / "sweep.parquet", out / "sweep.csv", out / "settings.json"]
    atomic_write_bytes(written[0], buf.getvalue(), within=out)
    atomic_write_bytes(written[1], _csv(result.table).encode(), within=out)
    doc = {s.id: {"params": dict(s.params), "policy": policy_to_dict(s.policy)}
           for s in result.settings}
    atomic_write_bytes(written[2], json.dumps(doc, indent=1, default=str).encode(), within=out)
    if chosen is not None:
        text = chosen_yaml(result.settings, chosen, rule)
        written.append(out / "chosen.yaml")
        atomic_write_bytes(written[-1], text.encode(), within=out)
    if plots and len(result.table):
        from analysis.sweep.plots import write_plots  # matplotlib only when plots are drawn

        written += write_plots(result.table, result.params, out, jobs=jobs,
                               on_figure=on_figure)
    return written


def _entries(corpus: Corpus) -> dict[str, Entry]:
    """run_id → its store entry (empty for in-memory corpora)."""
    return {rid: e for rid in corpus.run_ids if (e := corpus.entry_of(rid)) is not None}


def _run_keys(corpus: Corpus, ids: list[str], entries: dict[str, Entry]) -> dict[str, str]:
    """run_id → its cache key (runs of a store only)."""
    sha = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["sha256"].to_pylist()))
    return {rid: run_key(sha[rid], entries[rid]) for rid in ids if rid in entries}


def _lookup(cache_dir: Path | None, keys: dict[str, str], ids: list[str],
            settings: Sequence[Setting],
            cacheable: list[bool], dropped: list[str]) -> tuple[pd.DataFrame | None,
                                                                 dict[str, list[int]]]:
    """The cached rows of these settings (None: no cache was read), and per run the indices of
    the settings to compute; the runs whose cache file failed its check are appended to
    ``dropped``."""
    wanted = {s.id for s, ok in zip(settings, cacheable) if ok}
    found: list[pd.DataFrame] = []
    todo: dict[str, list[int]] = {}
    for rid in ids:
        have: set[str] = set()
        if cache_dir is not None and rid in keys:
            got = read_cached(cache_dir, rid, keys[rid])
            if got.damaged:
                dropped.append(rid)
            cached = got.rows
            found.append(cached[cached["setting"].isin(wanted)])
            have = set(found[-1]["setting"])
        todo[rid] = [i for i, s in enumerate(settings) if s.id not in have]
    return (pd.concat(found, ignore_index=True) if found else None), todo
