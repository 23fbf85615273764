"""Cache invalidation: shares, pricing, small trims, recorded comparison."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.axes import Axes

from analysis import frames
from analysis.cache_invalidation import (
    cache_actions,
    cache_invalidation,
    cache_invalidation_summary,
    plot_cache_invalidation,
)
from analysis.per_run.cache_invalidation import PRICE_ROUNDING_USD
from analysis.per_run.stats import ratio
from replay.engine.cache import request_cache
from replay.engine.trace import FAMILY_NAMES, Trace
from replay.policy import Cache, Policy, Prices, load_policy

ANTHROPIC = dataclasses.replace(load_policy("two-tier-corrected"), cache=Cache())
"""Corrected two-tier tiers (min reclaim 1/8) with Anthropic prices (a cache-write premium)."""


def requests(policy: Policy, sizes: list[tuple[int, int]],
             recorded: list[tuple[int | None, int | None]] | None = None) -> pd.DataFrame:
    """(truth, common prefix) per request, priced by the real cache model."""
    rows = []
    for k, (truth, common) in enumerate(sizes):
        c = request_cache(policy.cache, truth, common, 10)
        rin, rcr = recorded[k] if recorded else (None, None)
        rows.append({"run_id": "r", "policy": policy.name, "request": k, "truth_tokens": truth,
                     "cached_tokens": c.cached_tokens, "cache_write_tokens": c.cache_write_tokens,
                     "fresh_tokens": c.fresh_tokens, "output_tokens": 10,
                     "invalidated_tokens": max(0, (sizes[k - 1][0] if k else 0) - common)
                     if k else 0, "cost_usd": c.cost_usd,
                     "recorded_input_tokens": rin, "recorded_cache_read_tokens": rcr})
    df = pd.DataFrame(rows)
    for col in ("recorded_input_tokens", "recorded_cache_read_tokens"):
        df[col] = pd.array(df[col], dtype="Int64")
    return df


def action(request: int, *, kind: str = "trim", tier: str = "tier1_trim", undone: bool = False,
           invalidated: int = 0, reclaimed: int = 0, reclaimed_est: int = 0,
           minimum: int | None = None) -> dict[str, Any]:
    """An actions row as the trace holds it; a trim's resolved minimum defaults to the one
    ANTHROPIC's trim tier records (an eighth of its usable window)."""
    if minimum is None:
        minimum = int(0.125 * ANTHROPIC.usable_tokens) if kind == "trim" else 0
    return {"run_id": "r", "policy": ANTHROPIC.name, "action": 0, "request": request, "tier": tier,
            "kind": kind, "undone": undone, "invalidated_tokens": invalidated,
            "reclaimed_tokens": reclaimed, "reclaimed_est_tokens": reclaimed_est,
            "min_reclaim_tokens": minimum}


def test_cached_share_is_a_ratio_of_sums() -> None:
    df = cache_invalidation(requests(ANTHROPIC, [(2000, 0), (3000, 2000), (3000, 1000)]), ANTHROPIC)
    assert df["cached_tokens"].tolist() == [0, 2000, 0]  # 1000 < the 1024-token minimum prefix
    s = cache_invalidation_summary(df, cache_actions(pd.DataFrame([action(0)]).iloc[0:0],
                                                     ANTHROPIC)).iloc[0]
    assert s["cache_invalidation_cached_share"] == 2000 / 8000
    assert s["cache_invalidation_invalidated_tokens"] == 2000  # request 2 reused 1000 of 3000


def test_pricing_each_token_once_with_a_write_premium() -> None:
    df = cache_invalidation(requests(ANTHROPIC, [(2000, 0), (3000, 2000)]), ANTHROPIC)
    r1 = df.iloc[1]
    assert (r1["cached_tokens"], r1["cache_write_tokens"], r1["fresh_tokens"]) == (2000, 1000, 0)
    assert math.isclose(r1["cost_check_usd"], (2000 * 0.3 + 1000 * 3.75 + 10 * 15.0) / 1e6)
    assert df["is_priced_once"].all()
    s = cache_invalidation_summary(df, cache_actions(pd.DataFrame([action(0)]).iloc[0:0],
                                                     ANTHROPIC)).iloc[0]
    assert s["cache_invalidation_cost_mismatch_usd"] < 1e-9
    assert s["cache_invalidation_n_mispriced"] == 0


def test_a_wrong_price_is_caught() -> None:
    """Re-pricing with another table than the trace's shows up as a mismatch."""
    df = requests(ANTHROPIC, [(2000, 0), (3000, 2000)])
    cheap = dataclasses.replace(ANTHROPIC, cache=Cache(prices=Prices(cache_read_per_mtok=0.0)))
    s = cache_invalidation_summary(cache_invalidation(df, cheap),
                                   cache_actions(pd.DataFrame([action(0)]).iloc[0:0], cheap))
    assert s["cache_invalidation_cost_mismatch_usd"].item() > 0


def _beyond(usd: float) -> float:
    """The oracle's rounding rule: a difference under ``PRICE_ROUNDING_USD`` is none."""
    return usd if math.isnan(usd) or usd >= PRICE_ROUNDING_USD else 0.0


