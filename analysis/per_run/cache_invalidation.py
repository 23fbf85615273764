"""The per-run ``cache_invalidation_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.cache_invalidation`` (whose pandas ``cache_invalidation_summary``
computes the same columns, the tests' oracle).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, one_of
from analysis.per_run.columns import request_columns
from analysis.per_run.stats import lists_array, ratio
from replay.engine.trace import FAMILIES, FAMILY_NAMES, TRIM, TRIM_KINDS

PRICE_ROUNDING_USD = 1e-9
"""A difference between a request's cost in the trace and its cost priced again that is below
this (a billionth of a dollar) is the two sums' float rounding, not a mismatch:
``cache_invalidation_cost_mismatch_usd`` shows it as 0.  Else two consistent replays read as
1.4e-17 and 4.2e-17 USD, and ``replay diff`` showed that as a +200 % change."""


def beyond_rounding(usd: float) -> float:
    """``usd`` (a cost difference), or 0 when it is below ``PRICE_ROUNDING_USD`` (NaN kept)."""
    return 0.0 if usd < PRICE_ROUNDING_USD else usd


def _fast_cache_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """Cached share, invalidation by family, reclaim minimums, cost and its check, of several
    replays of one run: the tokens sent and cached, and the cost of the cache reads, by NumPy
    over the request columns of all of them at once (each kind converted in one call, each
    operation made once); the cost's check by a loop over each replay's lists (``_priced``).
    The same operations on the same numbers, in order, as for one replay."""
    p = inps[0].policy.cache.prices
    if any(inp.policy.cache.prices != p for inp in inps[1:]):  # other prices: one at a time
        return [_fast_cache_many((inp,))[0] for inp in inps]
    w_price = p.cache_write_per_mtok or 0.0
    truth_a, cached_a = request_columns(inps, ("truth_tokens", "cached_tokens"), np.int64)
    read_usd = cached_a * p.cache_read_per_mtok / 1e6
    n_cached, n_truth = cached_a.sum(axis=1).tolist(), truth_a.sum(axis=1).tolist()
    read_sum = read_usd.sum(axis=1).tolist()
    prices = (p.input_per_mtok, p.cache_read_per_mtok, w_price, p.output_per_mtok)
    rows = []
    for r, inp in enumerate(inps):
        mismatch, mispriced = _priced(inp.requests, *prices)
        n_rec, rec_share, share_there = _recorded(inp.requests)
        rows.append({  # in CACHE_INVALIDATION's order (the tests check every row's)
            "cache_invalidation_cached_share": ratio(n_cached[r], n_truth[r]),
            "cache_invalidation_cached_tokens": n_cached[r],
            "cache_invalidation_invalidated_tokens": sum(inp.requests["invalidated_tokens"]),
            **_of_actions(inp),
            "cache_invalidation_cost_cache_read_usd": read_sum[r],
            "cache_invalidation_cost_mismatch_usd": beyond_rounding(mismatch),
            "cache_invalidation_n_mispriced": mispriced,
            "cache_invalidation_recorded_requests": n_rec,
            "cache_invalidation_recorded_cached_share": rec_share,
            "cache_invalidation_cached_share_where_recorded": share_there,
        })
    return rows


def _priced(rq: Mapping[str, list[Any]], input_price: float, read_price: float,
            write_price: float, output_price: float) -> tuple[float, int]:
    """One replay's largest difference between a request's cost and its input, cache and
    output priced again (USD a million tokens), and its requests whose input is not priced
    exactly once (fresh + cached + written != sent).

    A loop over the lists (typed: compiled, machine words and doubles): each request's
    difference by the definition's operations in its order (a count times a price, over a
    million, the four terms added left to right, then the induced cost), each the IEEE
    operation NumPy's elementwise arrays make; the largest NaN when one is NaN, as NumPy's
    ``max``.  No request (a run of none): NumPy's error for the largest of nothing."""
    fresh: list[int] = rq["fresh_tokens"]
    cached: list[int] = rq["cached_tokens"]
    written: list[int] = rq["cache_write_tokens"]
    sent: list[int] = rq["truth_tokens"]
    output: list[int] = rq["output_tokens"]
    cost: list[float] = rq["cost_usd"]
    induced: list[float] = rq["induced_cost_usd"]
    if not cost:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    worst = 0.0
    mispriced = 0
    for i in range(len(cost)):
        f = fresh[i]
        c = cached[i]
        w = written[i]
        if f + c + w != sent[i]:
            mispriced += 1
        priced: float = f * input_price / 1e6 + c * read_price / 1e6
        priced = priced + w * write_price / 1e6
        priced = priced + output[i] * output_price / 1e6
        priced = priced + induced[i]
        d = abs(cost[i] - priced)
        if i == 0 or d > worst or math.isnan(d):  # (once NaN, the largest stays NaN)
            worst = d
    return worst, mispriced


