"""``replay check``: the baseline, tolerances, verdicts, exit codes, JUnit XML and Markdown.

One real run is checked throughout: ``logs/scenarios/reserve-long-turn.jsonl``, a turn that
grows past 105,424 tokens on a 130,000 window with 24,576 tokens reserved.  Under
``reserve-exact`` (the two-tier original with the reserve subtracted, tier two out of the way)
it has no overshoot; forgetting the reserve — in the policy or in the engine — gives 14.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from analysis.check.baseline import (
    Baseline,
    CheckError,
    RunInfo,
    load_baseline,
    measure,
    stored_value,
    write_baseline,
)
from analysis.check.gate import compare, judge
from analysis.check.report import junit_xml, markdown_summary, verdict
from analysis.check.tolerances import Tolerance, Tolerances, load_tolerances
from replay.cli import app
from replay.corpus import Corpus, open_corpus
from replay.policy import Policy, load_policy, policy_to_dict, replace_path

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "scenarios" / "reserve-long-turn.jsonl"
RUN = "reserve-long-turn.jsonl"
runner = CliRunner()


def _reserve_exact() -> Policy:
    p = load_policy("two-tier-original")
    # a plain tokenizer truth with the system prompt as a fixed overhead (the scenario's design;
    # anchored truth would carry the recorded prompt instead)
    for path, value in (("name", "reserve-exact"), ("truth.method", "tokenizer"),
                        ("server.fixed_overhead_tokens", 17800),
                        ("tiers.1.trigger", {"never": True}), ("subtract_reserve", True)):
        p = replace_path(p, path, value)
    return p


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run ingested once into a dataset directory (the CLI takes it as PATH)."""
    out = tmp_path_factory.mktemp("check") / "dataset"
    open_corpus([LOG], cache_dir=out)
    return out


@pytest.fixture(scope="module")
def corpus(store: Path) -> Corpus:
    return open_corpus([store])


@pytest.fixture(scope="module")
def policies() -> list[Policy]:
    return [_reserve_exact(), load_policy("two-tier-corrected")]


@pytest.fixture(scope="module")
def baseline(corpus: Corpus, policies: list[Policy]) -> Baseline:
    return measure(corpus, policies)


@pytest.fixture
def files(tmp_path: Path, baseline: Baseline, policies: list[Policy]) -> dict[str, Path]:
    """A baseline file and the policies as YAML files, in a fresh folder."""
    out = {"baseline": tmp_path / "baseline.json"}
    write_baseline(out["baseline"], baseline)
    for p in policies:
        out[p.name] = tmp_path / f"{p.name}.yaml"
        out[p.name].write_text(yaml.safe_dump(policy_to_dict(p)))
    return out


def _cli(store: Path, files: dict[str, Path], *extra: str, policies: tuple[str, ...] =
         ("reserve-exact", "two-tier-corrected")):
    args = ["check", str(store), "--baseline", str(files["baseline"]), "-q"]
    for name in policies:
        args += ["--policy", str(files.get(name, name))]
    return runner.invoke(app, [*args, *extra])


def _flat(result) -> str:  # type: ignore[no-untyped-def]
    """The output with line wrapping undone (the error console wraps long messages)."""
    return " ".join(result.output.split())


def _first_line(output: str) -> str:
    return output.strip().splitlines()[0]


# --- unchanged engine ---------------------------------------------------------------------

