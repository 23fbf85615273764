"""Threshold sweeps: every setting of a grid replayed over every run, one row per (run, setting).

``sweep(corpus, settings)`` splits the work into units of one run and a batch of
settings.  A unit opens that run's store entry only (``replay.ingest.store``), prepares
the run and its policy-independent facts once, replays each setting of the
batch and computes its metrics (``analysis.per_run.fast_metrics``), and returns small
rows (as column lists: the caller makes one frame of all); so a worker's memory is bounded by
the largest run, not the archive.  Settings share replays: a setting whose replay is certain to
repeat one already made in the unit (the tiers it changes never opened their gate there, and
stay shut at every level compared: ``replay.engine.share``) takes that trace instead of
replaying, and that replay's metric row (the metrics read the trace and the policy's fields
outside its tiers, equal for both).  Every executor, Dask's too, runs the same ``sweep_unit``.
Units run

- in this process (``jobs=1``),
- in local worker processes (``jobs=N``, default one per core): joblib's loky
  executor, whose workers are fresh interpreters (not forks of a process that
  may hold threads) that need no ``if __name__ == "__main__"`` guard, and stay
  up between sweeps (their last prepared runs too) for a few minutes,
- or on a Dask cluster (``scheduler="tcp://host:port"`` or a ``distributed.Client``;
  the workers need ctxreplay installed and the store path readable).

The same pure function computes every unit, and the table is sorted by
(run_id, setting), so every executor gives the same table.  Rows already in the
cache (``analysis.sweep.cache``) for the same run data, policy digest, engine and
metrics versions are reused: extending a grid computes only the new cells.

The table: ``run_id``, ``source``, ``setting`` (the policy digest), one column per
swept path, ``policy``, then the ``metrics()`` columns.  ``write_sweep`` writes it as
Parquet and CSV with ``settings.json`` and the plots of ``analysis.sweep.plots``.

Not here: grids and designs (``analysis.sweep.grid``), choosing a setting (``analysis.sweep.pareto``).
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from joblib.externals.loky import get_reusable_executor

from analysis.metric_spec import RunFacts
from analysis.per_run.fast_metrics import METRIC_COLUMNS, fast_metrics
from analysis.run_facts import run_facts
from analysis.sweep.cache import (
    ROW_COLUMNS,
    columns_frame,
    read_cached,
    rows_frame,
    run_key,
    write_cached,
)
from analysis.sweep.choice import ChoiceRule, chosen_yaml
from analysis.sweep.grid import Setting
from analysis.sweep.plots import write_plots
from replay.atomic_files import atomic_write_bytes, make_output_dir
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.engine.prepared import Calibration, PreparedRun
from replay.engine.probe import Probe
from replay.engine.share import same_trace
from replay.errors import ReplayError, ReplayInputError
from replay.ingest.store import Entry
from replay.policy import Custom, Policy, policy_to_dict
from replay.safe_text import csv_cell
from replay.workers import init_worker

UNITS_PER_WORKER = 8
"""Work units planned per worker: enough to balance runs of very different lengths."""
_REPLAY_OVERHEAD_REQUESTS = 5
"""A replay's fixed cost, in requests' worth, when sizing units."""
SHARED_SOURCES = 16
"""Replays of a unit kept to stand for later settings (``sweep_unit``)."""
INLINE_BELOW_REQUESTS = 50_000
"""Request-replays below which ``jobs=0`` stays in this process (about two seconds of work;
starting worker processes, each importing the libraries, costs more)."""


@dataclass(frozen=True, slots=True)
class SweepStats:
    """What a sweep did."""

    n_runs: int
    n_settings: int
    n_computed: int
    """(run, setting) rows replayed now."""
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


@dataclass(frozen=True, slots=True)
class SweepUnit:
    """One run and the indices of the settings to replay over it."""

    run_id: str
    indices: tuple[int, ...]
    root: str
    entry: Entry | None
    """The run's store entry (None: ``tables`` carries the run)."""
    tables: tuple[pa.Table, pa.Table, pa.Table] | None
    """runs, messages, requests of the run, for corpora that are not a store."""
    allow_python: bool