def _recorded(rq: Mapping[str, list[Any]]) -> tuple[int, float, float]:
    """One replay's requests with a recorded input (above 0) and cache reads, the recorded
    cached share over them and the replay's own there: its cached tokens over its tokens sent.

    A loop over the lists (typed: compiled, machine words), no arrays: the recorded counts and
    the replay's are whole numbers, so their sums are exact as Python's ints, and so are the
    float sums of the pandas definition (NumPy's pairwise sums of float64, a missing count NaN
    and left out) while every value and partial sum is below 2**53 in magnitude: the same
    numbers.  Counts as large as that (never a real log's) are summed as that definition
    does (``_recorded_as_floats``)."""
    rec_in: list[int | None] = rq["recorded_input_tokens"]
    rec_cr: list[int | None] = rq["recorded_cache_read_tokens"]
    cached: list[int] = rq["cached_tokens"]
    truth: list[int] = rq["truth_tokens"]
    n_rec = sum_in = sum_cr = abs_cr = cached_there = truth_there = 0
    for i in range(len(rec_in)):
        got_in = rec_in[i]
        got_cr = rec_cr[i]
        if got_in is None or got_cr is None or got_in <= 0:
            continue
        n_rec += 1
        sum_in += got_in
        sum_cr += got_cr
        abs_cr += abs(got_cr)
        cached_there += cached[i]
        truth_there += truth[i]
    if sum_in >= _EXACT or abs_cr >= _EXACT:
        return _recorded_as_floats(rq)
    if not n_rec:
        return 0, math.nan, math.nan
    return n_rec, ratio(sum_cr, sum_in), ratio(cached_there, truth_there)


_EXACT = 2**53
"""Whole numbers below this are exact as float64 (and so is every sum of them below it)."""


def _recorded_as_floats(rq: Mapping[str, list[Any]]) -> tuple[int, float, float]:
    """``_recorded`` as the definition takes it: the recorded counts as float64 (None → NaN),
    summed by NumPy over the requests with both."""
    n = len(rq["request"])
    rec_in = lists_array((rq["recorded_input_tokens"],), np.float64, n)
    rec_cr = lists_array((rq["recorded_cache_read_tokens"],), np.float64, n)
    there = ~np.isnan(rec_cr) & (rec_in > 0)
    n_rec = int(np.count_nonzero(there))
    if not n_rec:
        return 0, math.nan, math.nan
    cached = np.asarray(rq["cached_tokens"], dtype=np.int64)[there]
    truth = np.asarray(rq["truth_tokens"], dtype=np.int64)[there]
    return (n_rec, ratio(rec_cr[there].sum(), rec_in[there].sum()),
            ratio(int(cached.sum()), int(truth.sum())))


def _of_actions(inp: PartInput) -> dict[str, Any]:
    """The columns of one replay's actions: invalidation by family, reclaim minimums, small
    trims."""
    ac, applied, policy = inp.actions, inp.applied, inp.policy
    small = int(inp.params.small_reclaim_frac * policy.usable_tokens)
    fam = dict.fromkeys(FAMILY_NAMES, 0)
    kinds: list[str] = ac["kind"]
    invalidated: list[int] = ac["invalidated_tokens"]
    reclaimed: list[int] = ac["reclaimed_tokens"]
    reclaimed_est: list[int] = ac["reclaimed_est_tokens"]
    minimum: list[int] = ac["min_reclaim_tokens"]
    n_applied = n_invalidating = inv_sum = 0
    n_undone = len(applied) - sum(applied)
    below, n_small, small_inv = n_undone, 0, 0  # (an undone action is below its minimum)
    # the applied actions' rows, picked out in C (most of a replay's are undone trims), each
    # column read at them only (typed: compiled, whole numbers compared as machine words)
    for i in itertools.compress(range(len(applied)), applied):
        kind = kinds[i]
        inv = invalidated[i]
        if kind == TRIM and reclaimed_est[i] < minimum[i]:
            below += 1
        n_applied += 1
        inv_sum += inv
        if inv > 0:
            n_invalidating += 1
        family = FAMILIES.get(kind)
        if family is not None and family in fam:
            fam[family] += inv
        if kind in TRIM_KINDS and inv > 0 and reclaimed[i] < small:
            n_small += 1
            small_inv += inv
    return {
        "cache_invalidation_n_invalidating_actions": n_invalidating,
        "cache_invalidation_invalidated_per_action_tokens": (inv_sum / n_applied
                                                             if n_applied else math.nan),
        **{_FAMILY_COLUMNS[f]: v for f, v in fam.items()},
        "cache_invalidation_n_below_min": below,
        "cache_invalidation_n_undone": n_undone,
        "cache_invalidation_n_small_trims": n_small,
        "cache_invalidation_small_trim_invalidated_tokens": small_inv,
    }


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
          "re-priced one (0: consistent; under a billionth of a dollar, the sums' rounding, is 0)",
          dtype=_F),
    _spec("n_mispriced", "requests", "requests whose input is not priced exactly once"),
    _spec("recorded_requests", "requests", "requests with recorded input and cache reads"),
    _spec("recorded_cached_share", "fraction", "recorded cache reads / recorded input, where "
          "recorded", dtype=_F, weight=_WHERE_RECORDED,
          bounds=(0, None)),  # (a log's own counts: nothing holds its reads under its input)
    _spec("cached_share_where_recorded", "fraction", "the replay's cached share over the same "
          "requests", dtype=_F, weight=_WHERE_RECORDED),
), one_of(_fast_cache_many), needs_facts=False, many=_fast_cache_many)
METRICS: tuple[MetricPart, ...] = (CACHE_INVALIDATION,)
"""The per-run ``cache_invalidation_*`` metrics (``cache_invalidation_summary`` computes the
same with pandas)."""
