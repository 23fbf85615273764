"""``replay check``: verdicts on an unchanged engine, regressions, improvements, changed logs and
runs new or missing, JUnit XML and Markdown, and --update-baseline.

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

from analysis.check.baseline import Baseline, RunInfo, load_baseline, measure, write_baseline
from analysis.check.gate import compare
from analysis.check.report import junit_xml, markdown_summary, verdict
from analysis.check.tolerances import Tolerances
from replay.corpus import Corpus
from replay.policy import Policy, policy_to_dict, replace_path
from tests.analysis.check.check_helpers import RUN, _cli, _first_line, _reserve_exact, _with_value

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

def _with_run_copy(b: Baseline, key: str) -> Baseline:
    """``b`` with a second run ``key``: RUN's log and values under another name (on both sides
    of a comparison, a run that is compared)."""
    return dataclasses.replace(
        b, runs={**b.runs, key: dataclasses.replace(b.runs[RUN], source=key)},
        policies={n: dataclasses.replace(p, values={**p.values, key: p.values[RUN]})
                  for n, p in b.policies.items()})


def test_changed_log_is_reported_not_compared(baseline: Baseline) -> None:
    current = _with_run_copy(baseline, "other.jsonl")  # a run still compared beside it
    old = dataclasses.replace(current, runs={**current.runs,
                                             RUN: RunInfo(source=RUN, sha256="0" * 64)})
    old = _with_value(old, "reserve-exact", "overshoots_n", 99)  # would be an improvement
    result = compare(old, current, Tolerances())
    assert result.exit_code == 0
    assert {c.status for c in result.cases if c.run == RUN} == {"changed log"}
    assert result.compared_runs == {"other.jsonl"}
    assert "1 changed log (not compared)" in verdict(result)
    assert verdict(result).startswith("check: PASS — 1 run × 2 policies × ")
    assert any(n.startswith(f"changed log: {RUN} (sha256 000000000000 → ") for n in result.notes)
    strict = compare(old, current, Tolerances(), strict_logs=True)
    assert strict.exit_code == 1
    assert verdict(strict) == f"check: FAIL — 1 changed log with --strict-logs ({RUN})"


def test_runs_new_to_or_missing_from_the_baseline_are_reported(baseline: Baseline) -> None:
    current = _with_run_copy(baseline, "other.jsonl")
    renamed = Baseline(trace_version=baseline.trace_version,
                       schema_version=baseline.schema_version, metrics=baseline.metrics,
                       runs={"gone.jsonl": baseline.runs[RUN],
                             "other.jsonl": current.runs["other.jsonl"]},
                       policies={n: dataclasses.replace(p, values={
                           "gone.jsonl": p.values[RUN], "other.jsonl": p.values[RUN]})
                                 for n, p in baseline.policies.items()})
    result = compare(renamed, current, Tolerances())
    assert result.exit_code == 0
    assert {(c.run, c.status) for c in result.cases if c.run != "other.jsonl"} == {
        (RUN, "new run"), ("gone.jsonl", "missing run")}
    assert f"new run: {RUN}" in result.notes and "missing run: gone.jsonl" in result.notes
    root = ET.fromstring(junit_xml(result))
    assert root.get("skipped") == str(2 * 2 * len(baseline.metrics))
    assert root.get("tests") == str(3 * 2 * len(baseline.metrics))


def test_a_check_that_compared_no_run_fails(baseline: Baseline) -> None:
    """Every run of the baseline missing or of a changed log: the gate checked nothing, and a
    CI job must not read that as a pass."""
    changed = dataclasses.replace(baseline, runs={RUN: RunInfo(source=RUN, sha256="0" * 64)})
    result = compare(changed, baseline, Tolerances())
    assert result.nothing_compared and result.exit_code == 1
    assert verdict(result).startswith("check: FAIL — no run compared (1 changed log): ")
    renamed = dataclasses.replace(
        baseline, runs={"gone.jsonl": baseline.runs[RUN]},
        policies={n: dataclasses.replace(p, values={"gone.jsonl": p.values[RUN]},
                                         truth={"gone.jsonl": p.truth[RUN]})
                  for n, p in baseline.policies.items()})
    result = compare(renamed, baseline, Tolerances())
    assert result.exit_code == 1
    assert verdict(result).startswith("check: FAIL — no run compared (1 new run, 1 missing run)")
    assert "### replay check: FAIL" in markdown_summary(result)
    root = ET.fromstring(junit_xml(result))  # a CI reading the JUnit file sees the failure too
    assert root.get("failures") == "1"
    assert [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None] == [
        "runs compared"]


def test_check_cli_of_logs_the_baseline_does_not_hold_exits_1(store: Path, files: dict[str, Path],
                                                              baseline: Baseline) -> None:
    renamed = dataclasses.replace(
        baseline, runs={"gone.jsonl": baseline.runs[RUN]},
        policies={n: dataclasses.replace(p, values={"gone.jsonl": p.values[RUN]},
                                         truth={"gone.jsonl": p.truth[RUN]})
                  for n, p in baseline.policies.items()})
    write_baseline(files["baseline"], renamed)
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert _first_line(result.output).startswith(
        "check: FAIL — no run compared (1 new run, 1 missing run)")


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
    assert f"1 run × 2 policies × {len(baseline.metrics)} metrics" in result.output
    assert load_baseline(files["baseline"]) == baseline