def sweep(corpus: Corpus, settings: Sequence[Setting], *, jobs: int = 0,
          scheduler: Any = None, cache_dir: Path | None = None, allow_python: bool = False,
          run_ids: Sequence[str] | None = None,
          on_row: Callable[[str], None] | None = None) -> SweepResult:
    """Replay every setting over every run and compute every metric.

    Args:
        corpus: the runs (a store, as ``open_corpus`` gives; in-memory corpora work too).
        settings: the settings (``analysis.sweep.grid.settings``).
        jobs: local worker processes (0: one per core, or this process when the sweep is
            smaller than ``INLINE_BELOW_REQUESTS``; 1: in this process).
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
    if on_row:
        for rid in reused["run_id"]:
            on_row(rid)
    blob = pickle.dumps([(s.id, s.policy) for s in settings], protocol=pickle.HIGHEST_PROTOCOL)
    computed: dict[str, list[Any]] = {c: [] for c in ROW_COLUMNS}
    with _dask_client(scheduler) as client:
        workers = (sum(client.nthreads().values()) if client is not None else
                   jobs if jobs > 0 else _auto_jobs(corpus, todo))
        units = _plan(corpus, todo, entries, workers, allow_python)
        for columns in _execute(units, blob, jobs=workers, client=client):
            for c, values in columns.items():
                computed[c] += values
            if on_row:
                for rid in columns["run_id"]:
                    on_row(rid)
    new = columns_frame(computed)
    unwritten: list[str] = []
    if cache_dir is not None:
        keep = {s.id for s, ok in zip(settings, cacheable) if ok}
        for rid, rows in new[new["setting"].isin(keep)].groupby("run_id", sort=True):
            if rid in keys:
                try:
                    write_cached(cache_dir, str(rid), keys[str(rid)], rows)
                except OSError as exc:  # a full disk: the rows computed are kept in the result
                    unwritten.append(exc.strerror or str(exc))
    pool = min(workers, len(units)) if client is None and workers > 1 and len(units) > 1 else 1
    stats = SweepStats(len(ids), len(settings), len(new), len(reused), len(units), pool,
                       n_cache_dropped=len(dropped), n_cache_unwritten=len(unwritten),
                       cache_error=unwritten[0] if unwritten else "")
    return SweepResult(_table(pd.concat([reused, new], ignore_index=True), settings, corpus),
                       tuple(settings), stats)


def sweep_unit(unit: SweepUnit, blob: bytes) -> dict[str, list[Any]]:
    """Replay a unit's settings over its run: one row per setting, as columns.

    The work function every executor runs; pure (same unit and settings, same rows).
    Rows travel as plain column lists; the caller makes one frame of every unit's
    (``analysis.sweep.cache.columns_frame``).

    Args:
        unit: the run and the settings' indices.
        blob: every setting of the sweep, pickled once as ``[(id, policy), ...]``.

    Returns:
        ``ROW_COLUMNS`` → the unit's values, one per setting.
    """
    run, calibration, facts = (_store_run(unit.root, unit.entry, unit.run_id)
                               if unit.entry is not None else _table_run(unit))
    everything = _settings_of(blob)
    out = []
    sources: list[tuple[Policy, Probe, tuple[Any, ...]]] = []
    """Replays made so far, newest used first, with their metric values: a setting one of them
    stands for is not replayed, and its metrics are that replay's (they read the trace and the
    policy's fields outside its tiers, which are the same: ``analysis.per_run``)."""
    for i in unit.indices:
        sid, policy = everything[i]
        values = _shared(sources, policy)
        if values is None:
            probe = Probe()
            try:
                trace = replay(run, policy, calibration=calibration,
                               allow_python=unit.allow_python, probe=probe)
            except ReplayError as exc:  # re-raised as a plain-message error that pickles
                raise ReplayInputError(f"run {unit.run_id}, setting {sid}: {exc}") from None
            values = tuple(fast_metrics(facts, trace, policy).values())
            sources.insert(0, (policy, probe, values))
            del sources[SHARED_SOURCES:]
        out.append((sid, *values))
    return dict(zip(ROW_COLUMNS, map(list, zip(*out)))) if out else {c: [] for c in ROW_COLUMNS}


def _shared(sources: list[tuple[Policy, Probe, tuple[Any, ...]]],
            policy: Policy) -> tuple[Any, ...] | None:
    """The metric values of a replay made for another setting that ``policy``'s replay would
    repeat exactly (``replay.engine.share.same_trace``), moved to the front; None when none."""
    for k, (source, probe, values) in enumerate(sources):
        if same_trace(source, probe, policy):
            if k:
                sources.insert(0, sources.pop(k))
            return values
    return None


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
    pq.write_table(pa.Table.from_pandas(result.table, preserve_index=False), buf,
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
            cacheable: list[bool], dropped: list[str]) -> tuple[pd.DataFrame,
                                                                 dict[str, list[int]]]:
    """The cached rows of these settings, and per run the indices of the settings to compute;
    the runs whose cache file failed its check are appended to ``dropped``."""
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
    return (pd.concat(found, ignore_index=True) if found else rows_frame([])), todo


def _auto_jobs(corpus: Corpus, todo: dict[str, list[int]]) -> int:
    """One worker per core, or none for a sweep too small to pay for starting them."""
    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    work = sum((n_req[rid] + _REPLAY_OVERHEAD_REQUESTS) * len(ix) for rid, ix in todo.items())
    return 1 if work < INLINE_BELOW_REQUESTS else _cores()


