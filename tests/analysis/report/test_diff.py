"""The diff of two policies over the same runs: deltas per run and in total, largest first."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.metrics import METRIC_DIRECTIONS
from analysis.report.diff import DIFF_COLUMNS, TOTAL, diff, to_records, totals
from analysis.run_totals import total_rule
from replay.cli import app
from tests.analysis.conftest import PRESETS, Replayed

ORIGINAL, CORRECTED = PRESETS


@pytest.fixture(scope="module")
def d(replayed: dict[str, Replayed]) -> pd.DataFrame:
    return diff(replayed[ORIGINAL].metrics, replayed[CORRECTED].metrics)


def total_row(d: pd.DataFrame, metric: str) -> pd.Series:
    rows = d[(d["scope"] == "total") & (d["metric"] == metric)]
    assert len(rows) == 1, metric
    return rows.iloc[0]


def weighted_mean(m: pd.DataFrame, col: str) -> float:
    ok = m[col].notna()
    return float((m.loc[ok, col] * m.loc[ok, "n_requests"]).sum() / m.loc[ok, "n_requests"].sum())


def test_columns_and_sections(d: pd.DataFrame, replayed: dict[str, Replayed]) -> None:
    assert list(d.columns) == list(DIFF_COLUMNS)
    scopes = d["scope"].tolist()
    assert scopes == sorted(scopes, key=lambda s: s != "total")
    assert set(d.loc[d["scope"] == "total", "run_id"]) == {TOTAL}
    assert set(d.loc[d["scope"] == "run", "run_id"]) == set(replayed[ORIGINAL].metrics["run_id"])


def test_fewer_small_cache_invalidating_trims_with_the_corrected_preset(
        d: pd.DataFrame, replayed: dict[str, Replayed]) -> None:
    col = "cache_invalidation_n_small_trims"
    a, b = (float(replayed[n].metrics[col].sum()) for n in PRESETS)
    row = total_row(d, col)
    assert (row["a"], row["b"], row["delta"]) == (a, b, b - a)
    assert row["delta"] < 0, "the min-reclaim rule exists to remove small trims"
    assert row["verdict"] == "better"


def test_lower_write_argument_share_with_the_corrected_preset(
        d: pd.DataFrame, replayed: dict[str, Replayed]) -> None:
    col = "arg_share_write_mean"
    a, b = (weighted_mean(replayed[n].metrics, col) for n in PRESETS)
    row = total_row(d, col)
    assert row["a"] == pytest.approx(a) and row["b"] == pytest.approx(b)
    assert row["delta"] < 0, "completed writes shrink to a note under the corrected preset"
    assert row["verdict"] == "better"
    assert row["rel_delta"] == pytest.approx((b - a) / a)


def test_per_run_rows_are_b_minus_a(d: pd.DataFrame, replayed: dict[str, Replayed]) -> None:
    ma, mb = (replayed[n].metrics.set_index("run_id") for n in PRESETS)
    runs = d[d["scope"] == "run"]
    for r in runs.sample(n=200, random_state=0).itertuples():
        a, b = float(ma.loc[r.run_id, r.metric]), float(mb.loc[r.run_id, r.metric])
        assert (r.a, r.b) == (pytest.approx(a, nan_ok=True), pytest.approx(b, nan_ok=True))
        if not (math.isnan(a) or math.isnan(b)):
            assert r.delta == b - a
    both_nan = [(rid, c) for c in ma.columns if c != "policy" for rid in ma.index
                if pd.isna(ma.loc[rid, c]) and pd.isna(mb.loc[rid, c])]
    shown = set(zip(runs["run_id"], runs["metric"]))
    assert both_nan and not shown & set(both_nan)


def test_sorted_by_largest_relative_change_first(d: pd.DataFrame) -> None:
    for scope in ("total", "run"):
        rel = d.loc[d["scope"] == scope, "rel_delta"].abs().fillna(-1.0).tolist()
        assert all(x >= y for x, y in itertools.pairwise(rel)), scope
    assert math.isinf(d["rel_delta"].abs().max()) or d["rel_delta"].abs().iloc[0] > 0


def test_verdicts_follow_the_metric_directions(d: pd.DataFrame) -> None:
    for r in d.itertuples():
        direction = METRIC_DIRECTIONS.get(r.metric, "")
        assert r.direction == direction
        if not direction or math.isnan(r.delta):
            assert r.verdict == ""
        elif r.delta == 0:
            assert r.verdict == "same"
        else:
            assert r.verdict == ("better" if (r.delta < 0) == (direction == "lower") else "worse")


def test_diff_of_a_policy_with_itself_is_all_zeros(replayed: dict[str, Replayed]) -> None:
    m = replayed[CORRECTED].metrics
    same = diff(m, m.copy())
    assert len(same) > 0
    assert (same["delta"] == 0).all()
    assert (same["rel_delta"] == 0).all()
    assert set(same["verdict"]) <= {"same", ""}


def test_totals_aggregate_each_metric_appropriately(replayed: dict[str, Replayed]) -> None:
    m = replayed[ORIGINAL].metrics
    t = totals(m).iloc[0]
    assert t["n_runs"] == len(m)
    assert t["tokens_sent"] == m["tokens_sent"].sum()
    assert t["peak_tokens"] == m["peak_tokens"].max()
    assert t["cache_invalidation_cached_share"] == pytest.approx(
        m["cache_invalidation_cached_tokens"].sum() / m["tokens_sent"].sum())
    assert t["summarisation_per_100_requests"] == pytest.approx(
        100 * m["n_summaries"].sum() / m["n_requests"].sum())
    assert "arg_share_args_peak_request" not in t.index
    assert total_rule("summarisation_min_requests_between") == "min"
    assert total_rule("overshoots_margin_needed_max_frac") == "max"
    assert total_rule("overshoots_est_error_mean_abs_frac") == "mean"


def test_edge_cases_of_relative_change() -> None:
    def frame(policy: str, **cols: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"run_id": ["r1", "r2"], "policy": policy, "n_requests": [10, 10],
                             **cols})

    a = frame("a", n_trims=[0, 4], overshoots_n=[0, 1], x_mean_frac=[np.nan, np.nan])
    b = frame("b", n_trims=[0, 6], overshoots_n=[3, 1], x_mean_frac=[np.nan, 0.5])
    out = diff(a, b).set_index(["scope", "run_id", "metric"])
    assert out.loc[("run", "r1", "n_trims"), "rel_delta"] == 0
    assert out.loc[("run", "r2", "n_trims"), "rel_delta"] == pytest.approx(0.5)
    assert out.loc[("run", "r1", "overshoots_n"), "rel_delta"] == math.inf
    assert ("run", "r1", "x_mean_frac") not in out.index
    assert math.isnan(out.loc[("run", "r2", "x_mean_frac"), "delta"])
    assert out.loc[("run", "r2", "x_mean_frac"), "verdict"] == ""
    first = diff(a, b).iloc[0]
    assert (first["scope"], first["metric"]) == ("total", "overshoots_n")
    records = to_records(diff(a, b))
    json.dumps(records, allow_nan=False)
    assert any(r["rel_delta"] is None for r in records)


def test_a_request_number_has_no_relative_change() -> None:
    """``overshoots_first_request`` -1 (none) -> 193 was "+19,400%", sorted first as the
    largest change of the diff; a request's number is a position, no amount."""
    def frame(policy: str, first: list[int], trims: list[int]) -> pd.DataFrame:
        return pd.DataFrame({"run_id": ["r1", "r2"], "policy": policy, "n_requests": [200, 10],
                             "overshoots_first_request": first, "n_trims": trims})

    out = diff(frame("a", [-1, 4], [4, 4]), frame("b", [193, 8], [5, 4]))
    rows = out[out["metric"] == "overshoots_first_request"].set_index("run_id")
    assert rows.loc["r1", "delta"] == 194 and math.isnan(rows.loc["r1", "rel_delta"])
    assert rows.loc["r2", "delta"] == 4 and math.isnan(rows.loc["r2", "rel_delta"])
    runs = out[out["scope"] == "run"]
    assert runs.iloc[0]["metric"] == "n_trims"  # +25 %, the one relative change