def test_unchanged_engine_passes_and_says_so(store: Path, files: dict[str, Path],
                                             baseline: Baseline, tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    result = _cli(store, files, "--junit", str(junit))
    assert result.exit_code == 0, result.output
    n_metrics = len(baseline.metrics)
    assert _first_line(result.output) == \
        f"check: PASS — 1 run × 2 policies × {n_metrics} metrics within tolerance"
    root = ET.parse(junit).getroot()
    assert len(root.findall(".//testcase")) == 1 * 2 * n_metrics
    assert root.get("failures") == "0" and root.get("skipped") == "0"


def test_a_second_measure_gives_the_same_baseline_bytes(corpus: Corpus, policies: list[Policy],
                                                         baseline: Baseline,
                                                         tmp_path: Path) -> None:
    write_baseline(tmp_path / "a.json", baseline)
    write_baseline(tmp_path / "b.json", measure(corpus, policies))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert load_baseline(tmp_path / "a.json") == baseline
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["runs"][RUN]["sha256"] == corpus.runs["sha256"][0].as_py()
    assert doc["policies"]["reserve-exact"]["digest"] == policies[0].digest()
    assert doc["policies"]["reserve-exact"]["runs"][RUN]["overshoots_n"] == 0


# --- regressions --------------------------------------------------------------------------

def test_policy_without_the_reserve_fails_naming_overshoots(store: Path, files: dict[str, Path],
                                                            tmp_path: Path) -> None:
    broken = replace_path(_reserve_exact(), "subtract_reserve", False)  # same name
    files["reserve-exact"].write_text(yaml.safe_dump(policy_to_dict(broken)))
    junit, md = tmp_path / "check.xml", tmp_path / "check.md"
    result = _cli(store, files, "--junit", str(junit), "--markdown", str(md))
    assert result.exit_code == 1, result.output
    line = _first_line(result.output)
    assert line.startswith("check: FAIL — ")
    assert f"overshoots_n +14 on {RUN} under reserve-exact" in line
    assert "policy changed: reserve-exact" in result.output
    cases = ET.parse(junit).getroot().iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert {c.get("classname") for c in failed} == {f"reserve-exact/{RUN}"}
    assert "overshoots_n" in {c.get("name") for c in failed}
    assert md.read_text().index("#### Regressions") < md.read_text().index("#### Notes")


def test_engine_ignoring_the_reserve_fails_naming_overshoots(
        corpus: Corpus, policies: list[Policy], baseline: Baseline,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Policy, "usable_tokens", property(lambda self: self.server.window_tokens))
    result = compare(baseline, measure(corpus, policies), Tolerances())
    assert result.exit_code == 1
    assert verdict(result).startswith(f"check: FAIL — {len(result.with_status('regressed'))} "
                                      f"regressions (overshoots_n +14 on {RUN} under reserve-exact")
    over = next(c for c in result.cases
                if c.metric == "overshoots_n" and c.policy == "reserve-exact")
    assert (over.baseline, over.current, over.status, over.failed) == (0, 14, "regressed", True)
    assert "overshoots_n +14" in over.message


def test_a_changed_engine_version_fails_every_case_as_engine_change(baseline: Baseline) -> None:
    old = dataclasses.replace(baseline, trace_version="0")
    result = compare(old, baseline, Tolerances())
    assert result.exit_code == 1
    assert verdict(result) == (f"check: FAIL — engine changed (trace_version 0 → "
                               f"{baseline.trace_version}): update the "
                               "baseline (`--update-baseline`) in the same commit")
    assert all(c.failed and c.status == "same" for c in result.cases)
    root = ET.fromstring(junit_xml(result))
    assert {f.get("type") for f in root.iter("failure")} == {"engine"}


def test_improvements_pass_and_are_reported_as_such(baseline: Baseline) -> None:
    worse = _with_value(baseline, "reserve-exact", "tokens_sent", 10**9)
    result = compare(worse, baseline, Tolerances())
    assert result.exit_code == 0
    assert [c.metric for c in result.with_status("improved")] == ["tokens_sent"]
    assert verdict(result).endswith("within tolerance; 1 improved")
    md = markdown_summary(result)
    assert "#### Improvements (1)" in md and "#### Regressions" not in md


def test_markdown_lists_regressions_then_improvements_then_notes(baseline: Baseline) -> None:
    old = _with_value(baseline, "reserve-exact", "peak_tokens", 1)          # now a regression
    old = _with_value(old, "reserve-exact", "tokens_sent", 10**12)          # now an improvement
    pol = old.policies["two-tier-corrected"]
    old = dataclasses.replace(old, policies={**old.policies, "two-tier-corrected":
                                             dataclasses.replace(pol, digest="0" * 16)})
    md = markdown_summary(compare(old, baseline, Tolerances()))
    heads = [md.index(h) for h in ("#### Regressions (1)", "#### Improvements (1)", "#### Notes")]
    assert heads == sorted(heads)
    assert "- policy changed: two-tier-corrected (digest 0000000000000000 → " in md
    assert f"| reserve-exact | {RUN} | peak_tokens | 1 |" in md


# --- corpus changes -----------------------------------------------------------------------

def test_changed_log_is_reported_not_compared(baseline: Baseline) -> None:
    old = dataclasses.replace(baseline, runs={RUN: RunInfo(source=RUN, sha256="0" * 64)})
    old = _with_value(old, "reserve-exact", "overshoots_n", 99)  # would be an improvement
    result = compare(old, baseline, Tolerances())
    assert result.exit_code == 0
    assert {c.status for c in result.cases} == {"changed log"}
    assert "1 changed log (not compared)" in verdict(result)
    assert any(n.startswith(f"changed log: {RUN} (sha256 000000000000 → ") for n in result.notes)
    strict = compare(old, baseline, Tolerances(), strict_logs=True)
    assert strict.exit_code == 1
    assert verdict(strict) == f"check: FAIL — 1 changed log with --strict-logs ({RUN})"


def test_runs_new_to_or_missing_from_the_baseline_are_reported(baseline: Baseline) -> None:
    renamed = Baseline(trace_version=baseline.trace_version,
                       schema_version=baseline.schema_version, metrics=baseline.metrics,
                       runs={"gone.jsonl": baseline.runs[RUN]},
                       policies={n: dataclasses.replace(p, values={"gone.jsonl": p.values[RUN]})
                                 for n, p in baseline.policies.items()})
    result = compare(renamed, baseline, Tolerances())
    assert result.exit_code == 0
    assert {(c.run, c.status) for c in result.cases} == {(RUN, "new run"),
                                                        ("gone.jsonl", "missing run")}
    assert f"new run: {RUN}" in result.notes and "missing run: gone.jsonl" in result.notes
    root = ET.fromstring(junit_xml(result))
    assert root.get("skipped") == root.get("tests") == str(2 * 2 * len(baseline.metrics))


# --- JUnit and update ---------------------------------------------------------------------

def test_junit_has_one_case_per_run_policy_metric_and_counts_failures(baseline: Baseline) -> None:
    old = _with_value(baseline, "reserve-exact", "peak_tokens", 1)
    old = _with_value(old, "two-tier-corrected", "cache_invalidation_cached_share", 1.0)
    result = compare(old, baseline, Tolerances())
    root = ET.fromstring(junit_xml(result))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["reserve-exact", "two-tier-corrected"]
    assert all(len(s.findall("testcase")) == len(baseline.metrics) for s in suites)
    assert root.get("tests") == str(2 * len(baseline.metrics))
    failed = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")
              if c.find("failure") is not None]
    assert failed == [(f"reserve-exact/{RUN}", "peak_tokens"),
                      (f"two-tier-corrected/{RUN}", "cache_invalidation_cached_share")]
    assert root.get("failures") == "2"


