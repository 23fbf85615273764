"""Every ``metrics()`` column for one (run, policy) replay, from plain column lists: the sweep path.

``analysis.metrics.metrics`` builds pandas frames and runs the five analyses;
for a one-run trace that costs about a second on the sample corpus, far too much
for a sweep that replays tens of thousands of settings (here: under a
millisecond a row).  This module computes the same columns in two parts:

- ``analysis.run_facts.run_facts(corpus, run_id)`` — everything that does not
  depend on the policy, once per run;
- ``fast_metrics(facts, trace, policy)`` — one row (a dict in ``METRIC_COLUMNS``
  order) from the trace's column lists (``Trace.columns``), with no Arrow or
  pandas per replay.

The definitions are those of the analysis modules (their docstrings); the
arithmetic follows them step by step (NumPy means, sums and percentiles where
pandas used them), and ``tests/analysis/test_sweep.py`` checks the rows equal
``metrics()`` on real traces, column by column.  Integers are equal exactly;
floats are equal to the last bits or within 1e-12 relative (the order of a
float sum can differ between pandas' grouped sums and NumPy's).

Not here: the definitions themselves (the analysis modules), the sweep loop
(``analysis.sweep``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics import BASIC_COLUMNS
from analysis.run_facts import RunFacts
from replay.policy import Policy
from replay.trace import FAMILIES, FAMILY_NAMES, FATES, SUMMARY_KINDS, TRIM, TRIM_KINDS, Trace

METRICS_VERSION = "1"
"""Bumped whenever a column here changes meaning (sweep caches are keyed by it)."""

_REREADS = ("rereads_n_reads", "rereads_n", "rereads_n_redundant", "rereads_n_eviction_induced",
            "rereads_n_refresh", "rereads_n_retry", "rereads_tokens", "rereads_tokens_redundant",
            "rereads_tokens_eviction_induced", "rereads_n_evicted_trimmed",
            "rereads_n_evicted_summarised", "rereads_n_evicted_dropped", "rereads_n_loops",
            "rereads_loop_reads", "rereads_max_loop_reads", "rereads_n_identical",
            "rereads_n_identical_unchanged")
_ARG_SHARE = ("arg_share_args_mean", "arg_share_args_peak", "arg_share_args_peak_request",
              "arg_share_write_mean", "arg_share_write_peak", "arg_share_write_peak_request",
              "arg_share_results_mean", "arg_share_results_peak", "arg_share_results_peak_request",
              "arg_share_args_bytes_peak", "arg_share_results_bytes_at_args_peak")
_SUMMARISATION = (
    "summarisation_n", "summarisation_per_100_requests", "summarisation_first_request",
    "summarisation_mean_requests_between", "summarisation_min_requests_between",
    "summarisation_mean_context_after_tokens", "summarisation_max_context_after_tokens",
    "summarisation_mean_growback_requests", "summarisation_n_thrash", "summarisation_n_failed",
    "summarisation_recorded_n", "summarisation_recorded_per_100_requests")
_CACHE = (
    "cache_invalidation_cached_share", "cache_invalidation_cached_tokens",
    "cache_invalidation_invalidated_tokens", "cache_invalidation_n_invalidating_actions",
    "cache_invalidation_invalidated_per_action_tokens",
    "cache_invalidation_invalidated_trim_tokens", "cache_invalidation_invalidated_summarise_tokens",
    "cache_invalidation_invalidated_collapse_tokens",
    "cache_invalidation_invalidated_custom_tokens", "cache_invalidation_n_below_min",
    "cache_invalidation_n_undone", "cache_invalidation_n_small_trims",
    "cache_invalidation_small_trim_invalidated_tokens",
    "cache_invalidation_cost_cache_read_usd", "cache_invalidation_cost_mismatch_usd",
    "cache_invalidation_n_mispriced", "cache_invalidation_recorded_requests",
    "cache_invalidation_recorded_cached_share", "cache_invalidation_cached_share_where_recorded")
_OVERSHOOTS = (
    "overshoots_n", "overshoots_frac", "overshoots_first_request", "overshoots_max_tokens",
    "overshoots_total_tokens", "overshoots_margin_needed_max_frac",
    "overshoots_est_error_median_frac", "overshoots_est_error_p05_frac",
    "overshoots_est_error_p95_frac", "overshoots_est_error_mean_abs_frac",
    "overshoots_n_comparable", "overshoots_est_vs_recorded_median_frac",
    "overshoots_truth_vs_recorded_median_frac")

METRIC_COLUMNS: tuple[str, ...] = (*BASIC_COLUMNS, *_REREADS, *_ARG_SHARE, *_SUMMARISATION,
                                   *_CACHE, *_OVERSHOOTS)
"""The metric columns of ``metrics()``, in its order (after ``run_id`` and ``policy``)."""

FLOAT_COLUMNS: frozenset[str] = frozenset({
    "cost_usd", "arg_share_args_mean", "arg_share_args_peak", "arg_share_write_mean",
    "arg_share_write_peak", "arg_share_results_mean", "arg_share_results_peak",
    "summarisation_per_100_requests", "summarisation_mean_requests_between",
    "summarisation_min_requests_between", "summarisation_mean_context_after_tokens",
    "summarisation_max_context_after_tokens", "summarisation_mean_growback_requests",
    "summarisation_recorded_per_100_requests", "cache_invalidation_cached_share",
    "cache_invalidation_invalidated_per_action_tokens",
    "cache_invalidation_cost_cache_read_usd", "cache_invalidation_cost_mismatch_usd",
    "cache_invalidation_recorded_cached_share", "cache_invalidation_cached_share_where_recorded",
    "overshoots_frac", "overshoots_margin_needed_max_frac", "overshoots_est_error_median_frac",
    "overshoots_est_error_p05_frac", "overshoots_est_error_p95_frac",
    "overshoots_est_error_mean_abs_frac", "overshoots_est_vs_recorded_median_frac",
    "overshoots_truth_vs_recorded_median_frac"})
"""Columns that are float64 (the rest are int64), as in ``metrics()``."""

_NAN = math.nan
_THRASH_REQUESTS = 20
_SMALL_RECLAIM_FRAC = 0.125


def fast_metrics(facts: RunFacts, trace: Trace, policy: Policy) -> dict[str, Any]:
    """One ``metrics()`` row for a replay of one run under one policy.

    Args:
        facts: ``run_facts`` of the replayed run.
        trace: the replay (``replay.engine.replay`` of that run under ``policy``).
        policy: the replayed policy (prices, tier minimums, usable window).

    Returns:
        ``run_id``, ``policy`` and every column of ``METRIC_COLUMNS``, in that order.
    """
    rq, ac = trace.columns("requests"), trace.columns("actions")
    row: dict[str, Any] = {"run_id": facts.run_id, "policy": policy.name}
    applied = [not u for u in ac["undone"]]
    kinds = ac["kind"]
    row["n_requests"] = len(rq["request"])
    row["tokens_sent"] = sum(rq["truth_tokens"])
    row["peak_tokens"] = max(rq["truth_tokens"])
    row["n_summaries"] = sum(1 for k, a in zip(kinds, applied) if a and k in SUMMARY_KINDS)
    row["n_trims"] = sum(1 for k, a in zip(kinds, applied) if a and k in TRIM_KINDS)
    row["cost_usd"] = _kahan_sum(rq["cost_usd"])
    row.update(_rereads(facts, trace.columns("evictions")))
    row.update(_arg_share(rq))
    row.update(_summarisation(facts, rq, ac))
    row.update(_cache(rq, ac, applied, policy))
    row.update(_overshoots(facts, rq))
    return row


def metrics_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows of ``fast_metrics`` as a frame with ``metrics()``'s columns and dtypes.

    Args:
        rows: dicts with ``run_id``, ``policy`` and every metric column (other keys are kept,
            after them).

    Returns:
        A frame: ``run_id``, ``policy``, ``METRIC_COLUMNS`` (int64 or float64), then any extra keys.
    """
    df = pd.DataFrame(list(rows))
    if df.empty:
        df = pd.DataFrame(columns=["run_id", "policy", *METRIC_COLUMNS])
    out = pd.DataFrame({"run_id": df["run_id"].astype(str), "policy": df["policy"].astype(str)})
    for col in METRIC_COLUMNS:
        out[col] = df[col].astype("float64" if col in FLOAT_COLUMNS else "int64")
    extra = [c for c in df.columns if c not in out.columns]
    return pd.concat([out, df[extra]], axis=1) if extra else out


