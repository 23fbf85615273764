"""A sweep's unit of work (``analysis.sweep.unit``): the runs a process keeps between sweeps."""

from __future__ import annotations

import gc
import math
import os
import pickle
from collections import OrderedDict
from typing import Any

import pytest

from analysis.per_run.fast_metrics import METRIC_COLUMNS, fast_metrics
from analysis.run_facts import run_facts
from analysis.sweep import unit
from analysis.sweep.core import sweep
from analysis.sweep.execute import warm
from analysis.sweep.grid import make_spec, settings
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.policy import load_policy


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each run the unit module prepares from its store, by id, from now on (none kept yet)."""
    loads: list[str] = []
    real = unit.run_facts

    def counted(corpus: Corpus, run_id: str, *args: Any) -> Any:
        loads.append(run_id)
        return real(corpus, run_id, *args)

    monkeypatch.setattr(unit, "_loaded", OrderedDict())
    monkeypatch.setattr(unit, "run_facts", counted)
    return loads


def test_a_second_sweep_in_the_same_process_loads_no_run_again(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within the kept requests, every run is read and prepared once per process: a second
    sweep of other settings gives its own rows without loading any run again."""
    loads = _counting_loads(monkeypatch)
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [50000, 90000]}))
    ids = sample_corpus.replayable()
    n_requests = sum(sample_corpus.runs["n_requests"].to_pylist())
    assert n_requests <= unit.KEEP_LOADED_REQUESTS  # the samples fit: all are kept
    first_sweep = sweep(sample_corpus, grid[:1], jobs=1)
    first = first_sweep.table
    assert sorted(loads) == sorted(ids)
    assert first_sweep.stats.n_runs_loaded == len(ids)  # said where the user sees it
    second_sweep = sweep(sample_corpus, grid[1:], jobs=1)
    second = second_sweep.table
    assert sorted(loads) == sorted(ids)  # nothing loaded again
    assert second_sweep.stats.n_runs_loaded == 0
    assert set(first["setting"]) == {grid[0].id} and set(second["setting"]) == {grid[1].id}
    assert len(second) == len(ids)


