"""Planning a sweep's work (``analysis.sweep.execute.plan``): units of one run, grouped in tasks."""

from __future__ import annotations

import pytest

from analysis.sweep.execute import _REPLAY_OVERHEAD_REQUESTS, MIN_TASK_REQUESTS, plan
from replay.corpus import Corpus


@pytest.mark.parametrize(("n_settings", "workers"), [(1, 2), (10, 2), (100, 2), (1000, 4)])
def test_every_cell_is_planned_once_and_short_runs_travel_together(
        sample_corpus: Corpus, n_settings: int, workers: int) -> None:
    ids = sample_corpus.replayable()
    todo = {rid: list(range(n_settings)) for rid in ids}
    entries = {rid: e for rid in ids if (e := sample_corpus.entry_of(rid)) is not None}
    tasks = plan(sample_corpus, todo, entries, workers, allow_python=False)
    units = [u for task in tasks for u in task]
    cells = sorted((u.run_id, i) for u in units for i in u.indices)
    assert cells == sorted((rid, i) for rid in ids for i in range(n_settings))
    # a run's units are consecutive (a worker prepares it once) ...
    order = [u.run_id for u in units]
    assert all(order.index(rid) + order.count(rid) - 1 == len(order) - 1 - order[::-1].index(rid)
               for rid in set(order))
    # ... and the 25 sample runs, most far shorter than a balancing share, make fewer trips than
    # units, yet enough for every worker
    assert len(units) >= len(ids)
    assert workers <= len(tasks) < len(units)


def test_a_small_sweeps_tasks_carry_at_least_the_floor(sample_corpus: Corpus) -> None:
    """10 settings over the samples on 2 workers: ~12,000 request-replays, whose eighths of a
    worker's share (~750) would each cost as much to ship as a good part of their replays;
    every task but the last carries ``MIN_TASK_REQUESTS`` (counted here from the runs)."""
    ids = sample_corpus.replayable()
    todo = {rid: list(range(10)) for rid in ids}
    entries = {rid: e for rid in ids if (e := sample_corpus.entry_of(rid)) is not None}
    n_req = dict(zip(sample_corpus.runs["run_id"].to_pylist(),
                     sample_corpus.runs["n_requests"].to_pylist()))
    total = sum((n_req[rid] + _REPLAY_OVERHEAD_REQUESTS) * 10 for rid in ids)
    assert MIN_TASK_REQUESTS < total / 2
    tasks = plan(sample_corpus, todo, entries, 2, allow_python=False)
    carried = [sum((n_req[u.run_id] + _REPLAY_OVERHEAD_REQUESTS) * len(u.indices) for u in task)
               for task in tasks]
    assert sum(carried) == total
    assert all(c >= MIN_TASK_REQUESTS for c in carried[:-1])
    assert 2 <= len(tasks) <= total // MIN_TASK_REQUESTS