def _rereads(facts: RunFacts, ev: dict[str, list[Any]]) -> dict[str, int]:
    """The policy-dependent re-read classes: which candidates lost their previous result."""
    first: dict[tuple[int, int], tuple[int, str]] = {}
    for m, b, r, fate in zip(ev["msg"], ev["block"], ev["request"], ev["fate"]):
        key = (m, b)
        if key not in first or r < first[key][0]:
            first[key] = (r, fate)
    out = dict(facts.static_rereads)
    induced = dict.fromkeys(FATES, 0)
    n_induced = tok_induced = tok_redundant = 0
    for request, msg, block, tokens in facts.candidates:
        hit = first.get((msg, block))
        if hit is not None and hit[0] <= request:
            n_induced += 1
            tok_induced += tokens
            if hit[1] in induced:
                induced[hit[1]] += 1
        else:
            tok_redundant += tokens
    out["rereads_n_redundant"] = len(facts.candidates) - n_induced
    out["rereads_n_eviction_induced"] = n_induced
    out["rereads_tokens_redundant"] = tok_redundant
    out["rereads_tokens_eviction_induced"] = tok_induced
    for fate, n in induced.items():
        out[f"rereads_n_evicted_{fate}"] = n
    return {c: out[c] for c in _REREADS}


def _arg_share(rq: dict[str, list[Any]]) -> dict[str, Any]:
    """Means and peaks of the byte shares over requests with a non-empty context."""
    args, write, results = rq["bytes_args"], rq["bytes_args_write"], rq["bytes_results"]
    totals = [a + r + o for a, r, o in zip(args, results, rq["bytes_other"])]
    ok = [i for i, t in enumerate(totals) if t > 0]
    out: dict[str, Any] = {}
    for name, num in (("args", args), ("write", write), ("results", results)):
        if not ok:
            out.update({f"arg_share_{name}_mean": _NAN, f"arg_share_{name}_peak": _NAN,
                        f"arg_share_{name}_peak_request": -1})
            continue
        shares = [num[i] / totals[i] for i in ok]
        peak = max(shares)
        i = ok[shares.index(peak)]
        out[f"arg_share_{name}_mean"] = float(np.mean(shares))
        out[f"arg_share_{name}_peak"] = peak
        out[f"arg_share_{name}_peak_request"] = rq["request"][i]
        if name == "args":
            out["arg_share_args_bytes_peak"] = args[i]
            out["arg_share_results_bytes_at_args_peak"] = results[i]
    if not ok:
        out["arg_share_args_bytes_peak"] = out["arg_share_results_bytes_at_args_peak"] = 0
    return {c: out[c] for c in _ARG_SHARE}