def test_the_runs_kept_are_bounded_by_their_requests(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the bound, the least recently used runs are let go (the last two always stay), and
    a run let go is loaded again when asked for."""
    loads = _counting_loads(monkeypatch)
    monkeypatch.setattr(unit, "KEEP_LOADED_REQUESTS", 1)
    policy = load_policy("two-tier-corrected")
    grid = settings(policy, make_spec({"tiers.1.trigger.at_tokens": [50000]}))
    ids = sample_corpus.replayable()
    sweep(sample_corpus, grid, jobs=1)
    assert len(unit._loaded) == 2
    sweep(sample_corpus, grid, jobs=1)
    # the two kept are the first sweep's last two runs, asked last again: let go by then
    assert sorted(loads) == sorted(ids * 2)


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets an item for each replay the sweep units make from now on."""
    calls: list[int] = []
    real = unit.replay

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(unit, "replay", counted)
    return calls


def test_the_stats_count_the_replays_made(sample_corpus: Corpus,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``n_replays`` is the number of replays the units made, fewer than the rows computed when
    settings share (summary triggers that never fire on the short runs)."""
    calls = _count_replays(monkeypatch)
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [40000, 70000, 100000]}))
    stats = sweep(sample_corpus, grid, jobs=1).stats
    assert stats.n_replays == len(calls)
    assert stats.n_replays < stats.n_computed == len(grid) * len(sample_corpus.replayable())


def test_a_replay_that_repeats_the_previous_one_takes_its_row(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """Protected fractions of the trim tier: on runs where the boundary they set never moves
    what a trim touches, consecutive replays come out the same and share one row of metrics;
    every cell still equals its own setting's replay's row, and ``n_replays`` still counts
    every replay made."""
    calls = _count_replays(monkeypatch)
    grid = settings(load_policy("two-tier-corrected"), make_spec(
        {"tiers.0.protect.frac": [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]}))
    result = sweep(sample_corpus, grid, jobs=1)
    monkeypatch.undo()
    stats, table = result.stats, result.table
    assert stats.n_replays == len(calls)
    assert 0 < stats.n_repeated < stats.n_replays
    assert table["tokens_sent"].nunique() > 1
    for rid in sample_corpus.replayable():
        facts = run_facts(sample_corpus, rid)
        for s in grid:
            own = fast_metrics(facts, replay(sample_corpus.prepared(rid), s.policy,
                                             calibration=sample_corpus.calibration(rid)),
                               s.policy)
            row = table[(table["setting"] == s.id) & (table["run_id"] == rid)].iloc[0]
            for col in METRIC_COLUMNS:
                a, b = row[col], own[col]
                assert a == b or (math.isnan(a) and math.isnan(b)), (rid, s.params, col)


def test_warming_loads_every_run_once_and_the_sweep_after_loads_none(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """``warm`` in this process reads and prepares each run once (a second warm-up reads
    none), and a sweep that follows loads none."""
    loads = _counting_loads(monkeypatch)
    ids = sample_corpus.replayable()
    warmed = warm(sample_corpus, 1)
    assert (warmed.n_workers, warmed.n_runs, warmed.n_loads) == (1, len(ids), len(ids))
    assert sorted(loads) == sorted(ids)
    assert warm(sample_corpus, 1).n_loads == 0
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [50000]}))
    assert sweep(sample_corpus, grid, jobs=1).stats.n_runs_loaded == 0
    assert sorted(loads) == sorted(ids)


def test_warming_the_workers_loads_every_run_in_each(sample_corpus: Corpus) -> None:
    """With two workers each keeps every run: a sweep on them after loads none, whichever
    worker each unit lands on."""
    warmed = warm(sample_corpus, 2)
    assert (warmed.n_workers, warmed.n_runs) == (2, len(sample_corpus.replayable()))
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [45000, 95000]}))
    result = sweep(sample_corpus, grid, jobs=2)
    assert result.stats.n_units > 2 and result.stats.n_workers == 2
    assert result.stats.n_runs_loaded == 0
    # the pool's workers moved what they loaded out of the collector's reach (``keep_loaded``)
    from joblib.externals.loky import reusable_executor

    pool = reusable_executor._executor
    assert pool is not None
    pid, frozen = pool.submit(_frozen).result()
    assert pid != os.getpid() and frozen > 1000


def _frozen() -> tuple[int, int]:
    """A process's id and the objects it has frozen (``gc.freeze``)."""
    return os.getpid(), gc.get_freeze_count()


def test_settings_are_replayed_in_an_order_that_lets_more_share(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """18 trim sizes (``min_chars``: neither a level nor a token protection, so settings that
    differ in it never share) inside 3 summary triggers: in the order given, a setting's
    trigger-mates are 18 settings back, out of the 16 replays kept to compare with; in the
    sweep's order (``share_rank``) they follow one another, and on runs that never reach the
    lowest trigger one replay per size stands for all three.  Same rows either way."""
    from analysis.sweep import core

    grid = settings(load_policy("two-tier-corrected"), make_spec({
        "tiers.1.trigger.at_tokens": [60000, 80000, 100000],
        "tiers.0.min_chars": [2000 + 100 * i for i in range(18)]}))
    assert unit.SHARED_SOURCES < 18
    n_req = dict(zip(sample_corpus.runs["run_id"].to_pylist(),
                     sample_corpus.runs["n_requests"].to_pylist()))
    short = sorted(sample_corpus.replayable(), key=lambda r: (n_req[r], r))[:3]
    ordered = sweep(sample_corpus, grid, jobs=1, run_ids=short)
    monkeypatch.setattr(core, "share_rank", lambda policies: list(range(len(policies))))
    as_given = sweep(sample_corpus, grid, jobs=1, run_ids=short)
    assert ordered.table.equals(as_given.table)
    assert ordered.stats.n_replays == 18 * len(short) < as_given.stats.n_replays


def test_a_task_runs_with_the_collector_paused_and_restores_it(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """The traces a unit keeps for its metrics are not walked by the cyclic collector while it
    works (``sweep_units``); it is on again after, and stays off if it was off."""
    seen: list[bool] = []
    real = unit.sweep_unit

    def watched(u: unit.SweepUnit, blob: bytes) -> unit.UnitRows:
        seen.append(gc.isenabled())
        return real(u, blob)

    monkeypatch.setattr(unit, "sweep_unit", watched)
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [50000, 90000]}))
    assert gc.isenabled()
    sweep(sample_corpus, grid, jobs=1)
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        sweep(sample_corpus, grid, jobs=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_only_the_pools_workers_move_the_runs_they_load_out_of_the_collector(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """``worker=True`` (the sweep's own pool) freezes what the process holds once it has loaded
    runs; a caller's process (``jobs=1``) and a worker that loaded nothing freeze nothing."""
    _counting_loads(monkeypatch)
    froze: list[int] = []
    monkeypatch.setattr(unit.gc, "freeze", lambda: froze.append(1))
    ids = sample_corpus.replayable()
    runs = tuple((rid, e) for rid in ids[:2] if (e := sample_corpus.entry_of(rid)) is not None)
    root = str(sample_corpus.root)
    assert unit.keep_runs(root, runs)[1] == 2 and not froze  # a caller's process
    monkeypatch.setattr(unit, "_loaded", OrderedDict())
    assert unit.keep_runs(root, runs, worker=True)[1] == 2 and len(froze) == 1
    assert unit.keep_runs(root, runs, worker=True)[1] == 0 and len(froze) == 1  # kept: no load
    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [50000]}))
    blob = pickle.dumps([(s.id, s.policy) for s in grid])
    task = tuple(unit.SweepUnit(rid, (0,), root, e, None, False) for rid, e in runs)
    unit.sweep_units(task, blob, worker=True)  # runs kept: nothing loaded, nothing frozen
    assert len(froze) == 1
    monkeypatch.setattr(unit, "_loaded", OrderedDict())
    unit.sweep_units(task, blob)  # loaded, but not a pool's worker
    assert len(froze) == 1
    monkeypatch.setattr(unit, "_loaded", OrderedDict())
    unit.sweep_units(task, blob, worker=True)
    assert len(froze) == 2


def test_the_settings_blob_gives_back_the_settings_default_pickling_gives() -> None:
    from replay.policy.doc import preset_names

    grid = settings(load_policy("two-tier-corrected"),
                    make_spec({"tiers.1.trigger.at_tokens": [40000, 90000],
                               "tiers.0.protect.frac": [0.05, 0.5]}))
    pairs = [(s.id, s.policy) for s in grid] + [(n, load_policy(n)) for n in preset_names()]
    hash(pairs[0][1].estimator)  # kept in its HashedOnce slot, outside the fields
    got = pickle.loads(unit.settings_blob(pairs))
    want = pickle.loads(pickle.dumps(pairs, protocol=pickle.HIGHEST_PROTOCOL))
    assert got == want == pairs
    assert [p.digest() for _, p in got] == [i for i, _ in pairs[:len(grid)]] + [
        p.digest() for _, p in pairs[len(grid):]]
    assert pickle.dumps(got) == pickle.dumps(want)  # every field, of the same types
    assert not hasattr(got[0][1].estimator, "_hash") and not hasattr(want[0][1].estimator, "_hash")
    assert unit._settings_of(unit.settings_blob(pairs))[0] == pairs
