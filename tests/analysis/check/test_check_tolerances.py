"""``replay check``'s tolerances: the file states amount, kind and direction, ``judge`` on every
kind, the README's example, unknown metrics; float noise, values that appear or vanish, and the
counts of the Markdown summary (issue 16 item 4).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from analysis.check.baseline import Baseline, CheckError, stored_value
from analysis.check.gate import compare, judge
from analysis.check.report import junit_xml, markdown_summary, verdict
from analysis.check.tolerances import Tolerance, Tolerances, load_tolerances
from tests.analysis.check.check_helpers import REPO, RUN, _with_value

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


@pytest.mark.parametrize("value", ["[lower]", "{lower: 1}"])
def test_a_direction_that_is_a_list_or_mapping_is_refused_not_a_traceback(tmp_path: Path,
                                                                          value: str) -> None:
    """``direction: {tokens_sent: [lower]}`` ended in ``TypeError: unhashable type`` (exit 1)."""
    path = tmp_path / "t.yaml"
    path.write_text(f"direction: {{tokens_sent: {value}}}\n")
    with pytest.raises(CheckError, match=r"direction\.tokens_sent: .* is not lower, higher or "
                                         r"either"):
        load_tolerances(path)


@pytest.mark.parametrize("value", ["+٥%", "+５", "+١٢", "-۰.5%"])
def test_a_tolerance_in_digits_of_another_script_is_refused(tmp_path: Path, value: str) -> None:
    """``\\d`` read any script's digits: ``+٥%`` (an Arabic-Indic five, which reads as ``+o%``
    or ``+0%`` in a review) allowed a 5 % regression."""
    path = tmp_path / "t.yaml"
    path.write_text(f"tokens_sent: '{value}'\n", encoding="utf-8")
    with pytest.raises(CheckError, match="is not a tolerance"):
        load_tolerances(path)