def test_a_rounding_difference_is_no_mismatch() -> None:
    """Float rounding between the trace's cost and the re-priced one (1e-17 USD) reads 0, so
    that two consistent replays never differ in it; a real difference of a millionth of a
    dollar is kept as it is."""
    df = cache_invalidation(requests(ANTHROPIC, [(2000, 0), (3000, 2000)]), ANTHROPIC)
    no_actions = cache_actions(pd.DataFrame([action(0)]).iloc[0:0], ANTHROPIC)
    for extra, expected in ((1.7e-17, 0.0), (-2.9e-17, 0.0), (1e-6, 1e-6)):
        shifted = df.assign(cost_usd=df["cost_check_usd"] + [0.0, extra])
        got = cache_invalidation_summary(shifted, no_actions).iloc[0]
        mismatch = got["cache_invalidation_cost_mismatch_usd"]
        assert mismatch == expected if expected == 0 else math.isclose(mismatch, expected,
                                                                       rel_tol=1e-6), extra


def test_below_min_and_small_trims() -> None:
    usable = ANTHROPIC.usable_tokens  # 105,424: minimum 13,178, small < 13,178
    acts = cache_actions(pd.DataFrame([
        action(1, undone=True),                                                  # undone pass
        action(2, invalidated=5000, reclaimed=20_000, reclaimed_est=18_000),     # big, fine
        action(3, invalidated=5000, reclaimed=9000, reclaimed_est=8000),         # applied, short
        action(4, invalidated=0, reclaimed=100, reclaimed_est=90),               # nothing cached
        action(5, kind="summarise", tier="tier2_summary", invalidated=7000, reclaimed=50),
    ]), ANTHROPIC)
    assert acts["min_reclaim_tokens"].tolist()[:4] == [int(0.125 * usable)] * 4
    assert acts["is_below_min"].tolist() == [True, False, True, True, False]
    assert acts["is_small_trim"].tolist() == [False, False, True, False, False]
    df = cache_invalidation(requests(ANTHROPIC, [(10, 0)] * 6), ANTHROPIC)
    s = cache_invalidation_summary(df, acts).iloc[0]
    assert (s["cache_invalidation_n_below_min"], s["cache_invalidation_n_undone"]) == (3, 1)
    assert s["cache_invalidation_n_small_trims"] == 1
    assert s["cache_invalidation_small_trim_invalidated_tokens"] == 5000
    assert s["cache_invalidation_invalidated_trim_tokens"] == 10_000
    assert s["cache_invalidation_invalidated_summarise_tokens"] == 7000
    assert s["cache_invalidation_invalidated_per_action_tokens"] == 17_000 / 4


def test_edge_policy_without_minimum_has_nothing_below_it() -> None:
    orig = load_policy("two-tier-original")
    acts = cache_actions(pd.DataFrame([action(1, invalidated=500, reclaimed=10, reclaimed_est=9,
                                              minimum=0) | {"policy": orig.name}]), orig)
    assert not acts["is_below_min"].any()
    assert acts["is_small_trim"].all()  # the common 1/8-window yardstick still applies


def test_recorded_comparison_where_the_log_has_usage() -> None:
    df = cache_invalidation(requests(ANTHROPIC, [(2000, 0), (3000, 2000), (4000, 3000)],
                                     [(None, None), (3000, 1500), (5000, 4500)]), ANTHROPIC)
    assert np.isnan(df["recorded_cached_share"].iloc[0])
    s = cache_invalidation_summary(df, cache_actions(pd.DataFrame([action(0)]).iloc[0:0],
                                                     ANTHROPIC)).iloc[0]
    assert s["cache_invalidation_recorded_requests"] == 2
    assert s["cache_invalidation_recorded_cached_share"] == 6000 / 8000
    assert s["cache_invalidation_cached_share_where_recorded"] == 5000 / 7000


def test_edge_no_usage_recorded() -> None:
    df = cache_invalidation(requests(ANTHROPIC, [(2000, 0)]), ANTHROPIC)
    s = cache_invalidation_summary(df, cache_actions(pd.DataFrame([action(0)]).iloc[0:0],
                                                     ANTHROPIC)).iloc[0]
    assert s["cache_invalidation_recorded_requests"] == 0
    assert np.isnan(s["cache_invalidation_recorded_cached_share"])
    assert np.isnan(s["cache_invalidation_invalidated_per_action_tokens"])


def test_plot_cache_invalidation() -> None:
    ax = plot_cache_invalidation(cache_invalidation(requests(ANTHROPIC, [(2000, 0), (3000, 100)]),
                                                    ANTHROPIC))
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "request" and "tokens" in ax.get_ylabel()


