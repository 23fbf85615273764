"""Sweeps: the fast metrics equal ``metrics()``, a sweep equals individual runs, every executor
gives the same table, the cache computes only new cells, grids and choices behave."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.metrics import metrics
from analysis.per_run.fast_metrics import METRIC_COLUMNS, fast_metrics, metrics_frame
from analysis.per_run.rollup import ROLLUP_METRICS, RUN_ROLLUP
from analysis.run_facts import run_facts
from analysis.sweep.cache import read_cached
from analysis.sweep.core import sweep, write_sweep
from analysis.sweep.grid import MAX_CELLS, apply, load_grid, load_spec, make_spec, settings
from analysis.sweep.pareto import aggregate, best, pareto_front, plot_pareto
from replay.apply_policy import run
from replay.corpus import Corpus, open_corpus, replay_corpus
from replay.engine.fold import replay
from replay.errors import PolicyError, ReplayInputError
from replay.policy import load_policy, policy_to_dict, replace_path
from tests.analysis.conftest import Replayed
from tests.analysis.scenarios import corpus_of, reread_after_trim_run, write_heavy_run

BASE = "two-tier-corrected"
SMALL = {"tiers.0.min_reclaim_frac": [0, 0.125], "tiers.1.trigger.at_tokens": [40000, 80000]}
"""A 2 × 2 grid that changes trims, summaries and the cache (checked below)."""


def _fast_frame(corpus: Corpus, policy_name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fast rows, metrics()) of one policy over the whole corpus."""
    policy = load_policy(policy_name)
    rows = [fast_metrics(run_facts(corpus, rid),
                         replay(corpus.prepared(rid), policy, calibration=corpus.calibration(rid)),
                         policy) for rid in corpus.replayable()]
    fast = metrics_frame(rows).sort_values(["run_id", "policy"]).reset_index(drop=True)
    return fast, metrics(corpus, replay_corpus(corpus, policy), policy)


@pytest.mark.parametrize("name", ["corecoder", "claude-code", "observation-masking", "none"])
def test_fast_metrics_equal_metrics_on_real_traces(sample_corpus: Corpus, name: str) -> None:
    fast, slow = _fast_frame(sample_corpus, name)
    assert list(fast.columns) == list(slow.columns)
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=0)


def test_fast_metrics_equal_the_two_tier_metrics(sample_corpus: Corpus,
                                                  replayed: dict[str, Replayed]) -> None:
    both = pd.concat([rep.metrics for rep in replayed.values()])
    for col in ("rereads_n_eviction_induced", "cache_invalidation_n_small_trims",
                "cache_invalidation_n_below_min", "n_summaries", "overshoots_n_comparable"):
        assert both[col].sum() > 0, f"{col}: the comparison must bite"
    for rep in replayed.values():
        fast = metrics_frame([fast_metrics(run_facts(sample_corpus, rid),
                                        replay(sample_corpus.prepared(rid), rep.policy,
                                               calibration=sample_corpus.calibration(rid)),
                                        rep.policy) for rid in sample_corpus.replayable()])
        fast = fast.sort_values(["run_id", "policy"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(fast, rep.metrics, check_exact=False, rtol=1e-12, atol=0)


def test_edge_fast_metrics_of_a_hand_built_reread_after_trim() -> None:
    corpus = corpus_of(reread_after_trim_run())
    policy = load_policy("two-tier-original")
    trace = replay_corpus(corpus, policy)
    fast = metrics_frame([fast_metrics(run_facts(corpus, "reread-after-trim"), trace, policy)])
    pd.testing.assert_frame_equal(fast, metrics(corpus, trace, policy))
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
        full = metrics(corpus, alone.trace, s.policy).iloc[0]
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
    for s in chosen:
        for rid in sample_corpus.replayable():
            own = fast_metrics(run_facts(sample_corpus, rid),
                               replay(sample_corpus.prepared(rid), s.policy,
                                      calibration=sample_corpus.calibration(rid)), s.policy)
            row = table[(table["setting"] == s.id) & (table["run_id"] == rid)].iloc[0]
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
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
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


# --- grids ---------------------------------------------------------------------------------


def test_grid_is_the_product_in_order_with_whole_number_ranges() -> None:
    spec = make_spec({"tiers.0.min_reclaim_frac": [0, 0.0625, 0.125],
                      "tiers.1.trigger.at_tokens": {"start": 40000, "stop": 120000, "num": 5}})
    chosen = settings(load_policy(BASE), spec)
    assert spec.size == len(chosen) == 15
    assert chosen[0].params == (("tiers.0.min_reclaim_frac", 0.0),
                                ("tiers.1.trigger.at_tokens", 40000))
    assert [dict(s.params)["tiers.1.trigger.at_tokens"] for s in chosen[:5]] == [
        40000, 60000, 80000, 100000, 120000]
    assert len({s.id for s in chosen}) == 15
    assert all(s.id == s.policy.digest() for s in chosen)


def test_step_ranges_include_the_stop_and_float_ranges_stay_floats() -> None:
    spec = make_spec({"tiers.2.margin_frac": {"start": 0.1, "stop": 0.3, "step": 0.05}})
    assert spec.axes[0].points() == (0.1, 0.15, 0.2, 0.25, 0.3)


def test_random_design_is_seeded_and_stays_within_bounds() -> None:
    axes = {"tiers.0.protect.frac": {"start": 0.1, "stop": 0.5, "num": 2},
            "tiers.1.keep_messages": [4, 8, 16]}
    a = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=7))
    b = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=7))
    c = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=8))
    assert [s.id for s in a] == [s.id for s in b] != [s.id for s in c]
    fracs = [dict(s.params)["tiers.0.protect.frac"] for s in a]
    assert all(0.1 <= f <= 0.5 for f in fracs) and len(set(fracs)) == len(a)
    assert {dict(s.params)["tiers.1.keep_messages"] for s in a} <= {4, 8, 16}