def _cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _plan(corpus: Corpus, todo: dict[str, list[int]], entries: dict[str, Entry],
          workers: int, allow_python: bool) -> list[SweepUnit]:
    """Units of (run, batch of settings) sized to balance ``workers``, the longest runs first.

    A run's units are consecutive, so a worker moves from run to run rather than back
    and forth, and prepares each run once (its per-run memo tables warm up once too).
    """
    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    cost = {rid: n_req[rid] + _REPLAY_OVERHEAD_REQUESTS for rid in todo}
    total = sum(cost[rid] * len(ix) for rid, ix in todo.items())
    target = max(1.0, total / (max(workers, 2) * UNITS_PER_WORKER))
    units = []
    for rid in sorted(todo, key=lambda r: (-cost[r] * len(todo[r]), r)):
        ix = todo[rid]
        if not ix:
            continue
        n_units = math.ceil(cost[rid] * len(ix) / target)
        size = math.ceil(len(ix) / n_units)
        entry = entries.get(rid)
        tables = None if entry is not None else _run_tables(corpus, rid)
        root = str(corpus.root) if entry is not None else ""
        for lo in range(0, len(ix), size):
            units.append(SweepUnit(rid, tuple(ix[lo:lo + size]), root, entry, tables,
                                   allow_python))
    return units


def _execute(units: list[SweepUnit], blob: bytes, *, jobs: int,
             client: Any) -> Iterator[dict[str, list[Any]]]:
    """Each unit's rows, as units finish, on the chosen executor."""
    if not units:
        return
    if client is not None:
        # lazy: distributed is the optional dask extra, needed only with a scheduler
        from distributed import as_completed as dask_completed

        shared = client.scatter(blob, broadcast=True)
        futures = client.map(sweep_unit, units, blob=shared, pure=False)
        for fut in dask_completed(futures):  # type: ignore[no-untyped-call]
            yield fut.result()
            fut.release()
    elif jobs <= 1 or len(units) == 1:
        for unit in units:
            yield sweep_unit(unit, blob)
    else:
        pool = get_reusable_executor(max_workers=min(jobs, len(units)), initializer=init_worker,
                                     initargs=(os.getpid(),))
        futures = [pool.submit(sweep_unit, u, blob) for u in units]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()


@contextmanager
def _dask_client(scheduler: Any) -> Iterator[Any]:
    """A Dask client for a scheduler address (closed after), the given client, or None."""
    if scheduler is None:
        yield None
        return
    try:
        # lazy: distributed is the optional dask extra, needed only with a scheduler
        from distributed import Client
    except ImportError:
        raise ReplayInputError("a Dask scheduler needs the dask extra: "
                               "pip install 'ctxreplay[dask]'") from None
    if isinstance(scheduler, Client):
        yield scheduler
        return
    try:
        client = Client(scheduler, timeout=30)  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise ReplayInputError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    with client:
        yield client


@functools.lru_cache(maxsize=2)
def _store_run(root: str, entry: Entry, run_id: str) -> tuple[PreparedRun, Calibration | None,
                                                                RunFacts]:
    """A run of a store, prepared, with its calibration and facts (the last two kept)."""
    corpus = Corpus(Path(root), [entry], keep_prepared=1)
    return corpus.prepared(run_id), corpus.calibration(run_id), run_facts(corpus, run_id)


def _table_run(unit: SweepUnit) -> tuple[PreparedRun, Calibration | None, RunFacts]:
    assert unit.tables is not None
    corpus = Corpus.from_tables(*unit.tables)
    return (corpus.prepared(unit.run_id), corpus.calibration(unit.run_id),
            run_facts(corpus, unit.run_id))


@functools.lru_cache(maxsize=2)
def _settings_of(blob: bytes) -> list[tuple[str, Any]]:
    """The sweep's settings, unpickled once per process and sweep."""
    return pickle.loads(blob)  # type: ignore[no-any-return]


def _run_tables(corpus: Corpus, run_id: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    messages, requests = corpus.run_tables(run_id)
    runs = corpus.runs.filter(pc.equal(corpus.runs["run_id"], run_id))
    return runs, messages, requests


def _table(rows: pd.DataFrame, settings: Sequence[Setting], corpus: Corpus) -> pd.DataFrame:
    """The tidy table: keys, source, parameters, policy, metrics; sorted by run and setting."""
    source = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["source"].to_pylist()))
    out = pd.DataFrame({"run_id": rows["run_id"].astype(str),
                        "source": rows["run_id"].map(source).fillna("").astype(str),
                        "setting": rows["setting"].astype(str)})
    params = [p for p, _ in settings[0].params] if settings else []
    values = {s.id: dict(s.params) for s in settings}
    for p in params:
        out[p] = pd.Series([values[s][p] for s in out["setting"]], index=out.index,
                           dtype="object").infer_objects()
    out = pd.concat([out, rows[["policy", *METRIC_COLUMNS]]], axis=1)
    return out.sort_values(["run_id", "setting"], kind="stable").reset_index(drop=True)