def test_real_traces_cached_share_and_prices(replayed: dict[str, Any]) -> None:
    for rep in replayed.values():
        req, act = frames.requests_df(rep.trace), frames.actions_df(rep.trace)
        df = cache_invalidation(req, rep.policy)
        s = cache_invalidation_summary(df, cache_actions(act, rep.policy))
        assert (df["cached_share"].dropna() <= 1).all()
        assert s["cache_invalidation_cached_share"].dropna().between(0, 1).all()
        assert df["is_priced_once"].all()
        assert (s["cache_invalidation_cost_mismatch_usd"] < 1e-8).all()
        assert "cache_invalidation_cost_usd" not in s  # it was cost_usd twice (issue 16)
        # vLLM prices: no write premium, so nothing is priced as a cache write
        assert (df["cache_write_tokens"] == 0).all()
        recorded = s["cache_invalidation_recorded_cached_share"].dropna()
        assert len(recorded) > 0 and recorded.between(0, 1).all()


def test_real_traces_invalidation_totals(both_trace: Trace) -> None:
    req = frames.requests_df(both_trace)
    first = req[req["request"] == 0]
    assert (first["invalidated_tokens"] == 0).all()
    assert (req["invalidated_tokens"] >= 0).all()


def test_real_action_and_request_invalidation_agree(both_trace: Trace) -> None:
    """Where one applied action changed the context before a request, both tables agree."""
    req, act = frames.requests_df(both_trace), frames.actions_df(both_trace)
    applied = act[~act["undone"].astype(bool)]
    per = (applied.groupby(["run_id", "policy", "request"])
           .agg(n=("action", "size"), inv=("invalidated_tokens", "sum")).reset_index())
    m = per[per["n"] == 1].merge(req, on=["run_id", "policy", "request"])
    assert len(m) > 0
    assert (m["inv"] == m["invalidated_tokens"]).all()


def _summary_by_pandas_groups(df: pd.DataFrame, acts: pd.DataFrame) -> pd.DataFrame:
    """``cache_invalidation_summary`` as it was written with pandas frames per (run, policy): the
    oracle of its numpy form."""
    g = ["run_id", "policy"]
    rows = []
    by_acts = {k: a for k, a in acts.groupby(g, sort=False)}
    for (rid, pol), r in df.groupby(g, sort=False):
        a = by_acts.get((rid, pol), acts.iloc[0:0])
        applied = a[~a["undone"]]
        both = r.dropna(subset=["recorded_input_tokens", "recorded_cache_read_tokens"])
        both = both[both["recorded_input_tokens"] > 0]
        small = a[a["is_small_trim"]]
        rows.append([
            rid, pol, ratio(r["cached_tokens"].sum(), r["truth_tokens"].sum()),
            int(r["cached_tokens"].sum()), int(r["invalidated_tokens"].sum()),
            int((applied["invalidated_tokens"] > 0).sum()),
            float(applied["invalidated_tokens"].mean()) if len(applied) else np.nan,
            *(int(applied[applied["family"] == f]["invalidated_tokens"].sum())
              for f in FAMILY_NAMES),
            int(a["is_below_min"].sum()), int(a["undone"].sum()), len(small),
            int(small["invalidated_tokens"].sum()), float(r["cost_cache_read_usd"].sum()),
            _beyond(float((r["cost_usd"] - r["cost_check_usd"]).abs().max())),
            int((~r["is_priced_once"]).sum()), len(both),
            ratio(both["recorded_cache_read_tokens"].sum(), both["recorded_input_tokens"].sum()),
            ratio(both["cached_tokens"].sum(), both["truth_tokens"].sum())])
    return pd.DataFrame(rows, columns=cache_invalidation_summary(df.iloc[0:0],
                                                                  acts.iloc[0:0]).columns)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 50), n_acts=st.integers(0, 30))
def test_summary_equals_the_per_group_pandas_computation(seed: int, n: int, n_acts: int) -> None:
    rng = np.random.default_rng(seed)
    runs = ["r0", "r1", "r2"]

    def usd(k: int) -> np.ndarray:
        v = rng.random(k) * 0.1
        v[rng.random(k) < 0.2] = np.nan
        return v

    def recorded() -> pd.Series:
        return pd.Series(rng.integers(0, 3, n) * 3000, dtype="Int64").mask(rng.random(n) < 0.3)

    df = pd.DataFrame({
        "run_id": rng.choice(runs, n), "policy": "p",
        "cached_tokens": rng.integers(0, 9000, n), "truth_tokens": rng.integers(0, 9000, n),
        "invalidated_tokens": rng.integers(0, 900, n), "cost_cache_read_usd": usd(n),
        "cost_usd": usd(n), "cost_check_usd": usd(n), "is_priced_once": rng.random(n) < 0.8,
        "recorded_input_tokens": recorded(), "recorded_cache_read_tokens": recorded()})
    acts = pd.DataFrame({
        "run_id": rng.choice(runs, n_acts), "policy": "p", "undone": rng.random(n_acts) < 0.3,
        "invalidated_tokens": rng.integers(0, 900, n_acts),
        "family": rng.choice(list(FAMILY_NAMES), n_acts),
        "is_below_min": rng.random(n_acts) < 0.3, "is_small_trim": rng.random(n_acts) < 0.3})
    pd.testing.assert_frame_equal(cache_invalidation_summary(df, acts),
                                  _summary_by_pandas_groups(df, acts), check_exact=True)