def _summarisation(facts: RunFacts, rq: dict[str, list[Any]],
                   ac: dict[str, list[Any]]) -> dict[str, Any]:
    """Replayed summaries' frequency, spacing, size after and grow-back; recorded ones' count."""
    idx = sorted((i for i, k in enumerate(ac["kind"]) if k in SUMMARY_KINDS),
                 key=lambda i: ac["request"][i])
    n_req = len(rq["request"])
    reqs = [ac["request"][i] for i in idx]
    gaps = [b - a for a, b in itertools.pairwise(reqs)]
    after = [ac["context_after_tokens"][i] for i in idx]
    grow = _growback(idx, ac, rq)
    return {
        "summarisation_n": len(idx),
        "summarisation_per_100_requests": 100.0 * len(idx) / n_req if n_req else _NAN,
        "summarisation_first_request": min(reqs) if reqs else -1,
        "summarisation_mean_requests_between": _mean(gaps),
        "summarisation_min_requests_between": float(min(gaps)) if gaps else _NAN,
        "summarisation_mean_context_after_tokens": _mean(after),
        "summarisation_max_context_after_tokens": float(max(after)) if after else _NAN,
        "summarisation_mean_growback_requests": _mean(grow),
        "summarisation_n_thrash": sum(1 for g in gaps if g < _THRASH_REQUESTS),
        "summarisation_n_failed": sum(1 for i in idx if ac["failed"][i]),
        "summarisation_recorded_n": facts.n_compactions,
        "summarisation_recorded_per_100_requests": (100.0 * facts.n_compactions / n_req
                                                    if n_req else _NAN),
    }


