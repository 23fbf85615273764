"""Each command's work is one library call a notebook or CI script can make (#14 item 5):
``analysis.sweep.to_files.sweep_to``, ``analysis.check.run.run_check``, ``analysis.report.compare``'s
``policy_traces`` / ``diff_policies`` / ``report_to``; called here without the CLI, their
results checked against the lower-level functions they stand for."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.check.baseline import CheckError, load_baseline, write_baseline
from analysis.check.run import CheckSettings, run_check
from analysis.metrics import metrics
from analysis.per_run.rollup import RUN_ROLLUP
from analysis.report.compare import CompareSpec, diff_policies, policy_traces, report_to
from analysis.report.diff import diff
from analysis.sweep.core import sweep
from analysis.sweep.grid import load_spec, settings
from analysis.sweep.pareto import best
from analysis.sweep.to_files import sweep_to
from replay.apply_policy import run_to
from replay.corpus import Corpus, open_corpus, replay_corpus
from replay.errors import OutputError, ReplayError, ReplayInputError
from replay.policy import load_policy

REPO = Path(__file__).resolve().parents[2]
LOG = REPO / "logs" / "compacting-session.jsonl"
BASE = "two-tier-corrected"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """One generated log, ingested."""
    return open_corpus([LOG], cache_dir=tmp_path_factory.mktemp("lib") / "dataset")


def _never(_paths: list[Path]) -> Corpus:
    raise AssertionError("the runs were opened before the arguments were checked")


def test_sweep_to_is_the_sweep_ranked_and_written(corpus: Corpus, tmp_path: Path) -> None:
    spec = load_spec(None, ["tiers.1.trigger.at_tokens=40000,80000"])
    ticks: list[tuple[int, int]] = []
    done = sweep_to(corpus, load_policy(BASE), spec, tmp_path / "sweep",
                    best=["overshoots_n<=1000"], jobs=1, plots=False,
                    on_row=lambda d, t: ticks.append((d, t)))
    direct = sweep(corpus, settings(load_policy(BASE), spec), jobs=1)
    pd.testing.assert_frame_equal(done.result.table, direct.table)
    ranked = best(direct.table, ["overshoots_n<=1000"], "tokens_sent", params=direct.params)
    pd.testing.assert_frame_equal(done.ranked, ranked)
    assert done.exit_code == 0 and len(done.ranked) == 2
    assert ticks[-1] == (2, 2)
    assert {f.name for f in done.files} == {"sweep.parquet", "sweep.csv", "settings.json",
                                            "chosen.yaml"}
    assert all(f.is_file() for f in done.files)
    top = done.best_rows(1)[0]
    assert top["setting"] == ranked["setting"].iloc[0]
    assert list(top)[:2] == ["setting", "tiers.1.trigger.at_tokens"]


def test_sweep_to_checks_the_rule_before_opening_the_runs(tmp_path: Path) -> None:
    spec = load_spec(None, ["tiers.1.trigger.at_tokens=40000,80000"])
    with pytest.raises(ReplayError):
        sweep_to([LOG], load_policy(BASE), spec, tmp_path, best=["no_such_metric==0"],
                 open_runs=_never)


def test_sweep_to_says_when_no_setting_meets_the_constraints(corpus: Corpus,
                                                              tmp_path: Path) -> None:
    spec = load_spec(None, ["tiers.1.trigger.at_tokens=40000,80000"])
    done = sweep_to(corpus, load_policy(BASE), spec, tmp_path, best=["tokens_sent<0"], jobs=1,
                    plots=False)
    assert done.exit_code == 1 and done.best_rows(5) == []
    assert "chosen.yaml" not in {f.name for f in done.files}


def test_run_check_updates_then_passes_then_catches_a_regression(corpus: Corpus,
                                                                 tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    settings_ = CheckSettings(archive=(), policies=(BASE,), baseline=baseline)
    warned: list[str] = []
    baseline.write_text("not json")
    made = run_check(dataclasses.replace(settings_, archive=()), update=True,
                     open_runs=lambda _p: corpus, on_warning=warned.append)
    assert made.result is None and made.exit_code == 0 and made.changes
    assert warned and warned[0].startswith("replacing an unreadable baseline")
    passed = run_check(settings_, open_runs=lambda _p: corpus)
    assert passed.exit_code == 0 and passed.result is not None
    assert {c.status for c in passed.result.cases} == {"same"}
    old = load_baseline(baseline)
    pol = old.policies[BASE]
    run = next(iter(pol.values))
    sent = pol.values[run]["tokens_sent"]
    assert isinstance(sent, int) and sent > 0
    worse = {run: {**pol.values[run], "tokens_sent": sent - 1}}  # (a value a run can have)
    write_baseline(baseline, dataclasses.replace(old, policies={
        BASE: dataclasses.replace(pol, values={**pol.values, **worse})}))
    failed = run_check(settings_, open_runs=lambda _p: corpus)
    assert failed.exit_code == 1 and failed.result is not None
    assert [c.metric for c in failed.result.with_status("regressed")] == ["tokens_sent"]


def test_run_check_refuses_a_policy_the_baseline_lacks_before_reading_logs(
        corpus: Corpus, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    run_check(CheckSettings(archive=(), policies=(BASE,), baseline=baseline), update=True,
              open_runs=lambda _p: corpus)
    with pytest.raises(CheckError, match="no policy 'claude-code'"):
        run_check(CheckSettings(archive=(LOG,), policies=("claude-code",), baseline=baseline),
                  open_runs=_never)


def test_check_settings_come_from_the_project_config(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "ctxreplay.toml").write_text('archive = "logs"\npolicies = ["none"]\n'
                                            'baseline = "b.json"\nstrict_logs = true\n')
    got = CheckSettings.resolve(start=project)
    assert got.archive == (project / "logs",) and got.policies == ("none",)
    assert got.baseline == project / "b.json" and got.strict_logs
    assert got.source == project / "ctxreplay.toml"
    given = CheckSettings.resolve([LOG], ["claude-code"], tmp_path / "x.json", start=project)
    assert given.source is None and given.policies == ("claude-code",)
    with pytest.raises(ReplayInputError, match="check needs --baseline"):
        CheckSettings.resolve([LOG], ["none"], start=tmp_path)


def test_policy_traces_replays_each_policy_over_the_chosen_runs(corpus: Corpus) -> None:
    got = policy_traces(CompareSpec(runs=corpus, policies=(BASE, "claude-code")))
    assert [p.name for p, _ in got.pairs] == [BASE, "claude-code"]
    for pol, trace in got.pairs:
        assert trace.requests.equals(replay_corpus(corpus, pol).requests)
    assert "priced under one provider" in got.pricing
    one = policy_traces(CompareSpec(runs=corpus, policies=(BASE,),
                                    run_ids=("compacting-session.jsonl",)))
    assert one.pairs[0][1].requests.equals(got.pairs[0][1].requests)
    with pytest.raises(ReplayInputError, match="names no replayable run"):
        policy_traces(CompareSpec(runs=corpus, policies=(BASE,), run_ids=("nothing*",)))
    with pytest.raises(ReplayInputError, match="give --policy"):
        policy_traces(CompareSpec(runs=corpus))


def test_policy_traces_reads_replay_run_outputs(corpus: Corpus, tmp_path: Path) -> None:
    pol = load_policy(BASE)
    run_to(corpus, pol, tmp_path / "a", rollup=RUN_ROLLUP)
    got = policy_traces(CompareSpec(runs=[tmp_path / "a"], traces=True,
                                    data=(corpus.root,)))
    assert got.corpus.run_ids == corpus.run_ids
    assert got.pairs[0][1].requests.num_rows == replay_corpus(corpus, pol).requests.num_rows
    with pytest.raises(ReplayInputError, match="exclude each other"):
        policy_traces(CompareSpec(runs=[tmp_path / "a"], traces=True, policies=(BASE,)),
                      open_runs=_never)


def test_diff_policies_is_the_diff_of_the_two_policies_metrics(corpus: Corpus) -> None:
    done = diff_policies(CompareSpec(runs=corpus, policies=("two-tier-original", BASE)))
    a, b = load_policy("two-tier-original"), load_policy(BASE)
    expected = diff(metrics(corpus, replay_corpus(corpus, a), a),
                    metrics(corpus, replay_corpus(corpus, b), b))
    assert (done.a.name, done.b.name) == (a.name, b.name)
    pd.testing.assert_frame_equal(done.table, expected)
    with pytest.raises(ReplayInputError, match="two policies"):
        diff_policies(CompareSpec(runs=corpus, policies=(BASE,)))


def test_report_to_writes_the_report(corpus: Corpus, tmp_path: Path) -> None:
    done = report_to(CompareSpec(runs=corpus, policies=(BASE,)), tmp_path / "r",
                     max_timelines=1)
    assert done.files.html == tmp_path / "r" / "report.html" and done.files.html.is_file()
    assert done.files.markdown.is_file() and done.traces.pairs[0][0].name == BASE


def test_run_policy_to_writes_traces_summary_and_report(corpus: Corpus, tmp_path: Path) -> None:
    from analysis.per_run.rollup import RUN_ROLLUP
    from analysis.policy_run import run_policy_to
    from replay.apply_policy import run
    from replay.run_folder import read_trace

    pol = load_policy(BASE)
    streamed = run_policy_to(corpus, pol, tmp_path / "a")
    held = run_policy_to(corpus, pol, tmp_path / "b", report=True)
    direct = run(corpus, pol, rollup=RUN_ROLLUP)
    for done in (streamed, held):
        assert done.summary.num_rows == len(corpus.run_ids) and done.not_replayed == ()
        assert read_trace(done.out).requests.equals(direct.trace.requests)
        assert (done.out / "summary.json").is_file()
    assert streamed.summary.equals(held.summary)
    # summary.json holds the rows returned (and printed by `replay run --json`), the issues
    # stored for each run's log among them: written with them, not added after
    stored = [json.loads((d.out / "summary.json").read_text())["runs"] for d in (streamed, held)]
    assert stored[0] == stored[1] == streamed.summary.to_pylist()
    assert [r["source_issues_n"] for r in stored[0]] == [0] * len(corpus.run_ids)
    assert (held.out / "report.html").is_file() and not (streamed.out / "report.html").exists()
    with pytest.raises(OutputError, match="is the input"):
        run_policy_to([LOG], pol, LOG, open_runs=_never)  # an input is never an output


def test_replay_run_without_a_report_does_not_load_the_plotting_stack(tmp_path: Path) -> None:
    """``replay run`` (the main job) imports matplotlib only for ``--report``, ``replay sweep``
    only to draw its plots: loading it cost ~1 s of a ~3 s run (the main job got 30 % slower
    when ``run_policy_to`` imported the report module at the top; a sweep with ``--no-plots``
    loaded it through the metric modules' plot functions until they imported it inside)."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from replay.cli import app\n"
        f"r = CliRunner().invoke(app, ['run', '--policy', 'two-tier-corrected', "
        f"{str(repo / 'logs' / 'write-heavy.jsonl')!r}, '--out', {str(tmp_path / 'o')!r}, "
        f"'--cache-dir', {str(tmp_path / 'c')!r}, '-q'])\n"
        "assert r.exit_code == 0, r.output\n"
        f"r = CliRunner().invoke(app, ['sweep', {str(repo / 'logs' / 'write-heavy.jsonl')!r}, "
        "'-p', 'two-tier-corrected', '--axis', 'tiers.0.protect.frac=0.1,0.3', '--no-plots', "
        f"'--no-cache', '--out', {str(tmp_path / 's')!r}, '--cache-dir', "
        f"{str(tmp_path / 'c')!r}, '-q'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print('matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo,
                         check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
