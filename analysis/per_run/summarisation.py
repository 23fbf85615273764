"""The per-run ``summarisation_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.summarisation`` (whose pandas ``summarisation_summary`` computes the
same columns, the tests' oracle).
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left
from typing import Any

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, run_facts_of
from analysis.per_run.kinds import SUMMARY_KIND_SET
from analysis.per_run.stats import mean


def _fast_replayed(inp: PartInput) -> dict[str, Any]:
    """Replayed summaries' frequency, spacing, size after and grow-back."""
    rq, ac = inp.requests, inp.actions
    n_req = len(rq["request"])
    kinds: list[str] = ac["kind"]
    # the summaries among the actions, picked out in C (most actions are trims), by request
    idx = list(itertools.compress(range(len(kinds)), map(SUMMARY_KIND_SET.__contains__, kinds)))
    if not idx:  # (a trim-only replay)
        return {**_NO_SUMMARY, "summarisation_per_100_requests": 0.0 if n_req else math.nan}
    requests: list[int] = ac["request"]
    idx.sort(key=requests.__getitem__)
    reqs = [requests[i] for i in idx]
    gaps = [b - a for a, b in itertools.pairwise(reqs)]
    after = [ac["context_after_tokens"][i] for i in idx]
    grow = _fast_growback(idx, ac, rq)
    failed: list[bool] = ac["failed"]
    thrash = inp.params.thrash_requests
    return {
        "summarisation_per_100_requests": 100.0 * len(idx) / n_req if n_req else math.nan,
        "summarisation_first_request": min(reqs) if reqs else -1,
        "summarisation_mean_requests_between": mean(gaps),
        "summarisation_min_requests_between": float(min(gaps)) if gaps else math.nan,
        "summarisation_mean_context_after_tokens": mean(after),
        "summarisation_max_context_after_tokens": float(max(after)) if after else math.nan,
        "summarisation_mean_growback_requests": mean(grow),
        "summarisation_n_thrash": sum(1 for g in gaps if g < thrash),
        "summarisation_n_failed": sum(1 for i in idx if failed[i]),
    }


_NO_SUMMARY: dict[str, Any] = {
    "summarisation_per_100_requests": math.nan,
    "summarisation_first_request": -1,
    "summarisation_mean_requests_between": math.nan,
    "summarisation_min_requests_between": math.nan,
    "summarisation_mean_context_after_tokens": math.nan,
    "summarisation_max_context_after_tokens": math.nan,
    "summarisation_mean_growback_requests": math.nan,
    "summarisation_n_thrash": 0,
    "summarisation_n_failed": 0,
}
"""``_fast_replayed``'s row of a replay without a summary (its rate set by the caller: 0 a
request, NaN for a run of none): what the steps give for no summary (``mean`` of nothing is
NaN)."""


def _fast_growback(idx: list[int], ac: Any, rq: Any) -> list[int]:
    """Requests from each summary until the estimate reaches its tier's trigger level again."""
    reqs: list[int] = rq["request"]
    ests: list[int] = rq["est_tokens"]
    requests: list[int] = ac["request"]
    thresholds: list[int] = ac["threshold_tokens"]
    tiers: list[str] = ac["tier"]
    fired: dict[str, list[tuple[int, int]]] = {}
    for i in idx:
        if ac["when"][i] == "before":
            fired.setdefault(tiers[i], []).append((requests[i], ac["trigger_tokens"][i]))
    out = []
    n = len(reqs)
    for i in idx:
        r, thr = requests[i], thresholds[i]
        # the first request from the summary's on (in order, as the definition's bisect) whose
        # estimate reaches the level: a scan that stops there, not one to the end of the run
        j = bisect_left(reqs, r)
        while j < n and ests[j] < thr:
            j += 1
        hits = [reqs[j]] if j < n else []
        hits += [q for q, trig in fired.get(tiers[i], []) if q > r and trig >= thr]
        if hits:
            out.append(min(hits) - r)
    return out


def _fast_recorded(inp: PartInput) -> dict[str, Any]:
    """The original harness's compactions of the run."""
    n_req, n = len(inp.requests["request"]), run_facts_of(inp).n_compactions
    return {"summarisation_recorded_n": n,
            "summarisation_recorded_per_100_requests": 100.0 * n / n_req if n_req else math.nan}


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"summarisation_{name}", unit, description, **kw)


_F = "float64"
_PER_SUMMARY = "n_summaries"
"""The count of replayed summaries is ``n_summaries`` (``analysis.per_run.basic``): one metric;
a second one (``summarisation_n``, always equal) was merged into it (METRICS_VERSION 2)."""
SUMMARISATION = MetricPart("summarisation", (
    _spec("per_100_requests", "per 100 requests", "replayed summaries per 100 requests",
          dtype=_F, better="lower", ratio=(_PER_SUMMARY, "n_requests", 100.0)),
    _spec("first_request", "request index", "the first replayed summary (-1 when none)"),
    _spec("mean_requests_between", "requests", "mean spacing of consecutive summaries",
          dtype=_F, better="higher", weight=_PER_SUMMARY),
    _spec("min_requests_between", "requests", "smallest spacing of consecutive summaries",
          dtype=_F),
    _spec("mean_context_after_tokens", "tokens", "mean context right after a summary", dtype=_F,
          weight=_PER_SUMMARY),
    _spec("max_context_after_tokens", "tokens", "largest context right after a summary",
          dtype=_F),
    _spec("mean_growback_requests", "requests", "mean requests until the estimate reaches the "
          "trigger level again", dtype=_F, better="higher", weight=_PER_SUMMARY),
    _spec("n_thrash", "count", "summaries fewer than thrash_requests after the previous one",
          better="lower"),
    _spec("n_failed", "count", "summaries whose summariser failed",
          better="lower"),
), _fast_replayed, needs_facts=False)
SUMMARISATION_RECORDED = MetricPart("summarisation_recorded", (
    _spec("recorded_n", "count", "compactions the original harness recorded"),
    _spec("recorded_per_100_requests", "per 100 requests", "recorded compactions per 100 "
          "requests", dtype=_F, ratio=("summarisation_recorded_n", "n_requests", 100.0)),
), _fast_recorded)
METRICS: tuple[MetricPart, ...] = (SUMMARISATION, SUMMARISATION_RECORDED)
"""The per-run ``summarisation_*`` metrics (``summarisation_summary`` computes the same with
pandas)."""
