"""Where a sweep's units run: planning units of (run, batch of settings) and running them.

Units run

- in this process (``jobs=1``),
- in local worker processes (``jobs=N``, default one per core): joblib's loky
  executor, whose workers are fresh interpreters (not forks of a process that
  may hold threads) that need no ``if __name__ == "__main__"`` guard, and stay
  up between sweeps (the runs they loaded too: ``analysis.sweep.unit``) for a few minutes,
- or on a Dask cluster (``scheduler="tcp://host:port"`` or a ``distributed.Client``;
  the workers need ctxreplay installed and the store path readable).

Every executor runs the same pure ``analysis.sweep.unit.sweep_unit``, sharing replays the same
way, so every executor gives the same rows.

Not here: the work of a unit (``analysis.sweep.unit``), the table (``analysis.sweep.core``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from concurrent.futures import as_completed
from contextlib import contextmanager
from typing import Any

from joblib.externals.loky import get_reusable_executor

from analysis.sweep.unit import SweepUnit, UnitRows, run_tables, sweep_unit
from replay.corpus import Corpus
from replay.errors import ReplayInputError
from replay.ingest.store import Entry
from replay.workers import init_worker

UNITS_PER_WORKER = 8
"""Work units planned per worker: enough to balance runs of very different lengths."""
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


def plan(corpus: Corpus, todo: dict[str, list[int]], entries: dict[str, Entry],
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
        tables = None if entry is not None else run_tables(corpus, rid)
        root = str(corpus.root) if entry is not None else ""
        for lo in range(0, len(ix), size):
            units.append(SweepUnit(rid, tuple(ix[lo:lo + size]), root, entry, tables,
                                   allow_python))
    return units


def execute(units: list[SweepUnit], blob: bytes, *, jobs: int,
            client: Any) -> Iterator[UnitRows]:
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
