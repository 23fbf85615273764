"""The per-run ``overshoots_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.overshoots`` (whose pandas ``overshoots_summary`` computes the same
columns, the tests' oracle).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, one_of, run_facts_of
from analysis.per_run.columns import request_columns
from analysis.per_run.stats import mean, quantile_sorted


def _fast_overshoots_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """Overshoot counts and sizes, the margin that would have fired, the estimator's error, of
    several replays of one run (NumPy over the request columns of all of them at once: the same
    operations on the same numbers, in order; a replay with an overshoot, or a request of no
    tokens, takes its own row's)."""
    est, truth = request_columns(inps, ("est_tokens", "truth_tokens"), np.int64)
    n = est.shape[1]
    # overshoots are few (none in most replays): the lists looked at in C, a replay's converted
    # only when it has a value that is not 0 (were one below 0, ``_over_where`` would find no
    # overshoot: the same row)
    any_over = [any(inp.requests["overshoot_tokens"]) for inp in inps]
    counted = bool((truth > 0).all())
    """Every request of every replay has tokens: their errors as one array."""
    errors, abs_sums = np.empty((0, 0)), []
    if counted:
        errors = (est - truth) / truth
        abs_sums = np.add.reduce(np.abs(errors), axis=1).tolist()  # before sorting
        errors.sort(axis=1)
    rows = []
    for r, inp in enumerate(inps):
        out = (_over_where(inp, est[r]) if any_over[r] else
               {"overshoots_n": 0, "overshoots_frac": 0 / n if n else math.nan,
                "overshoots_first_request": -1, "overshoots_max_tokens": 0,
                "overshoots_total_tokens": 0, "overshoots_margin_needed_max_frac": math.nan})
        if counted:
            mean_abs, ranked = (abs_sums[r] / n if n else math.nan), errors[r]  # stats.mean's
        else:
            mean_abs, ranked = _errors(est[r], truth[r])
        out["overshoots_est_error_median_frac"] = quantile_sorted(ranked, 0.5)
        out["overshoots_est_error_p05_frac"] = quantile_sorted(ranked, 0.05)
        out["overshoots_est_error_p95_frac"] = quantile_sorted(ranked, 0.95)
        out["overshoots_est_error_mean_abs_frac"] = mean_abs
        rows.append(out)
    return rows


def _errors(est: np.ndarray, truth: np.ndarray) -> tuple[float, np.ndarray]:
    """One replay's mean absolute error of the estimate and its errors sorted, over its requests
    with tokens."""
    counted = truth > 0
    errors = (est[counted] - truth[counted]) / truth[counted]
    mean_abs = mean(np.abs(errors))  # before sorting: the sum's order matters
    errors.sort()
    return mean_abs, errors


def _over_where(inp: PartInput, est: np.ndarray) -> dict[str, Any]:
    """One replay's overshoot columns, from its overshooting requests."""
    rq = inp.requests
    requests = rq["request"]
    n = len(requests)
    over = np.asarray(rq["overshoot_tokens"], dtype=np.int64)
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
    return {
        "overshoots_n": len(over_req),
        "overshoots_frac": len(over_req) / n if n else math.nan,
        "overshoots_first_request": int(min(over_req)) if over_req else -1,
        "overshoots_max_tokens": int(over_tok.max()) if len(over_tok) else 0,
        "overshoots_total_tokens": int(over_tok.sum()),
        "overshoots_margin_needed_max_frac": float(margins.max()) if len(margins) else math.nan,
    }


def _fast_recorded(inp: PartInput) -> dict[str, Any]:
    """Estimate and truth against the recorded usage, on comparable requests."""
    return _fast_recorded_many((inp,))[0]


def _fast_recorded_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """``_fast_recorded`` of several replays of one run: the requests that can be comparable
    (before the first recorded compaction, a recorded input above 0: the run's, not the
    setting's) picked out once, then each replay's that kept the raw context (a replay whose
    request or recorded columns differ from the first's picks its own)."""
    rows = []
    at: list[int] = []
    base: PartInput | None = None
    for inp in inps:
        rq, first_comp = inp.requests, run_facts_of(inp).first_compaction_request
        if base is None or not (
                run_facts_of(base).first_compaction_request == first_comp
                and rq["request"] == base.requests["request"]
                and rq["recorded_input_tokens"] == base.requests["recorded_input_tokens"]):
            base = inp
            at = [i for i, (req, rec) in enumerate(zip(rq["request"], rq["recorded_input_tokens"]))
                  if req < first_comp and rec is not None and rec > 0]
        rows.append(_compared(rq, at))
    return rows


def _compared(rq: Mapping[str, list[Any]], at: list[int]) -> dict[str, Any]:
    """The recorded-usage columns of one replay, over the requests ``at`` that can be
    comparable: those of them whose context the replay sent raw (truth == raw)."""
    vs_est: list[float] = []
    vs_truth: list[float] = []
    # typed: compiled, whole numbers compared and subtracted as machine words (``at`` holds
    # requests with a recorded input only: no None read)
    est: list[int] = rq["est_tokens"]
    truth: list[int] = rq["truth_tokens"]
    raw: list[int] = rq["raw_tokens"]
    recorded: list[int | None] = rq["recorded_input_tokens"]
    for i in at:
        t = truth[i]
        if t == raw[i]:
            rec = recorded[i]
            assert rec is not None
            vs_est.append((est[i] - rec) / rec)
            vs_truth.append((t - rec) / rec)
    return {
        "overshoots_n_comparable": len(vs_est),
        "overshoots_est_vs_recorded_median_frac": quantile_sorted(sorted(vs_est), 0.5),
        "overshoots_truth_vs_recorded_median_frac": quantile_sorted(sorted(vs_truth), 0.5),
    }


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"overshoots_{name}", unit, description, **kw)


_F = "float64"
_SIGNED = (None, None)
"""The bounds of a relative error: any sign, any size (an estimate is a calibrated fit)."""
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
    _spec("est_error_median_frac", "fraction", "median of (est − truth) / truth", dtype=_F,
          bounds=_SIGNED),
    _spec("est_error_p05_frac", "fraction", "5th percentile of (est − truth) / truth", dtype=_F,
          bounds=_SIGNED),
    _spec("est_error_p95_frac", "fraction", "95th percentile of (est − truth) / truth", dtype=_F,
          bounds=_SIGNED),
    _spec("est_error_mean_abs_frac", "fraction", "mean of |est − truth| / truth", dtype=_F,
          better="lower", bounds=(0, None)),
), one_of(_fast_overshoots_many), needs_facts=False,
   many=_fast_overshoots_many)
OVERSHOOTS_RECORDED = MetricPart("overshoots_recorded", (
    _spec("n_comparable", "requests", "requests comparable with the recorded usage (raw context, "
          "before the first recorded compaction)"),
    _spec("est_vs_recorded_median_frac", "fraction", "median (est − recorded) / recorded on "
          "comparable requests", dtype=_F, weight="overshoots_n_comparable", bounds=_SIGNED),
    _spec("truth_vs_recorded_median_frac", "fraction", "median (truth − recorded) / recorded on "
          "comparable requests", dtype=_F, weight="overshoots_n_comparable", bounds=_SIGNED),
), _fast_recorded, many=_fast_recorded_many)
METRICS: tuple[MetricPart, ...] = (OVERSHOOTS, OVERSHOOTS_RECORDED)
"""The per-run ``overshoots_*`` metrics (``overshoots_summary`` computes the same with pandas)."""