def test_update_baseline_rewrites_the_file_and_prints_the_diff(
        store: Path, files: dict[str, Path], baseline: Baseline) -> None:
    write_baseline(files["baseline"], _with_value(baseline, "reserve-exact", "overshoots_n", 7))
    result = _cli(store, files, "--update-baseline")
    assert result.exit_code == 0, result.output
    assert _first_line(result.output) == f"baseline: wrote {files['baseline']} (1 change)"
    assert f"reserve-exact / {RUN} / overshoots_n" in result.output
    assert load_baseline(files["baseline"]) == baseline
    assert _cli(store, files).exit_code == 0


def test_update_baseline_creates_a_missing_file(store: Path, files: dict[str, Path],
                                                baseline: Baseline) -> None:
    files["baseline"].unlink()
    result = _cli(store, files, "--update-baseline")
    assert result.exit_code == 0, result.output
    assert f"1 runs × 2 policies × {len(baseline.metrics)} metrics" in result.output
    assert load_baseline(files["baseline"]) == baseline


# --- usage and configuration errors: exit 2 -----------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ('{"format": 1, "trace_version": "1",', "not a valid baseline (invalid JSON at line 1"),
    ("[]", "(top): expected a mapping, got list"),
])
def test_malformed_baseline_exits_2(store: Path, files: dict[str, Path], text: str,
                                   message: str) -> None:
    files["baseline"].write_text(text)
    result = _cli(store, files)
    assert result.exit_code == 2
    assert f"{files['baseline']}: {message}" in _flat(result)


def test_baseline_with_a_non_number_exits_2_naming_the_key(store: Path,
                                                           files: dict[str, Path]) -> None:
    doc = json.loads(files["baseline"].read_text())
    doc["policies"]["reserve-exact"]["runs"][RUN]["overshoots_n"] = "zero"
    files["baseline"].write_text(json.dumps(doc))
    result = _cli(store, files)
    assert result.exit_code == 2
    assert f"policies.reserve-exact.runs.{RUN}.overshoots_n: expected a number" in _flat(result)


def test_missing_baseline_exits_2_and_says_how_to_create_it(store: Path,
                                                            files: dict[str, Path]) -> None:
    files["baseline"].unlink()
    result = _cli(store, files)
    assert result.exit_code == 2 and "--update-baseline" in result.output


