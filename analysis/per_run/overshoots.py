"""The per-run ``overshoots_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.overshoots`` (whose pandas ``overshoots_summary`` computes the same
columns, the tests' oracle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, run_facts_of
from analysis.per_run.stats import mean, quantile_sorted


def _fast_overshoots(inp: PartInput) -> dict[str, Any]:
    """Overshoot counts and sizes, the margin that would have fired, the estimator's error
    (NumPy over the request columns: the same operations on the same numbers, in order)."""
    rq = inp.requests
    requests = rq["request"]
    n = len(requests)
    est, truth, over = np.array((rq["est_tokens"], rq["truth_tokens"], rq["overshoot_tokens"]),
                                dtype=np.int64)
    is_over = over > 0
    at = np.flatnonzero(is_over)
    over_req = [requests[i] for i in at.tolist()]  # the few overshooting requests, not all
    over_tok = over[at]
    window, reserve = rq["window_tokens"], rq["reserve_tokens"]
    if n and window.count(window[0]) == n and reserve.count(reserve[0]) == n:
        usable_each = window[0] - reserve[0]  # one policy's window and reserve throughout
        margins = (np.maximum(0.0, 1.0 - est[at] / usable_each) if usable_each > 0
                   else np.empty(0))
    else:
        usable = (np.asarray(window, dtype=np.int64) - np.asarray(reserve, dtype=np.int64))
        has_room = is_over & (usable > 0)
        margins = np.maximum(0.0, 1.0 - est[has_room] / usable[has_room])
    counted = truth > 0
    errors = (est[counted] - truth[counted]) / truth[counted]
    mean_abs = mean(np.abs(errors))  # before sorting: the sum's order matters
    errors.sort()
    return {
        "overshoots_n": len(over_req),
        "overshoots_frac": len(over_req) / n if n else math.nan,
        "overshoots_first_request": int(min(over_req)) if over_req else -1,
        "overshoots_max_tokens": int(over_tok.max()) if len(over_tok) else 0,
        "overshoots_total_tokens": int(over_tok.sum()),
        "overshoots_margin_needed_max_frac": float(margins.max()) if len(margins) else math.nan,
        "overshoots_est_error_median_frac": quantile_sorted(errors, 0.5),
        "overshoots_est_error_p05_frac": quantile_sorted(errors, 0.05),
        "overshoots_est_error_p95_frac": quantile_sorted(errors, 0.95),
        "overshoots_est_error_mean_abs_frac": mean_abs,
    }


def _fast_recorded(inp: PartInput) -> dict[str, Any]:
    """Estimate and truth against the recorded usage, on comparable requests."""
    rq, first_comp = inp.requests, run_facts_of(inp).first_compaction_request
    vs_est: list[float] = []
    vs_truth: list[float] = []
    for req, est, truth, raw, rec in zip(rq["request"], rq["est_tokens"], rq["truth_tokens"],
                                         rq["raw_tokens"], rq["recorded_input_tokens"]):
        if truth == raw and req < first_comp and rec is not None and rec > 0:
            vs_est.append((est - rec) / rec)
            vs_truth.append((truth - rec) / rec)
    return {
        "overshoots_n_comparable": len(vs_est),
        "overshoots_est_vs_recorded_median_frac": quantile_sorted(sorted(vs_est), 0.5),
        "overshoots_truth_vs_recorded_median_frac": quantile_sorted(sorted(vs_truth), 0.5),
    }


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"overshoots_{name}", unit, description, **kw)


_F = "float64"
OVERSHOOTS = MetricPart("overshoots", (
    _spec("n", "requests", "requests over window − reserve (by truth)", better="lower",
          label="overshoots"),
    _spec("frac", "fraction", "overshoots / requests", dtype=_F,
          ratio=("overshoots_n", "n_requests", 1.0)),
    _spec("first_request", "request index", "the first overshoot (-1 when none)"),
    _spec("max_tokens", "tokens", "the largest overshoot (0 when none)", better="lower",
          label="max overshoot (tokens)"),
    _spec("total_tokens", "tokens", "Σ overshoot tokens", better="lower"),
    _spec("margin_needed_max_frac", "fraction", "the safety margin that would have fired before "
          "every overshoot (NaN when none)", dtype=_F),
    _spec("est_error_median_frac", "fraction", "median of (est − truth) / truth", dtype=_F),
    _spec("est_error_p05_frac", "fraction", "5th percentile of (est − truth) / truth", dtype=_F),
    _spec("est_error_p95_frac", "fraction", "95th percentile of (est − truth) / truth", dtype=_F),
    _spec("est_error_mean_abs_frac", "fraction", "mean of |est − truth| / truth", dtype=_F,
          better="lower"),
), _fast_overshoots, needs_facts=False)
OVERSHOOTS_RECORDED = MetricPart("overshoots_recorded", (
    _spec("n_comparable", "requests", "requests comparable with the recorded usage (raw context, "
          "before the first recorded compaction)"),
    _spec("est_vs_recorded_median_frac", "fraction", "median (est − recorded) / recorded on "
          "comparable requests", dtype=_F, weight="overshoots_n_comparable"),
    _spec("truth_vs_recorded_median_frac", "fraction", "median (truth − recorded) / recorded on "
          "comparable requests", dtype=_F, weight="overshoots_n_comparable"),
), _fast_recorded)
METRICS: tuple[MetricPart, ...] = (OVERSHOOTS, OVERSHOOTS_RECORDED)
"""The per-run ``overshoots_*`` metrics (``overshoots_summary`` computes the same with pandas)."""
