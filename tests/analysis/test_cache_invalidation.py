"""Cache invalidation: shares, pricing, small trims, recorded comparison."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import frames
from analysis.cache_invalidation import (
    cache_actions,
    cache_invalidation,
    cache_invalidation_summary,
    plot_cache_invalidation,
)
from replay.engine.cache import request_cache
from replay.engine.trace import Trace
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
