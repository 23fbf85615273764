"""Planning a sweep's work (``analysis.sweep.execute.plan``): units of one run, grouped in tasks."""

from __future__ import annotations

import pytest

from analysis.sweep.execute import plan
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