def test_one_at_a_time_varies_each_axis_alone_around_the_base() -> None:
    base = load_policy(BASE)
    spec = make_spec({"tiers.1.keep_messages": [8, 24, 40], "tiers.2.margin_frac": [0.1, 0.2]},
                     design="one_at_a_time")
    chosen = settings(base, spec)
    assert chosen[0].id == base.digest()
    assert spec.size == 6 and len(chosen) == 4  # keep_messages=24 and margin 0.2 are the base
    for s in chosen[1:]:
        changed = [p for p, v in s.params if v != dict(apply(base, {}, report=[p]).params)[p]]
        assert len(changed) == 1


def test_absurd_grids_are_refused_with_their_size() -> None:
    spec = make_spec({"tiers.1.keep_messages": list(range(1000)),
                      "tiers.1.summary_tokens": list(range(1, 1001))})
    with pytest.raises(PolicyError, match=r"1,000,000 settings \(1000 × 1000\)"):
        settings(load_policy(BASE), spec)
    assert MAX_CELLS == 100_000


@pytest.mark.parametrize(("axes", "path"), [
    ({"tiers.7.keep_messages": [1]}, "tiers.7"),
    ({"tiers.0.min_reclaim_frac": [1.5]}, "tiers.0.min_reclaim_frac"),
    ({"tiers.1.trigger.at_tokns": [1]}, "tiers.1.trigger.at_tokns"),
    ({"tiers.1.trigger.at_frac": [0.5]}, "tiers.1.trigger"),
])
def test_invalid_settings_name_the_path(axes: dict[str, list[float]], path: str) -> None:
    with pytest.raises(PolicyError) as err:
        settings(load_policy(BASE), make_spec(axes))
    assert err.value.key == path


def test_fields_that_change_together_are_validated_together() -> None:
    spec = make_spec({"tiers.1.trigger.at_tokens": [None], "tiers.1.trigger.at_frac": [0.5, 0.7]})
    chosen = settings(load_policy(BASE), spec)
    assert [s.policy.tiers[1].trigger.at_frac for s in chosen] == [0.5, 0.7]


def test_grid_yaml_and_inline_axes(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: [0, 0.125]\n"
                    "  tiers.1.trigger.at_tokens: {start: 40000, stop: 80000, num: 3}\n"
                    "design: grid\n")
    assert load_grid(path).size == 6
    spec = load_spec(path, ["tiers.2.margin_frac=0.1,0.2", "tiers.1.keep_messages=8:24:3"])
    assert spec.size == 6 * 2 * 3
    assert spec.axes[-1].points() == (8, 16, 24)
    bad = tmp_path / "bad.yaml"
    bad.write_text("grid: {tiers.0.min_reclaim_frac: [0]}\ndesing: random\n")
    with pytest.raises(PolicyError, match="desing"):
        load_grid(bad)