def _growback(idx: list[int], ac: dict[str, list[Any]], rq: dict[str, list[Any]]) -> list[int]:
    """Requests from each summary until the estimate reaches its tier's trigger level again."""
    reqs, ests = rq["request"], rq["est_tokens"]
    fired: dict[str, list[tuple[int, int]]] = {}
    for i in idx:
        if ac["when"][i] == "before":
            fired.setdefault(ac["tier"][i], []).append((ac["request"][i], ac["trigger_tokens"][i]))
    out = []
    for i in idx:
        r, thr = ac["request"][i], ac["threshold_tokens"][i]
        start = next((j for j, q in enumerate(reqs) if q >= r), len(reqs))
        hits = [q for q, e in zip(reqs[start:], ests[start:]) if e >= thr][:1]
        hits += [q for q, trig in fired.get(ac["tier"][i], []) if q > r and trig >= thr]
        if hits:
            out.append(min(hits) - r)
    return out


def _cache(rq: dict[str, list[Any]], ac: dict[str, list[Any]], applied: list[bool],
           policy: Policy) -> dict[str, Any]:
    """Cached share, invalidation by family, reclaim minimums, cost and its check."""
    p = policy.cache.prices
    truth, cached, write = rq["truth_tokens"], rq["cached_tokens"], rq["cache_write_tokens"]
    fresh, out_t, cost = rq["fresh_tokens"], rq["output_tokens"], rq["cost_usd"]
    usable = policy.usable_tokens
    small = int(_SMALL_RECLAIM_FRAC * usable)
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
    read_usd = [c * p.cache_read_per_mtok / 1e6 for c in cached]
    mismatch = max(abs(total - (((f * p.input_per_mtok / 1e6) + r) + (w * w_price / 1e6)
                                + (o * p.output_per_mtok / 1e6)))
                   for total, f, r, w, o in zip(cost, fresh, read_usd, write, out_t))
    rec_in, rec_cr = rq["recorded_input_tokens"], rq["recorded_cache_read_tokens"]
    both = [i for i, (a, b) in enumerate(zip(rec_in, rec_cr))
            if a is not None and b is not None and a > 0]
    out = {
        "cache_invalidation_cached_share": _ratio(sum(cached), sum(truth)),
        "cache_invalidation_cached_tokens": sum(cached),
        "cache_invalidation_invalidated_tokens": sum(rq["invalidated_tokens"]),
        "cache_invalidation_n_invalidating_actions": sum(1 for v in inv_applied if v > 0),
        "cache_invalidation_invalidated_per_action_tokens": (sum(inv_applied) / len(inv_applied)
                                                             if inv_applied else _NAN),
        **{f"cache_invalidation_invalidated_{f}_tokens": v for f, v in fam.items()},
        "cache_invalidation_n_below_min": below,
        "cache_invalidation_n_undone": len(applied) - sum(applied),
        "cache_invalidation_n_small_trims": n_small,
        "cache_invalidation_small_trim_invalidated_tokens": small_inv,
        "cache_invalidation_cost_cache_read_usd": float(np.sum(np.array(read_usd))),
        "cache_invalidation_cost_mismatch_usd": float(mismatch),
        "cache_invalidation_n_mispriced": sum(1 for c, w, f, t in zip(cached, write, fresh, truth)
                                              if c + w + f != t),
        "cache_invalidation_recorded_requests": len(both),
        "cache_invalidation_recorded_cached_share": _ratio(sum(rec_cr[i] for i in both),
                                                           sum(rec_in[i] for i in both)),
        "cache_invalidation_cached_share_where_recorded": _ratio(sum(cached[i] for i in both),
                                                                 sum(truth[i] for i in both)),
    }
    return {c: out[c] for c in _CACHE}


