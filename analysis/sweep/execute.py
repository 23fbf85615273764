"""Where a sweep's units run: planning units of (run, batch of settings) and running them.

Units run

- in this process (``jobs=1``),
- in local worker processes (``jobs=N``, default one per core): joblib's loky
  executor, whose workers are fresh interpreters (not forks of a process that
  may hold threads) that need no ``if __name__ == "__main__"`` guard, and stay
  up between sweeps (the runs they loaded too: ``analysis.sweep.unit``) until idle
  for ``replay.workers.IDLE_SECONDS`` (5 minutes; loky's default, 10 s, lost them after any
  pause),
- or on a Dask cluster (``scheduler="tcp://host:port"`` or a ``distributed.Client``;
  the workers need ctxreplay installed and the store path readable).

Every executor runs the same pure ``analysis.sweep.unit.sweep_unit``, sharing replays the same
way, so every executor gives the same rows.

Not here: the work of a unit (``analysis.sweep.unit``), the table (``analysis.sweep.core``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from joblib.externals.loky import get_reusable_executor

from analysis.sweep.unit import (
    KEEP_LOADED_REQUESTS,
    SweepUnit,
    UnitRows,
    keep_runs,
    run_tables,
    sweep_units,
)
from replay.corpus import Corpus
from replay.errors import ReplayInputError
from replay.ingest.store import Entry
from replay.workers import IDLE_SECONDS, init_worker

UNITS_PER_WORKER = 8
"""Work units planned per worker: enough to balance runs of very different lengths."""
MIN_TASK_REQUESTS = 1500
"""Request-replays a task carries at least (some 7 ms of a worker's CPU): sending a task and
its rows back costs the parent ~0.3 ms and the pool's threads as much again, so a small sweep
cut into ``UNITS_PER_WORKER`` pieces a worker would pay more for shipping than it saves by
balancing.  Never more than a worker's share: every worker still gets a task."""
_REPLAY_OVERHEAD_REQUESTS = 5
"""A replay's fixed cost, in requests' worth, when sizing units."""
INLINE_BELOW_REQUESTS = 50_000
"""Request-replays below which ``jobs=0`` stays in this process (about two seconds of work;
starting worker processes, each importing the libraries, costs more)."""


def auto_jobs(corpus: Corpus, todo: dict[str, list[int]]) -> int:
    """One worker per core, or none for a sweep too small to pay for starting them."""
    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    work = sum((n_req[rid] + _REPLAY_OVERHEAD_REQUESTS) * len(ix) for rid, ix in todo.items())
    return 1 if work < INLINE_BELOW_REQUESTS else _cores()


def _cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


Task = tuple[SweepUnit, ...]
"""Units sent to a worker together (``plan``)."""


def plan(corpus: Corpus, todo: dict[str, list[int]], entries: dict[str, Entry],
         workers: int, allow_python: bool) -> list[Task]:
    """Units of (run, batch of settings) sized to balance ``workers``, the longest runs first,
    grouped into tasks of about one balancing share each.

    A run's units are consecutive, so a worker moves from run to run rather than back
    and forth, and prepares each run once (its per-run memo tables warm up once too).  A run
    shorter than a share is one unit, and consecutive short units travel as one task: sending a
    task to a worker and its rows back costs a few milliseconds of CPU, as much as replaying a
    short run for several settings.
    """
    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    cost = {rid: n_req[rid] + _REPLAY_OVERHEAD_REQUESTS for rid in todo}
    total = sum(cost[rid] * len(ix) for rid, ix in todo.items())
    per_worker = total / max(workers, 2)  # the floor never leaves a worker without a task
    target = max(1.0, min(MIN_TASK_REQUESTS, per_worker), per_worker / UNITS_PER_WORKER)
    tasks: list[Task] = []
    task: list[SweepUnit] = []
    task_cost = 0.0
    for rid in sorted(todo, key=lambda r: (-cost[r] * len(todo[r]), r)):
        ix = todo[rid]
        if not ix:
            continue
        n_units = math.ceil(cost[rid] * len(ix) / target)
        size = math.ceil(len(ix) / n_units)
        entry = entries.get(rid)
        tables = None if entry is not None else run_tables(corpus, rid)
        root = str(corpus.root) if entry is not None else ""
        for lo in range(0, len(ix), size):
            task.append(SweepUnit(rid, tuple(ix[lo:lo + size]), root, entry, tables,
                                  allow_python))
            task_cost += cost[rid] * len(task[-1].indices)
            if task_cost >= target:
                tasks.append(tuple(task))
                task, task_cost = [], 0.0
    if task:
        tasks.append(tuple(task))
    return tasks


def execute(tasks: list[Task], blob: bytes, *, jobs: int, client: Any,
            on_last: Callable[[], None] | None = None) -> Iterator[UnitRows]:
    """Each unit's rows, as tasks finish, on the chosen executor.

    ``on_last``: called once, on a pool of workers (local or Dask), when one task is left
    running (the others' workers are free: work the caller does then takes no worker's core);
    never in this process (``jobs=1``)."""
    if not tasks:
        return
    if client is not None:
        # lazy: distributed is the optional dask extra, needed only with a scheduler
        from distributed import as_completed as dask_completed

        shared = client.scatter(blob, broadcast=True)
        futures = client.map(sweep_units, tasks, blob=shared, pure=False)
        for done, fut in enumerate(dask_completed(futures), 1):  # type: ignore[no-untyped-call]
            yield from fut.result()
            fut.release()
            if on_last is not None and len(tasks) - done == 1:
                on_last()
    elif jobs <= 1 or len(tasks) == 1:
        for task in tasks:
            yield from sweep_units(task, blob)
    else:
        pool = get_reusable_executor(max_workers=min(jobs, len(tasks)), initializer=init_worker,
                                     initargs=(os.getpid(),), timeout=IDLE_SECONDS)
        futures = [pool.submit(sweep_units, t, blob, worker=True) for t in tasks]
        try:
            for done, fut in enumerate(as_completed(futures), 1):
                yield from fut.result()
                if on_last is not None and len(tasks) - done == 1:
                    on_last()
        finally:
            for fut in futures:
                fut.cancel()


WARM_ROUNDS = 8
"""Rounds of one load task per worker ``warm`` sends at most until every worker has run one."""


@dataclass(frozen=True, slots=True)
class Warmed:
    """What ``warm`` did."""

    n_workers: int
    """Workers of the pool that now keep the runs (fewer than asked: the pool gave some no
    task within ``WARM_ROUNDS`` rounds; they load a run when a unit first needs it)."""
    n_runs: int
    """Runs each of them keeps (the longest first, up to ``KEEP_LOADED_REQUESTS`` requests)."""
    n_loads: int
    """Runs read and prepared by the warm-up (the others were kept already)."""


def warm(corpus: Corpus, jobs: int) -> Warmed:
    """Start the local pool of ``jobs`` workers, as ``execute`` would, and have each load and
    keep the store's replayable runs, so that a sweep that follows reads and prepares none
    (``analysis.sweep.unit``; runs not in a store are carried by their units, never kept).

    The pool hands tasks to whichever worker is free: one task per worker is sent a round,
    until every worker has run one (a worker that has the runs already finishes at once)."""
    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    entries = {rid: e for rid in corpus.replayable() if (e := corpus.entry_of(rid)) is not None}
    runs: list[tuple[str, Entry]] = []
    kept = 0
    for rid in sorted(entries, key=lambda r: (-n_req[r], r)):
        if runs and kept + n_req[rid] > KEEP_LOADED_REQUESTS:
            break
        runs.append((rid, entries[rid]))
        kept += n_req[rid]
    if jobs <= 1 or not runs:
        loads = keep_runs(str(corpus.root), tuple(runs))[1] if runs else 0
        return Warmed(1, len(runs), loads)
    pool = get_reusable_executor(max_workers=jobs, initializer=init_worker,
                                 initargs=(os.getpid(),), timeout=IDLE_SECONDS)
    seen: set[int] = set()
    loads = 0
    for _ in range(WARM_ROUNDS):
        for fut in [pool.submit(keep_runs, str(corpus.root), tuple(runs), worker=True) for _ in range(jobs)]:
            pid, n = fut.result()
            seen.add(pid)
            loads += n
        if len(seen) >= jobs:
            break
    return Warmed(min(len(seen), jobs), len(runs), loads)


@contextmanager
def dask_client(scheduler: Any) -> Iterator[Any]:
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