@pytest.mark.parametrize(("text", "message"), [
    ("overshots_n: +0\n", "overshots_n: unknown metric; did you mean 'overshoots_n'?"),
    ("direction: {peak_tokenz: lower}\n", "direction.peak_tokenz: unknown metric"),
    ("cost_usd: +five\n", "cost_usd: '+five' is not a tolerance"),
    ("cost_usd: -1%\n", "cost_usd: '-1%' allows the metric to fall, but lower is better"),
    ("direction: {cost_usd: sideways}\n", "direction.cost_usd: 'sideways' is not lower"),
    ("- a list\n", "expected a mapping of metric names to tolerances"),
])
def test_bad_tolerances_exit_2_naming_the_key(store: Path, files: dict[str, Path],
                                              tmp_path: Path, text: str, message: str) -> None:
    tol = tmp_path / "tolerances.yaml"
    tol.write_text(text)
    result = _cli(store, files, "--tolerances", str(tol))
    assert result.exit_code == 2, result.output
    assert f"{tol}: {message}" in _flat(result)


def test_bad_policy_exits_2_with_the_key_path(store: Path, files: dict[str, Path]) -> None:
    files["reserve-exact"].write_text("name: reserve-exact\nserver: {windw_tokens: 5}\n")
    result = _cli(store, files)
    assert result.exit_code == 2
    assert "server.windw_tokens" in _flat(result) and "window_tokens" in _flat(result)


def test_policy_missing_from_the_baseline_exits_2(store: Path, files: dict[str, Path]) -> None:
    result = _cli(store, files, policies=("corecoder",))
    assert result.exit_code == 2
    assert "the baseline has no policy 'corecoder'" in _flat(result)


def test_two_policies_with_one_name_exit_2(store: Path, files: dict[str, Path]) -> None:
    result = _cli(store, files, "--update-baseline",
                  policies=("reserve-exact", "reserve-exact"))
    assert result.exit_code == 2 and "two policies are named 'reserve-exact'" in _flat(result)


# --- tolerances ---------------------------------------------------------------------------

