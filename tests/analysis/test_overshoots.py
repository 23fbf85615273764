"""Limit overshoots: counts, sizes, the margin that would have fired, estimator error."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.axes import Axes

from analysis import frames
from analysis.overshoots import overshoots, overshoots_summary, plot_overshoots
from replay.engine.trace import Trace


def requests(truth: list[int], est: list[int], *, raw: list[int] | None = None,
             recorded: list[int | None] | None = None, window: int = 1000,
             reserve: int = 200) -> pd.DataFrame:
    n = len(truth)
    return pd.DataFrame({
        "run_id": "r", "policy": "p", "request": range(n), "est_tokens": est, "truth_tokens": truth,
        "raw_tokens": raw if raw is not None else truth,
        "recorded_input_tokens": pd.array(recorded or [None] * n, dtype="Int64"),
        "window_tokens": window, "reserve_tokens": reserve,
        "overshoot_tokens": [max(0, t + reserve - window) for t in truth]})


def test_overshoots_by_construction() -> None:
    df = overshoots(requests([500, 900, 700, 1000], [450, 720, 630, 760]))
    assert df["limit_tokens"].eq(800).all()
    assert df["is_overshoot"].tolist() == [False, True, False, True]
    assert np.allclose(df["est_error_frac"], [-0.1, -0.2, -0.1, -0.24])
    assert np.isnan(df["margin_needed_frac"].iloc[0])
    assert np.allclose(df["margin_needed_frac"].iloc[[1, 3]], [0.1, 0.05])
    s = overshoots_summary(df).iloc[0]
    assert (s["overshoots_n"], s["overshoots_first_request"]) == (2, 1)
    assert (s["overshoots_max_tokens"], s["overshoots_total_tokens"]) == (200, 300)
    assert s["overshoots_frac"] == 0.5
    assert math.isclose(s["overshoots_margin_needed_max_frac"], 0.1)
    assert math.isclose(s["overshoots_est_error_median_frac"], -0.15)


def test_boundary_exactly_at_the_limit_is_no_overshoot() -> None:
    """105,425 + 24,576 = 130,001 overshoots a 130,000 window; 105,424 does not."""
    df = overshoots(requests([105_424, 105_425], [90_000, 90_000], window=130_000,
                             reserve=24_576))
    assert df["overshoot_tokens"].tolist() == [0, 1]
    assert df["is_overshoot"].tolist() == [False, True]


def test_margin_needed_would_have_fired() -> None:
    df = overshoots(requests([900, 990], [700, 500]))
    m = df["margin_needed_frac"]
    assert (df["est_tokens"] >= (1 - m) * df["limit_tokens"] - 1e-9).all()
    smaller = m - 0.01  # any smaller margin would not have fired
    assert (df["est_tokens"] < (1 - smaller) * df["limit_tokens"]).all()


def test_edge_estimate_already_over_the_limit_needs_no_margin() -> None:
    df = overshoots(requests([950], [900]))
    assert df["margin_needed_frac"].tolist() == [0.0]


def test_edge_no_overshoot() -> None:
    s = overshoots_summary(overshoots(requests([10, 20], [9, 18]))).iloc[0]
    assert (s["overshoots_n"], s["overshoots_first_request"]) == (0, -1)
    assert s["overshoots_max_tokens"] == 0
    assert np.isnan(s["overshoots_margin_needed_max_frac"])


def test_recorded_comparison_only_on_comparable_requests() -> None:
    df = overshoots(requests([100, 200, 150, 250], [90, 180, 135, 225], raw=[100, 200, 300, 400],
                             recorded=[125, None, 200, 500]))
    # request 1 has no usage; 2 and 3 were cut by the policy (truth ≠ raw)
    assert df["is_comparable"].tolist() == [True, False, False, False]
    assert np.allclose(df["truth_vs_recorded_frac"].iloc[0], -0.2)
    assert np.allclose(df["est_vs_recorded_frac"].iloc[0], -0.28)
    assert df["est_vs_recorded_frac"].iloc[1:].isna().all()
    s = overshoots_summary(df).iloc[0]
    assert s["overshoots_n_comparable"] == 1


def test_recorded_compaction_ends_comparability() -> None:
    req = requests([100, 200, 300], [90, 180, 270], recorded=[110, 220, 50])
    comps = pd.DataFrame({"run_id": ["r"], "msg": [3], "request": pd.array([2], dtype="Int64")})
    assert overshoots(req, compactions=comps)["is_comparable"].tolist() == [True, True, False]


def test_edge_run_without_usage() -> None:
    s = overshoots_summary(overshoots(requests([100], [90]))).iloc[0]
    assert s["overshoots_n_comparable"] == 0
    assert np.isnan(s["overshoots_est_vs_recorded_median_frac"])


def test_plot_overshoots() -> None:
    ax = plot_overshoots(overshoots(requests([100, 900], [90, 700], recorded=[120, None])))
    assert isinstance(ax, Axes)
    assert "fraction" in ax.get_xlabel() and "count" in ax.get_ylabel()


def test_real_counts_match_the_request_table(both_trace: Trace) -> None:
    req = frames.requests_df(both_trace)
    df = overshoots(req)
    s = overshoots_summary(df)
    per_run = req.assign(o=req["overshoot_tokens"] > 0).groupby(["run_id", "policy"])["o"].sum()
    got = s.set_index(["run_id", "policy"])["overshoots_n"]
    assert got.sort_index().tolist() == per_run.astype(int).sort_index().tolist()
    over = req["truth_tokens"] + req["reserve_tokens"] > req["window_tokens"]
    assert int(df["is_overshoot"].sum()) == int(over.sum())


@pytest.mark.parametrize("preset", ["two-tier-original", "two-tier-corrected"])
def test_real_estimator_reads_about_ten_percent_low(both_trace: Trace, preset: str) -> None:
    """Both presets estimate with o200k × 0.9: ~−10 % against o200k truth (DESIGN §6), on the
    runs without recorded usage (tokenizer truth); lower still against the recorded usage.

    Per-block rounding of the scale reads a little lower on runs of many small blocks
    (−11.3 % on one Codex run), hence the band.
    """
    req = frames.requests_df(both_trace)
    s = overshoots_summary(overshoots(req[req["policy"] == preset]))
    big = s[s["run_id"].isin(req.loc[req["truth_tokens"] > 5000, "run_id"])]
    plain = req.loc[req["truth_source"] == "tokenizer-fallback", "run_id"]  # no recorded usage
    tokenizer = big[big["run_id"].isin(plain)]
    assert len(tokenizer) > 0
    assert tokenizer["overshoots_est_error_median_frac"].between(-0.12, -0.095).all()
    # judged by the recorded usage the estimate reads lower still: it misses the system prompt
    anchored = big[~big["run_id"].isin(plain)]
    assert len(anchored) > 0 and (anchored["overshoots_est_error_median_frac"] < -0.095).all()


def test_one_spike_or_outlier_does_not_flatten_the_error_histogram() -> None:
    """Issue #25 item 10: 400 exact estimates, 60 spread within ±10 % and one estimate 50×
    off; the axis spans the bulk (the outlier drawn at its edge and counted in the legend) and
    the counts go on a log scale."""
    truth = [1000] * 461
    est = [1000] * 400 + [900 + 3 * k for k in range(60)] + [50_000]
    ax = plot_overshoots(overshoots(requests(truth, est, window=100_000)))
    low, high = ax.get_xlim()
    assert -0.2 < low and high < 1.0  # the outlier's +49 would stretch it to 49
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("1 beyond the axis" in t for t in legend), legend


def _summary_by_pandas_groups(df: pd.DataFrame) -> pd.DataFrame:
    """``overshoots_summary`` as it was written with a pandas frame per (run, policy): the oracle
    of its numpy form."""
    def q(s: pd.Series, x: float) -> float:
        s = s.dropna()
        return float(s.astype("float64").quantile(x)) if len(s) else np.nan

    rows = []
    for (rid, pol), g in df.groupby(["run_id", "policy"], sort=False):
        over, err, comp = g[g["is_overshoot"]], g["est_error_frac"].dropna(), g[g["is_comparable"]]
        rows.append([
            rid, pol, len(over), len(over) / len(g),
            int(over["request"].min()) if len(over) else -1,
            int(over["overshoot_tokens"].max()) if len(over) else 0,
            int(over["overshoot_tokens"].sum()),
            float(over["margin_needed_frac"].max()) if len(over) else np.nan,
            q(err, 0.5), q(err, 0.05), q(err, 0.95),
            float(err.abs().mean()) if len(err) else np.nan, len(comp),
            q(comp["est_vs_recorded_frac"], 0.5), q(comp["truth_vs_recorded_frac"], 0.5)])
    return pd.DataFrame(rows, columns=overshoots_summary(df.iloc[0:0]).columns)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), n_groups=st.integers(1, 4))
def test_summary_equals_the_per_group_pandas_computation(seed: int, n: int,
                                                         n_groups: int) -> None:
    rng = np.random.default_rng(seed)

    def frac() -> np.ndarray:
        v = rng.normal(0, 0.01, n)
        v[rng.random(n) < 0.3] = np.nan
        return v

    df = pd.DataFrame({
        "run_id": rng.choice([f"r{i}" for i in range(n_groups)], n),
        "policy": rng.choice(["a", "b"], n), "request": rng.integers(0, 500, n),
        "overshoot_tokens": rng.integers(0, 5000, n), "is_overshoot": rng.random(n) < 0.3,
        "margin_needed_frac": frac(), "est_error_frac": frac(),
        "is_comparable": rng.random(n) < 0.6, "est_vs_recorded_frac": frac(),
        "truth_vs_recorded_frac": frac()})
    pd.testing.assert_frame_equal(overshoots_summary(df), _summary_by_pandas_groups(df),
                                  check_exact=True)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(1, 1500), st.integers(0, 1500)), min_size=1, max_size=12),
       st.one_of(st.none(), st.lists(st.integers(300, 1200), min_size=12, max_size=12)))
def test_fast_overshoots_equal_the_summary_with_one_window_or_many(
        pairs: list[tuple[int, int]], windows: list[int] | None) -> None:
    """The fast part takes one usable window for a replay whose requests all have the same
    window and reserve, and each request's otherwise: the same figures as the pandas summary."""
    from analysis.metric_spec import PartInput
    from analysis.per_run.overshoots import OVERSHOOTS
    from replay.policy import load_policy

    n, reserve = len(pairs), 200
    window = windows[:n] if windows is not None else [1000] * n
    truth, est = [t for t, _ in pairs], [e for _, e in pairs]
    df = pd.DataFrame({
        "run_id": "r", "policy": "p", "request": range(n), "est_tokens": est,
        "truth_tokens": truth, "raw_tokens": truth,
        "recorded_input_tokens": pd.array([None] * n, dtype="Int64"),
        "window_tokens": window, "reserve_tokens": reserve,
        "overshoot_tokens": [max(0, t + reserve - w) for t, w in zip(truth, window)]})
    want = overshoots_summary(overshoots(df)).iloc[0]
    rq = {c: df[c].tolist() for c in ("request", "est_tokens", "truth_tokens", "window_tokens",
                                      "reserve_tokens", "overshoot_tokens")}
    got = OVERSHOOTS.compute(PartInput(rq, {}, {}, [], load_policy("none"), None))
    for name in OVERSHOOTS.names:
        a, b = got[name], want[name]
        assert a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12), \
            (name, a, b)
