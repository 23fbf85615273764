"""What a sweep writes (tables, settings, plots, the chosen policy) and the ``replay sweep``
command: it chooses, then reuses its cache; its exit codes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from analysis.sweep.core import sweep, write_sweep
from analysis.sweep.grid import make_spec, settings
from analysis.sweep.pareto import best
from replay.corpus import Corpus
from replay.policy import load_policy, policy_to_dict
from tests.analysis.sweep.small_grid import BASE, SMALL


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
    common = ["sweep", "-p", BASE, log, "--jobs", "1", "--no-plots", "-q"]
    base = [*common, "--out", str(tmp_path)]
    bad = CliRunner().invoke(app, [*base, "--axis", "tiers.9.keep_messages=1,2"])
    assert bad.exit_code == 2 and "tiers.9" in bad.output
    none = CliRunner().invoke(app, [*base, "--axis", "tiers.1.keep_messages=8,24",
                                    "--best", "tokens_sent < 0"])
    assert none.exit_code == 1 and "no setting meets" in none.output
    typo = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "typo"),
                                    "--axis", "tiers.1.keep_messages=8,24",
                                    "--best", "overshoot==0"])
    assert typo.exit_code == 2 and "did you mean overshoots_n" in typo.output
    assert "not defined" not in typo.output
    assert not (tmp_path / "typo" / "sweep").exists()  # said before replaying anything


def test_sweep_command_says_the_replays_made_and_the_repeats_found(samples: Path,
                                                                  tmp_path: Path) -> None:
    """``replay sweep`` says, in its text and ``--json``, the replays made and how many of them
    repeated the one before (``SweepStats.n_repeated``), as the library's sweep counts them:
    protected fractions of the trim tier over a short SWE-agent run, where one of them moves no
    boundary after replaying."""
    import json

    from typer.testing import CliRunner

    from replay.cli import app
    from replay.corpus import open_corpus

    log = samples / "swe-agent" / "v0_gpt4__pydicom__pydicom-1458.traj"
    axis = "tiers.0.protect.frac=0.1,0.15,0.2,0.25,0.3,0.35"
    grid = settings(load_policy(BASE), make_spec({"tiers.0.protect.frac":
                                                  [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]}))
    stats = sweep(open_corpus([log], cache_dir=tmp_path / "ds"), grid, jobs=1).stats
    assert 0 < stats.n_repeated < stats.n_replays < stats.n_computed
    args = ["sweep", "--policy", BASE, str(log), "--out", str(tmp_path), "--jobs", "1",
            "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--no-cache", "--axis", axis]
    runner = CliRunner()
    doc = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert (doc["computed"], doc["replays"], doc["repeats"]) == (
        stats.n_computed, stats.n_replays, stats.n_repeated)
    text = runner.invoke(app, args).output
    assert (f"{stats.n_computed} computed ({stats.n_replays} replays, {stats.n_repeated} of "
            "them repeating the one before") in text


def test_sweep_command_says_an_objective_no_run_gave_and_prints_it_as_null(
        samples: Path, tmp_path: Path) -> None:
    """A run that recorded no usage has no ``cache_invalidation_cached_share_where_recorded``:
    sweeping to maximise it ranked settings by NaN, printed ``NaN`` in ``--json`` (no strict
    reader takes it) and wrote chosen.yaml as 'the most …' of a metric no setting had.  Now the
    value is ``null``, and the choice says it is by setting id, not by the metric."""
    import json

    from typer.testing import CliRunner

    from replay.cli import app

    log = samples / "mini-swe-agent" / "minirepo_test_github_issue.traj.json"
    objective = "cache_invalidation_cached_share_where_recorded"
    args = ["sweep", "--policy", BASE, str(log), "--out", str(tmp_path), "--jobs", "1",
            "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--no-cache", "-q",
            "--axis", "tiers.1.keep_messages=8,16", "--maximise", objective]
    runner = CliRunner()
    got = runner.invoke(app, [*args, "--json"])
    assert got.exit_code == 0, got.output

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in --json")

    doc = json.loads(got.stdout, parse_constant=refuse)
    table = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    assert table[objective].isna().all() and table["setting"].nunique() == 2  # unknown in every row
    assert [row[objective] for row in doc["best"]] == [None, None]
    assert doc["objective_unknown_settings"] == 2
    chosen = (tmp_path / "sweep" / "chosen.yaml").read_text()
    assert f"{objective} is not known for any of the 2 setting(s)" in chosen
    assert "not the best by the metric" in chosen
    text = runner.invoke(app, args).output
    assert f"note: {objective} is not known for any of the 2 setting(s)" in text


def test_sweep_command_says_settings_left_out_by_a_constraint_on_a_metric_no_run_gave(
        samples: Path, tmp_path: Path) -> None:
    """``--best`` on a metric no run gave a value (a run that recorded no usage has no
    ``cache_invalidation_cached_share_where_recorded``): NaN meets no comparison, so every
    setting was left out and the command said only 'no setting meets the constraints'.  Now it
    says why, in the notes and ``--json``, counted from the table itself; a constraint the
    unknown value does not decide (``or`` a known one) leaves nothing out and says nothing."""
    import json

    from typer.testing import CliRunner

    from replay.cli import app

    log = samples / "mini-swe-agent" / "minirepo_test_github_issue.traj.json"
    metric = "cache_invalidation_cached_share_where_recorded"
    args = ["sweep", "--policy", BASE, str(log), "--out", str(tmp_path), "--jobs", "1",
            "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--no-cache", "-q",
            "--axis", "tiers.1.keep_messages=8,16", "--best", "overshoots_n >= 0"]
    runner = CliRunner()
    got = runner.invoke(app, [*args, "--best", f"{metric} >= 0.5", "--json"])
    assert got.exit_code == 1, got.output  # no setting meets the constraints
    doc = json.loads(got.stdout)
    table = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    unknown = int(table.groupby("setting")[metric].apply(lambda s: s.isna().all()).sum())
    assert unknown == 2
    assert doc["constraint_unknown_settings"] == {metric: unknown}  # overshoots_n is known
    text = " ".join(runner.invoke(app, [*args, "--best", f"{metric} >= 0.5"]).output.split())
    assert (f"note: {unknown:,} setting(s) left out have no value for {metric} (no run gave it "
            "one): a comparison with an unknown value is never true") in text
    assert "no setting meets the constraints" in text
    got = runner.invoke(app, [*args, "--best", f"{metric} >= 0.5 or tokens_sent >= 0",
                              "--json"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["constraint_unknown_settings"] == {}
    assert "no value for" not in (tmp_path / "sweep" / "chosen.yaml").read_text()