# --- choosing --------------------------------------------------------------------------------


def _table() -> pd.DataFrame:
    """Two runs × three settings, numbers chosen by hand."""
    rows = []
    for setting, frac, tokens, over, cached in (("a", 0.0, (100, 300), (0, 1), (50, 150)),
                                                ("b", 0.1, (150, 350), (0, 0), (140, 340)),
                                                ("c", 0.2, (200, 400), (0, 0), (20, 40))):
        for i, rid in enumerate(("r1", "r2")):
            row = dict.fromkeys(METRIC_COLUMNS, 0)
            row.update(run_id=rid, setting=setting, frac=frac, tokens_sent=tokens[i],
                       overshoots_n=over[i], cache_invalidation_cached_tokens=cached[i],
                       n_requests=10, peak_tokens=tokens[i],
                       cache_invalidation_cached_share=cached[i] / tokens[i])
            rows.append(row)
    return pd.DataFrame(rows)


def test_aggregate_sums_counts_and_recomputes_ratios() -> None:
    agg = aggregate(_table(), ["frac"]).set_index("setting")
    assert agg.loc["a", "tokens_sent"] == 400 and agg.loc["a", "overshoots_n"] == 1
    assert agg.loc["b", "cache_invalidation_cached_share"] == 480 / 500
    assert agg.loc["c", "peak_tokens"] == 400 and agg.loc["c", "n_runs"] == 2


def test_best_meets_the_constraints_then_minimises() -> None:
    ranked = best(_table(), ["overshoots == 0"], "tokens_sent", params=["frac"])
    assert ranked["setting"].tolist() == ["b", "c"]
    top = best(_table(), ["frac >= 0.1", "cached_share > 0.5"], "cached_share", minimise=False,
               params=["frac"])
    assert top["setting"].tolist() == ["b"]
    assert best(_table(), ["overshoots_n > 5"], params=["frac"]).empty
    with pytest.raises(ReplayInputError, match="no_such_metric"):
        best(_table(), ["no_such_metric == 0"])
    with pytest.raises(ReplayInputError, match="objective"):
        best(_table(), [], "nothing")


def test_a_misspelt_constraint_says_the_metric_names_it_may_mean() -> None:
    with pytest.raises(ReplayInputError, match="no metric 'overshoot'; did you mean overshoots_n"):
        best(_table(), ["overshoot == 0"], params=["frac"])
    with pytest.raises(ReplayInputError, match="did you mean tokens_sent"):
        best(_table(), [], "tokns_sent")
    # names inside strings, function calls and numbers are not metric names
    assert len(best(_table(), ["tokens_sent > 1e2 and frac != 'x'"], params=["frac"])) == 3


def test_pareto_front_keeps_the_undominated_settings() -> None:
    agg = aggregate(_table(), ["frac"])
    assert pareto_front(agg, "tokens_sent", "overshoots_n")["setting"].tolist() == ["a", "b"]
    front = pareto_front(agg, "tokens_sent", "cache_invalidation_cached_share", minimise_y=False)
    assert front["setting"].tolist() == ["a", "b"]
    ax = plot_pareto(agg, "tokens_sent", "overshoots_n")
    assert ax.get_xlabel() == "tokens_sent (tokens)" and len(ax.lines) == 1


def test_sweep_plots_report_progress_and_label_ticks_without_an_offset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.sweep import plots as sweep_plots
    figures = []
    draw = sweep_plots._metrics_figure
    monkeypatch.setattr(sweep_plots, "_metrics_figure",
                        lambda *a: figures.append(draw(*a)) or figures[-1])
    table = _table().assign(tokens_sent=lambda t: t["tokens_sent"] * 100_000)
    calls: list[tuple[int, int]] = []
    files = sweep_plots.write_plots(table, ["frac"], tmp_path,
                                    on_figure=lambda done, total: calls.append((done, total)))
    # the three Pareto fronts (the last: cost against induced re-reads) and the metrics grid
    assert calls == [(k, len(files)) for k in range(len(files) + 1)] and len(files) == 4
    assert all(f.stat().st_size > 0 for f in files)
    [grid] = figures
    panel = next(ax for ax in grid.axes if ax.get_title().startswith("tokens_sent"))
    grid.canvas.draw()
    assert panel.get_title() == "tokens_sent (tokens)"
    assert panel.yaxis.get_offset_text().get_text() == ""  # no "1e7" over the title
    assert all(t.get_text().endswith("M") for t in panel.get_yticklabels() if t.get_text())


