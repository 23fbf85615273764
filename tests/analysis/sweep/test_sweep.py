"""Sweeps: the fast metrics equal the pandas analyses (``metrics_by_analyses``), a sweep equals
individual runs, every executor gives the same table, the cache computes only new cells. Grids
are in test_grid.py, choosing and the plots in test_pareto.py, what a sweep writes and the
command in test_sweep_command.py."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest

from analysis.metric_spec import RunFacts
from analysis.metrics_by_analyses import metrics_by_analyses
from analysis.per_run.fast_metrics import METRIC_COLUMNS, fast_metrics, metrics_frame
from analysis.per_run.rollup import ROLLUP_METRICS, RUN_ROLLUP
from analysis.run_facts import run_facts
from analysis.sweep.cache import read_cached
from analysis.sweep.core import sweep
from analysis.sweep.grid import apply, make_spec, settings
from replay.apply_policy import run
from replay.corpus import Corpus, open_corpus, replay_corpus
from replay.engine.fold import replay
from replay.errors import ReplayInputError
from replay.policy import Policy, load_policy, replace_path
from replay.workers import IDLE_SECONDS
from tests.analysis.conftest import Replayed
from tests.analysis.scenarios import corpus_of, reread_after_trim_run, write_heavy_run
from tests.analysis.sweep.small_grid import BASE, SMALL
from tests.preset_runs import PresetRun


@functools.cache
def _facts(corpus: Corpus, rid: str) -> RunFacts:
    """``run_facts`` of a run of the session's samples, read once for this module: they do not
    depend on the policy, and reading them again for each policy and setting (375 times the
    samples' 25 runs) was most of these tests' time."""
    return run_facts(corpus, rid)


def _fast_frame(corpus: Corpus, policy: Policy) -> pd.DataFrame:
    """The fast rows of one policy over the whole corpus, each run replayed here."""
    rows = [fast_metrics(_facts(corpus, rid),
                         replay(corpus.prepared(rid), policy, calibration=corpus.calibration(rid)),
                         policy) for rid in corpus.replayable()]
    return metrics_frame(rows).sort_values(["run_id", "policy"]).reset_index(drop=True)


@pytest.mark.parametrize("name", ["corecoder", "claude-code", "observation-masking", "none"])
def test_fast_metrics_equal_metrics_on_real_traces(
        sample_corpus: Corpus, preset_run: Callable[[str, Policy], PresetRun], name: str) -> None:
    """The pandas side is ``preset_run``'s (``metrics_by_analyses`` of the same replays over
    the samples, computed once for the session)."""
    policy = load_policy(name)
    fast, slow = _fast_frame(sample_corpus, policy), preset_run("samples", policy).by_analyses
    assert list(fast.columns) == list(slow.columns)
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=0)


def test_fast_metrics_equal_the_two_tier_metrics(sample_corpus: Corpus,
                                                  replayed: dict[str, Replayed]) -> None:
    both = pd.concat([rep.by_analyses for rep in replayed.values()])
    for col in ("rereads_n_eviction_induced", "cache_invalidation_n_small_trims",
                "cache_invalidation_n_below_min", "n_summaries", "overshoots_n_comparable"):
        assert both[col].sum() > 0, f"{col}: the comparison must bite"
    for rep in replayed.values():
        fast = metrics_frame([fast_metrics(_facts(sample_corpus, rid),
                                        replay(sample_corpus.prepared(rid), rep.policy,
                                               calibration=sample_corpus.calibration(rid)),
                                        rep.policy) for rid in sample_corpus.replayable()])
        fast = fast.sort_values(["run_id", "policy"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(fast, rep.by_analyses, check_exact=False, rtol=1e-12,
                                      atol=0)


def test_edge_fast_metrics_of_a_hand_built_reread_after_trim() -> None:
    corpus = corpus_of(reread_after_trim_run())
    policy = load_policy("two-tier-original")
    trace = replay_corpus(corpus, policy)
    fast = metrics_frame([fast_metrics(run_facts(corpus, "reread-after-trim"), trace, policy)])
    pd.testing.assert_frame_equal(fast, metrics_by_analyses(corpus, trace, policy))
    assert fast["rereads_n_eviction_induced"].iloc[0] == 1


def test_sweep_over_one_run_equals_replay_run_for_each_setting(samples: Path,
                                                              tmp_path: Path) -> None:
    corpus = open_corpus([next(samples.glob("claude-code/*.jsonl"))], cache_dir=tmp_path / "ds")
    chosen = settings(load_policy(BASE), make_spec(SMALL))
    table = sweep(corpus, chosen, jobs=1).table
    assert len(table) == len(chosen) * len(corpus.replayable()) == 4
    assert table["tokens_sent"].nunique() > 1 and table["n_trims"].nunique() > 1
    for s in chosen:
        alone = run(corpus, s.policy, rollup=RUN_ROLLUP)
        row = table[table["setting"] == s.id].iloc[0]
        summary = alone.rollup[0]
        for col in ROLLUP_METRICS:  # replay run's summary: the same names and values
            assert row[col] == summary[col], col
        full = metrics_by_analyses(corpus, alone.trace, s.policy).iloc[0]
        for col in METRIC_COLUMNS:
            assert row[col] == full[col] or (math.isnan(row[col]) and math.isnan(full[col])), col


def test_settings_that_share_a_replay_get_the_rows_of_their_own_replays(
        sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """A grid of summary triggers and emergency margins: the sweep replays fewer times than it has
    (run, setting) cells, and every cell equals that setting's own replay's row, exactly."""
    from analysis.sweep import unit

    chosen = settings(load_policy(BASE), make_spec({
        "tiers.1.trigger.at_tokens": [30000, 60000, 100000],
        "tiers.2.margin_frac": [0.05, 0.2, 0.4]}))
    calls = []
    real = unit.replay

    def counted(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(unit, "replay", counted)
    table = sweep(sample_corpus, chosen, jobs=1).table
    monkeypatch.undo()
    n_cells = len(chosen) * len(sample_corpus.replayable())
    assert len(table) == n_cells and len(calls) < n_cells / 2
    assert table["n_summaries"].nunique() > 1 and table["n_summaries"].max() > 0
    rows = {(r["setting"], r["run_id"]): r for r in table.to_dict(orient="records")}
    for s in chosen:
        for rid in sample_corpus.replayable():
            own = fast_metrics(_facts(sample_corpus, rid),
                               replay(sample_corpus.prepared(rid), s.policy,
                                      calibration=sample_corpus.calibration(rid)), s.policy)
            row = rows[s.id, rid]
            for col in METRIC_COLUMNS:
                a, b = row[col], own[col]
                assert a == b or (math.isnan(a) and math.isnan(b)), (rid, s.params, col)


def test_local_processes_and_a_dask_cluster_give_identical_tables(sample_corpus: Corpus,
                                                                  tmp_path: Path) -> None:
    import distributed
    from typer.testing import CliRunner

    from replay.cli import app

    chosen = settings(load_policy(BASE), make_spec(SMALL))
    inline = sweep(sample_corpus, chosen, jobs=1)
    local = sweep(sample_corpus, chosen, jobs=2)
    # patch.dict: the nannies put their workers' settings into this process's environment
    # (OMP_NUM_THREADS=1, MALLOC_TRIM_THRESHOLD_, PYTHONHASHSEED, ...) and leave them there,
    # for every later test's subprocesses on this worker
    with mock.patch.dict(os.environ), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            dashboard_address=None) as cluster:
        on_dask = sweep(sample_corpus, chosen, scheduler=cluster.scheduler_address)
        cli = CliRunner().invoke(app, [
            "sweep", "-p", BASE, str(sample_corpus.root), "--out", str(tmp_path), "--no-plots",
            "--scheduler", cluster.scheduler_address, "-q", *(f"--axis={k}={','.join(map(str, v))}"
                                                            for k, v in SMALL.items())])
    assert cli.exit_code == 0, cli.output
    pd.testing.assert_frame_equal(inline.table, local.table, check_exact=True)
    pd.testing.assert_frame_equal(inline.table, on_dask.table, check_exact=True)
    pd.testing.assert_frame_equal(inline.table, pd.read_parquet(tmp_path / "sweep" /
                                                                "sweep.parquet"))
    assert len(inline.table) == 4 * len(sample_corpus.replayable())
    keys = list(zip(inline.table["run_id"], inline.table["setting"]))
    assert keys == sorted(keys)
    assert local.stats.n_units > 1 and on_dask.stats.n_units > 1


def test_extending_a_grid_computes_only_the_new_cells(sample_corpus: Corpus,
                                                      tmp_path: Path) -> None:
    base, cache = load_policy(BASE), tmp_path / "cache"
    n_runs = len(sample_corpus.replayable())
    first = sweep(sample_corpus, settings(base, make_spec(SMALL)), jobs=1, cache_dir=cache)
    assert (first.stats.n_computed, first.stats.n_reused) == (4 * n_runs, 0)
    wider = make_spec({**SMALL, "tiers.1.trigger.at_tokens": [40000, 80000, 120000]})
    seen: list[str] = []
    second = sweep(sample_corpus, settings(base, wider), jobs=2, cache_dir=cache,
                   on_row=seen.append)
    assert (second.stats.n_computed, second.stats.n_reused) == (2 * n_runs, 4 * n_runs)
    assert len(seen) == 6 * n_runs
    fresh = sweep(sample_corpus, settings(base, wider), jobs=1)
    pd.testing.assert_frame_equal(second.table, fresh.table, check_exact=True)
    again = sweep(sample_corpus, settings(base, wider), jobs=1, cache_dir=cache)
    assert (again.stats.n_computed, again.stats.n_units) == (0, 0)


def test_cache_rows_of_other_run_data_are_not_reused(sample_corpus: Corpus,
                                                     tmp_path: Path) -> None:
    rid = sample_corpus.replayable()[0]
    sweep(sample_corpus, settings(load_policy(BASE), make_spec(SMALL)), jobs=1,
          cache_dir=tmp_path, run_ids=[rid])
    files = list(tmp_path.glob("*.parquet"))
    assert [f.stem.rsplit("-", 1)[0] for f in files] == [rid]  # safe_names.file_name
    import pyarrow.parquet as pq

    key = pq.read_table(files[0])["run_key"][0].as_py()
    assert len(read_cached(tmp_path, rid, key).rows) == 4
    assert read_cached(tmp_path, rid, key.replace("trace", "trace-other")).rows.empty
    # a file an older ctxreplay wrote (no cache_format, its own checksum) is stale, not damaged:
    # not believed, not counted as dropped, and rewritten in this format
    table = pq.read_table(files[0])
    meta = {k: v for k, v in (table.schema.metadata or {}).items()
            if k != b"ctxreplay.cache_format"}
    pq.write_table(table.replace_schema_metadata(meta), files[0])
    got = read_cached(tmp_path, rid, key)
    assert got.rows.empty and not got.damaged
    again = sweep(sample_corpus, settings(load_policy(BASE), make_spec(SMALL)), jobs=1,
                  cache_dir=tmp_path, run_ids=[rid])
    assert (again.stats.n_computed, again.stats.n_cache_dropped) == (4, 0)
    assert len(read_cached(tmp_path, rid, key).rows) == 4


def test_the_cache_checksum_sees_every_value(tmp_path: Path) -> None:
    """A row's every value is in its file's checksum: a changed number, a number made
    unknown (null), a changed setting id each make the file damaged (``_checksum`` hashes
    numbers as bytes with their null mask, strings as JSON)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from analysis.sweep.cache import ROW_COLUMNS, rows_frame, write_cached

    floats = [c for c in ROW_COLUMNS[3:] if c.endswith("_share")][:1] or ["cost_usd"]
    rows = rows_frame([tuple(["s1", "r", "p"] + [1] * (len(ROW_COLUMNS) - 3)),
                       tuple(["s2", "r", "p"] + [2] * (len(ROW_COLUMNS) - 3))])
    path = write_cached(tmp_path, "r", "k", rows)
    assert len(read_cached(tmp_path, "r", "k").rows) == 2
    original = pq.read_table(path)
    edits = {"tokens_sent": [1, 3], floats[0]: [1.0, None], "setting": ["s1", "s3"]}
    for column, values in edits.items():
        i = original.schema.get_field_index(column)
        changed = original.set_column(i, original.schema.field(i),
                                      [pa.array(values, original.schema.field(i).type)])
        pq.write_table(changed, path)
        assert read_cached(tmp_path, "r", "k").damaged, column


