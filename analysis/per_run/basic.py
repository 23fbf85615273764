"""The basic per-run metrics: requests, tokens sent, peak, summaries, trims, cost.

``analysis.metrics_by_analyses._basic`` computes the same columns with pandas (the tests' oracle).
"""

from __future__ import annotations

import itertools
from typing import Any

from analysis.metric_spec import MetricPart, MetricSpec, PartInput
from analysis.per_run.kinds import SUMMARY_KIND_SET, TRIM_KIND_SET
from analysis.per_run.stats import kahan_sum


def _fast_basic(inp: PartInput) -> dict[str, Any]:
    """Requests, tokens sent, peak, applied summaries and trims, cost."""
    rq = inp.requests
    kinds = list(itertools.compress(inp.actions["kind"], inp.applied))  # (picked out in C)
    return {
        "n_requests": len(rq["request"]),
        "tokens_sent": sum(rq["truth_tokens"]),
        "peak_tokens": max(rq["truth_tokens"]),
        "n_summaries": sum(map(SUMMARY_KIND_SET.__contains__, kinds)),
        "n_trims": sum(map(TRIM_KIND_SET.__contains__, kinds)),
        "cost_usd": kahan_sum(rq["cost_usd"]),
    }


BASIC = MetricPart("basic", (
    MetricSpec("n_requests", "requests", "requests replayed", label="requests"),
    MetricSpec("tokens_sent", "tokens", "Σ input tokens sent (by truth)", better="lower",
               label="tokens sent"),
    MetricSpec("peak_tokens", "tokens", "the largest request (by truth)", better="lower",
               label="peak request (tokens)"),
    MetricSpec("n_summaries", "count", "applied cuts that replace messages (kinds "
               "SUMMARY_KINDS: summarise, collapse, custom_cut)", better="lower",
               label="summaries"),
    MetricSpec("n_trims", "count", "applied (not undone) trims (kinds TRIM_KINDS)",
               better="lower", label="trims"),
    MetricSpec("cost_usd", "USD", "Σ request cost under the policy's prices", dtype="float64",
               better="lower", label="cost (USD)"),
), _fast_basic, needs_facts=False)
METRICS: tuple[MetricPart, ...] = (BASIC,)
