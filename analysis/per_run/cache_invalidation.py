"""The per-run ``cache_invalidation_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.cache_invalidation`` (whose pandas ``cache_invalidation_summary``
computes the same columns, the tests' oracle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.metric_spec import MetricPart, MetricSpec, PartInput
from analysis.per_run.stats import ratio
from replay.engine.trace import FAMILIES, FAMILY_NAMES, TRIM, TRIM_KINDS


def _fast_cache(inp: PartInput) -> dict[str, Any]:
    """Cached share, invalidation by family, reclaim minimums, cost and its check."""
    rq, ac, applied, policy = inp.requests, inp.actions, inp.applied, inp.policy
    p = policy.cache.prices
    small = int(inp.params.small_reclaim_frac * policy.usable_tokens)
    fam = dict.fromkeys(FAMILY_NAMES, 0)
    inv_applied: list[int] = []
    below = n_small = small_inv = 0
    for kind, inv, ok, reclaimed, reclaimed_est, minimum in zip(
            ac["kind"], ac["invalidated_tokens"], applied, ac["reclaimed_tokens"],
            ac["reclaimed_est_tokens"], ac["min_reclaim_tokens"]):
        if not ok:
            below += 1
            continue
        below += kind == TRIM and reclaimed_est < minimum
        inv_applied.append(inv)
        family = FAMILIES.get(kind)
        if family in fam:
            fam[family] += inv
        if kind in TRIM_KINDS and inv > 0 and reclaimed < small:
            n_small += 1
            small_inv += inv
    w_price = p.cache_write_per_mtok or 0.0
    # NumPy over the request columns (each kind converted in one call): the same operations on
    # the same numbers, in order
    truth_a, cached_a, write_a, fresh_a, out_a = np.array(
        (rq["truth_tokens"], rq["cached_tokens"], rq["cache_write_tokens"], rq["fresh_tokens"],
         rq["output_tokens"]), dtype=np.int64)
    # recorded counts may be missing (None → NaN); whole numbers far below 2**53 sum exactly
    cost_a, induced_a, rec_in, rec_cr = np.array(
        (rq["cost_usd"], rq["induced_cost_usd"], rq["recorded_input_tokens"],
         rq["recorded_cache_read_tokens"]), dtype=np.float64)
    read_usd = cached_a * p.cache_read_per_mtok / 1e6
    mismatch = abs(cost_a - (((fresh_a * p.input_per_mtok / 1e6) + read_usd)
                             + (write_a * w_price / 1e6)
                             + (out_a * p.output_per_mtok / 1e6)
                             + induced_a)).max()
    both = ~np.isnan(rec_cr) & (rec_in > 0)
    n_both = int(np.count_nonzero(both))
    if n_both == len(both):  # every request recorded (or none): the same sums, unindexed
        rec_share = ratio(rec_cr.sum(), rec_in.sum()) if n_both else math.nan
        share_there = ratio(int(cached_a.sum()), int(truth_a.sum())) if n_both else math.nan
    else:
        rec_share = ratio(rec_cr[both].sum(), rec_in[both].sum()) if n_both else math.nan
        share_there = ratio(int(cached_a[both].sum()), int(truth_a[both].sum()))
    n_cached = int(cached_a.sum())
    out = {
        "cache_invalidation_cached_share": ratio(n_cached, int(truth_a.sum())),
        "cache_invalidation_cached_tokens": n_cached,
        "cache_invalidation_invalidated_tokens": sum(rq["invalidated_tokens"]),
        "cache_invalidation_n_invalidating_actions": sum(1 for v in inv_applied if v > 0),
        "cache_invalidation_invalidated_per_action_tokens": (sum(inv_applied) / len(inv_applied)
                                                             if inv_applied else math.nan),
        **{_FAMILY_COLUMNS[f]: v for f, v in fam.items()},
        "cache_invalidation_n_below_min": below,
        "cache_invalidation_n_undone": len(applied) - sum(applied),
        "cache_invalidation_n_small_trims": n_small,
        "cache_invalidation_small_trim_invalidated_tokens": small_inv,
        "cache_invalidation_cost_cache_read_usd": float(read_usd.sum()),
        "cache_invalidation_cost_mismatch_usd": float(mismatch),
        "cache_invalidation_n_mispriced": int(np.count_nonzero(cached_a + write_a + fresh_a
                                                               != truth_a)),
        "cache_invalidation_recorded_requests": n_both,
        "cache_invalidation_recorded_cached_share": rec_share,
        "cache_invalidation_cached_share_where_recorded": share_there,
    }
    return {c: out[c] for c in CACHE_INVALIDATION.names}


_FAMILY_COLUMNS = {f: f"cache_invalidation_invalidated_{f}_tokens" for f in FAMILY_NAMES}
"""A family's invalidated-tokens column."""


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"cache_invalidation_{name}", unit, description, **kw)


_F = "float64"
_WHERE_RECORDED = "cache_invalidation_recorded_requests"
CACHE_INVALIDATION = MetricPart("cache_invalidation", (
    _spec("cached_share", "fraction", "Σ cached tokens / Σ tokens sent", dtype=_F,
          better="higher", ratio=("cache_invalidation_cached_tokens", "tokens_sent", 1.0),
          label="cached share of input"),
    _spec("cached_tokens", "tokens", "Σ input tokens served from the prefix cache"),
    _spec("invalidated_tokens", "tokens", "Σ cached prefix tokens cuts forced to be recomputed",
          better="lower"),
    _spec("n_invalidating_actions", "count", "applied actions that invalidated cached tokens"),
    _spec("invalidated_per_action_tokens", "tokens", "mean tokens invalidated per applied action",
          dtype=_F, weight="cache_invalidation_n_invalidating_actions"),
    *(_spec(f"invalidated_{fam}_tokens", "tokens", f"tokens invalidated by {fam} actions")
      for fam in FAMILY_NAMES),
    _spec("n_below_min", "count", "trim passes undone or applied below the tier's minimum"),
    _spec("n_undone", "count", "actions undone"),
    _spec("n_small_trims", "count", "applied trims that invalidated cached tokens but reclaimed "
          "less than small_reclaim_frac of the usable window", better="lower",
          label="small cache-invalidating trims"),
    _spec("small_trim_invalidated_tokens", "tokens", "tokens invalidated by small trims",
          better="lower"),
    _spec("cost_cache_read_usd", "USD", "cost of the cache reads", dtype=_F),
    _spec("cost_mismatch_usd", "USD", "largest difference between the trace's cost and the "
          "re-priced one (0: consistent)", dtype=_F),
    _spec("n_mispriced", "requests", "requests whose input is not priced exactly once"),
    _spec("recorded_requests", "requests", "requests with recorded input and cache reads"),
    _spec("recorded_cached_share", "fraction", "recorded cache reads / recorded input, where "
          "recorded", dtype=_F, weight=_WHERE_RECORDED),
    _spec("cached_share_where_recorded", "fraction", "the replay's cached share over the same "
          "requests", dtype=_F, weight=_WHERE_RECORDED),
), _fast_cache, needs_facts=False)
METRICS: tuple[MetricPart, ...] = (CACHE_INVALIDATION,)
"""The per-run ``cache_invalidation_*`` metrics (``cache_invalidation_summary`` computes the
same with pandas)."""