def test_python_tiers_run_only_when_allowed_and_are_never_cached(tmp_path: Path) -> None:
    corpus = corpus_of(reread_after_trim_run())
    base = replace_path(load_policy("none"), "tiers",
                        [{"type": "custom", "class": "replay.engine.tiers.custom:DropStaleReads"}])
    chosen = [apply(base, {})]
    with pytest.raises(ReplayInputError, match="allow_python"):
        sweep(corpus, chosen, jobs=1)
    result = sweep(corpus, chosen, jobs=1, allow_python=True, cache_dir=tmp_path)
    assert len(result.table) == 1 and not list(tmp_path.iterdir())


def test_in_memory_corpora_sweep_in_worker_processes() -> None:
    corpus = corpus_of(write_heavy_run(), reread_after_trim_run())
    chosen = settings(load_policy("two-tier-original"),
                      make_spec({"tiers.1.keep_messages": [8, 24]}))
    local, inline = sweep(corpus, chosen, jobs=2), sweep(corpus, chosen, jobs=1)
    pd.testing.assert_frame_equal(local.table, inline.table, check_exact=True)
    heavy = inline.table[inline.table["run_id"] == "write-heavy"].set_index("tiers.1.keep_messages")
    assert heavy.loc[24, "n_summaries"] > heavy.loc[8, "n_summaries"]


def test_the_sweeps_pool_keeps_idle_workers_for_idle_seconds() -> None:
    # loky's default timeout (10 s) stopped idle workers, so a sweep after a pause started its
    # workers and read its runs again; the sweep, the warm-up and the plots share one pool
    from joblib.externals.loky import reusable_executor

    corpus = corpus_of(write_heavy_run(), reread_after_trim_run())
    chosen = settings(load_policy("two-tier-original"),
                      make_spec({"tiers.1.keep_messages": [8, 24]}))
    sweep(corpus, chosen, jobs=2)
    pool = reusable_executor._executor
    assert pool is not None and pool._timeout == IDLE_SECONDS > 60