def test_sweep_plots_drawn_in_workers_are_the_same_files(tmp_path: Path) -> None:
    from analysis.sweep.plots import write_plots

    here = write_plots(_table(), ["frac"], tmp_path / "here", jobs=1)
    there = write_plots(_table(), ["frac"], tmp_path / "there", jobs=2)
    assert [p.name for p in here] == [p.name for p in there]
    for a, b in zip(here, there):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_write_sweep_writes_tables_settings_plots_and_the_chosen_policy(
        sample_corpus: Corpus, tmp_path: Path) -> None:
    chosen = settings(load_policy(BASE), make_spec(SMALL))
    result = sweep(sample_corpus, chosen, jobs=1)
    # judged by the recorded usage every setting overshoots on the long Claude Code samples
    # (issue #15), so the chosen one is the best without a constraint
    top = best(result.table, [], params=result.params)["setting"].iloc[0]
    files = write_sweep(result, tmp_path, chosen=top)
    names = {f.name for f in files}
    assert {"sweep.parquet", "sweep.csv", "settings.json", "chosen.yaml",
            "pareto_overshoots_n_vs_tokens_sent.png",
            "pareto_cache_invalidation_cached_share_vs_tokens_sent.png",
            "pareto_induced_rereads_n_vs_cost_usd.png",
            "metrics_vs_tiers_0_min_reclaim_frac.png",
            "metrics_vs_tiers_1_trigger_at_tokens.png"} <= names
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "sweep.parquet"), result.table)
    back = load_policy(tmp_path / "chosen.yaml")
    setting = next(s.policy for s in chosen if s.id == top)
    assert back.name == f"{setting.name}-{top[:8]}"  # its own name (#16 item 7)
    assert policy_to_dict(back) == {**policy_to_dict(setting), "name": back.name}
    assert all(f.stat().st_size > 0 for f in files)


# --- the command ------------------------------------------------------------------------------


def test_sweep_command_writes_the_table_and_chooses_then_reuses(samples: Path,
                                                                tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from replay.cli import app

    log = str(next(samples.glob("claude-code/*.jsonl")))
    args = ["sweep", "--policy", BASE, log, "--out", str(tmp_path), "--cache-dir", str(tmp_path),
            "--jobs", "1", "--no-plots",
            "--axis", "tiers.0.min_reclaim_frac=0,0.125",
            "--axis", "tiers.1.trigger.at_tokens=40000:80000:2",
            "--best", "overshoots==0", "--minimise", "tokens_sent", "--json"]
    runner = CliRunner()
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert (doc["settings"], doc["runs"], doc["computed"], doc["reused"]) == (4, 1, 4, 0)
    table = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    assert len(table) == 4 and (tmp_path / "sweep" / "sweep.csv").is_file()
    top = doc["best"][0]
    assert top["tokens_sent"] == table["tokens_sent"][table["overshoots_n"] == 0].min()
    chosen = load_policy(tmp_path / "sweep" / "chosen.yaml")
    assert chosen.name == f"{BASE}-{top['setting'][:8]}"  # its own name: the setting under it
    assert dataclasses.replace(chosen, name=BASE).digest() == top["setting"]
    again = json.loads(runner.invoke(app, args).stdout)
    assert (again["computed"], again["reused"]) == (0, 4)


def test_sweep_command_exit_codes(samples: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from replay.cli import app

    log = str(next(samples.glob("claude-code/*.jsonl")))
    base = ["sweep", "-p", BASE, log, "--out", str(tmp_path), "--jobs", "1", "--no-plots", "-q"]
    bad = CliRunner().invoke(app, [*base, "--axis", "tiers.9.keep_messages=1,2"])
    assert bad.exit_code == 2 and "tiers.9" in bad.output
    none = CliRunner().invoke(app, [*base, "--axis", "tiers.1.keep_messages=8,24",
                                    "--best", "tokens_sent < 0"])
    assert none.exit_code == 1 and "no setting meets" in none.output
    typo = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "typo"),
                                    "--axis", "tiers.1.keep_messages=8,24",
                                    "--best", "overshoot==0"])
    assert typo.exit_code == 2 and "did you mean overshoots_n" in typo.output
    assert "not defined" not in typo.output
    assert not (tmp_path / "typo" / "sweep").exists()  # said before replaying anything