def test_tolerance_file_states_amount_kind_and_direction(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("default: +2\ncost_usd: +5%\ncache_invalidation_cached_share: -0.5%\n"
                    "rereads_n_reads: ±1\nn_requests: any\ndirection: {overshoots_frac: lower}\n")
    tol = load_tolerances(path)
    assert tol.for_metric("cost_usd") == Tolerance(amount=0.05, relative=True, direction="lower")
    assert tol.for_metric("cache_invalidation_cached_share") == \
        Tolerance(amount=0.005, relative=True, direction="higher")
    assert tol.for_metric("rereads_n_reads") == Tolerance(amount=1.0, direction="either")
    assert not tol.for_metric("n_requests").checked
    assert tol.for_metric("overshoots_frac") == Tolerance(amount=2.0, direction="lower")
    assert tol.for_metric("arg_share_args_peak_request") == Tolerance(amount=2.0)
    assert str(tol.for_metric("cache_invalidation_cached_share")) == "-0.5%"


@pytest.mark.parametrize(("base", "current", "tol", "status"), [
    (100, 105, Tolerance(amount=0.05, relative=True, direction="lower"), "within"),
    (100, 106, Tolerance(amount=0.05, relative=True, direction="lower"), "regressed"),
    (100, 50, Tolerance(amount=0.0, direction="lower"), "improved"),
    (0.8, 0.797, Tolerance(amount=0.005, relative=True, direction="higher"), "within"),
    (0.8, 0.79, Tolerance(amount=0.005, relative=True, direction="higher"), "regressed"),
    (0.8, 0.9, Tolerance(amount=0.005, relative=True, direction="higher"), "improved"),
    (0, 1, Tolerance(amount=0.5, relative=True, direction="lower"), "regressed"),
    (10, 8, Tolerance(amount=1.0, direction="either"), "regressed"),
    (10, 9, Tolerance(amount=1.0, direction="either"), "within"),
    (None, 3.0, Tolerance(amount=100.0, direction="lower"), "appeared"),
    (3.0, None, Tolerance(amount=0.0, direction="lower"), "vanished"),
    (None, None, Tolerance(amount=0.0), "same"),
    (1.0, 1.0 + 5e-7, Tolerance(amount=0.0, direction="lower"), "same"),
    (1.0, 1.0 + 2e-6, Tolerance(amount=0.0, direction="lower"), "regressed"),
    (1_000_000, 1_000_001, Tolerance(amount=0.0, direction="lower"), "regressed"),
    (5, 500, Tolerance(amount=0.0, checked=False), "ignored"),
    (0.1 + 0.2, 0.3, Tolerance(amount=0.0), "same"),
])
def test_judge(base: float | None, current: float | None, tol: Tolerance, status: str) -> None:
    assert judge(stored_value(base), stored_value(current), tol) == status


def test_the_readme_tolerances_example_is_valid(baseline: Baseline, tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text()
    example = text.split("A tolerances file", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "t.yaml").write_text(example)
    tol = load_tolerances(tmp_path / "t.yaml")
    tol.validate(baseline.metrics)
    assert str(tol.for_metric("cost_usd")) == "+1%"
    assert str(tol.for_metric("rereads_n_reads")) == "±2"


def test_unknown_metric_in_tolerances_is_refused_even_without_replaying(baseline: Baseline) -> None:
    tol = Tolerances(metrics=(("peak_tokenz", Tolerance(amount=0.0)),), source="t.yaml")
    with pytest.raises(CheckError, match="t.yaml: peak_tokenz: unknown metric; did you mean "
                                         "'peak_tokens'"):
        compare(baseline, baseline, tol)


def _with_value(b: Baseline, policy: str, metric: str, value: float) -> Baseline:
    pol = b.policies[policy]
    values = {run: {**vals, metric: value} for run, vals in pol.values.items()}
    return dataclasses.replace(b, policies={**b.policies,
                                            policy: dataclasses.replace(pol, values=values)})


# --- float noise, values that appear or vanish, counts (issue 16 item 4) ------------------

def _float_metric(baseline: Baseline) -> tuple[str, float]:
    vals = baseline.policies["reserve-exact"].values[RUN]
    name = next(m for m, v in vals.items() if isinstance(v, float) and v > 0 and
                m in ("cost_usd", "cache_invalidation_cached_share"))
    return name, vals[name]


def test_float_noise_without_a_tolerances_file_is_not_a_regression(baseline: Baseline) -> None:
    name, v = _float_metric(baseline)
    direction = "higher" if "share" in name else "lower"
    noisy = v * (1 - 4e-7) if direction == "lower" else v * (1 + 4e-7)  # current looks worse
    result = compare(_with_value(baseline, "reserve-exact", name, noisy), baseline, Tolerances())
    assert result.exit_code == 0 and not result.with_status("regressed", "within")
    real = v * 0.9 if direction == "lower" else v * 1.1
    moved = compare(_with_value(baseline, "reserve-exact", name, real), baseline, Tolerances())
    assert [c.metric for c in moved.with_status("regressed")] == [name]


def test_a_vanished_or_appeared_value_is_a_note_not_a_regression(baseline: Baseline) -> None:
    name, _ = _float_metric(baseline)
    old = _with_value(baseline, "reserve-exact", name, None)   # appears in the current replay
    result = compare(old, baseline, Tolerances())
    assert result.exit_code == 0
    assert [(c.metric, c.status, c.failed) for c in result.with_status("appeared")] == \
        [(name, "appeared", False)]
    assert "1 appeared or vanished (notes)" in verdict(result)
    md = markdown_summary(result)
    assert "#### Values that appeared or vanished (notes) (1)" in md
    root = ET.fromstring(junit_xml(result))
    assert root.get("failures") == "0" and root.get("skipped") == "1"


def test_markdown_counts_add_up_and_count_the_unchanged(baseline: Baseline) -> None:
    old = _with_value(baseline, "reserve-exact", "peak_tokens", 1)
    result = compare(old, baseline, Tolerances())
    md = markdown_summary(result)
    header, _, values = md.split("\n\n", 2)[2].splitlines()[:3]
    counts = dict(zip([h.strip() for h in header.strip("|").split("|")],
                      [int(v.strip().replace(",", "")) for v in values.strip("|").split("|")]))
    # independent count: every (policy, metric) value of the one run, equal on both sides
    n_equal = sum(1 for p in baseline.policies for m, v in baseline.policies[p].values[RUN].items()
                  if old.policies[p].values[RUN].get(m) == v)
    assert counts["unchanged"] == n_equal > 100
    assert counts["regressed"] == 1 and counts["failed"] == 1
    assert counts["cases"] == sum(v for k, v in counts.items() if k not in ("cases", "failed"))