def test_refuses_mixed_policies_and_disjoint_runs(replayed: dict[str, Replayed]) -> None:
    both = pd.concat([replayed[n].metrics for n in PRESETS])
    with pytest.raises(ValueError, match="several policies"):
        diff(both, replayed[ORIGINAL].metrics)
    other = replayed[ORIGINAL].metrics.assign(run_id="elsewhere")
    with pytest.raises(ValueError, match="no run in common"):
        diff(other.head(1), replayed[CORRECTED].metrics)


def test_cli_diff_json_and_traces(samples: Path, tmp_path: Path) -> None:
    log = samples / "claude-code" / "tool_heavy.jsonl"
    runner = CliRunner()
    res = runner.invoke(app, ["diff", str(log), "-p", ORIGINAL, "-p", CORRECTED, "--json",
                              "--out", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["a"], doc["b"]) == (ORIGINAL, CORRECTED)
    assert {r["scope"] for r in doc["rows"]} == {"total", "run"}
    for name in PRESETS:
        res = runner.invoke(app, ["run", str(log), "-p", name, "--out", str(tmp_path / name), "-q"])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["diff", "--traces", str(tmp_path / ORIGINAL),
                              str(tmp_path / CORRECTED), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["rows"] == doc["rows"]
    res = runner.invoke(app, ["diff", str(log), "-p", ORIGINAL, "--out", str(tmp_path)])
    assert res.exit_code == 2