def _overshoots(facts: RunFacts, rq: dict[str, list[Any]]) -> dict[str, Any]:
    """Overshoot counts and sizes, the margin that would have fired, the estimator's error."""
    n = len(rq["request"])
    over_req: list[int] = []
    over_tok: list[int] = []
    margins: list[float] = []
    errors: list[float] = []
    vs_est: list[float] = []
    vs_truth: list[float] = []
    first_comp = facts.first_compaction_request
    for req, est, truth, raw, over, window, reserve, rec in zip(
            rq["request"], rq["est_tokens"], rq["truth_tokens"], rq["raw_tokens"],
            rq["overshoot_tokens"], rq["window_tokens"], rq["reserve_tokens"],
            rq["recorded_input_tokens"]):
        if over > 0:
            over_req.append(req)
            over_tok.append(over)
            if window - reserve > 0:
                margins.append(max(0.0, 1.0 - est / (window - reserve)))
        if truth > 0:
            errors.append((est - truth) / truth)
        if truth == raw and req < first_comp and rec is not None and rec > 0:
            vs_est.append((est - rec) / rec)
            vs_truth.append((truth - rec) / rec)
    mean_abs = _mean([abs(e) for e in errors])  # before sorting: the sum's order matters
    errors.sort()
    return {
        "overshoots_n": len(over_req),
        "overshoots_frac": len(over_req) / n if n else _NAN,
        "overshoots_first_request": min(over_req) if over_req else -1,
        "overshoots_max_tokens": max(over_tok) if over_tok else 0,
        "overshoots_total_tokens": sum(over_tok),
        "overshoots_margin_needed_max_frac": max(margins) if margins else _NAN,
        "overshoots_est_error_median_frac": _quantile(errors, 0.5),
        "overshoots_est_error_p05_frac": _quantile(errors, 0.05),
        "overshoots_est_error_p95_frac": _quantile(errors, 0.95),
        "overshoots_est_error_mean_abs_frac": mean_abs,
        "overshoots_n_comparable": len(vs_est),
        "overshoots_est_vs_recorded_median_frac": _quantile(sorted(vs_est), 0.5),
        "overshoots_truth_vs_recorded_median_frac": _quantile(sorted(vs_truth), 0.5),
    }


def _mean(values: Sequence[float]) -> float:
    """NumPy's mean (pairwise sum), as pandas takes it; NaN when empty."""
    return float(np.mean(np.asarray(values, dtype="float64"))) if len(values) else _NAN


def _quantile(s: Sequence[float], q: float) -> float:
    """pandas' ``Series.quantile`` of sorted values: NumPy's linear interpolation, step for step."""
    if not s:
        return _NAN
    virtual = (len(s) - 1) * ((q * 100.0) / 100)
    if virtual >= len(s) - 1:
        return float(s[-1])
    lo = math.floor(virtual)
    t, a, b = virtual - lo, s[lo], s[lo + 1]
    diff = b - a
    return float(b - diff * (1 - t) if t >= 0.5 else a + diff * t)


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else _NAN


def _kahan_sum(values: Sequence[float]) -> float:
    """A compensated sum, as pandas' grouped ``sum`` takes it."""
    total = comp = 0.0
    for v in values:
        y = v - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total
