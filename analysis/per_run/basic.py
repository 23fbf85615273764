"""The basic per-run metrics: requests, tokens sent, peak, summaries, trims, cost.

``analysis.metrics_by_analyses._basic`` computes the same columns with pandas (the tests' oracle).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, one_of
from analysis.per_run.columns import request_columns
from analysis.per_run.kinds import SUMMARY_KIND_SET, TRIM_KIND_SET
from analysis.per_run.stats import kahan_sum


def _fast_basic_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """Requests, tokens sent, peak, applied summaries and trims, cost, of several replays of one
    run: the tokens sent and the peak from the batch's array of them (``request_columns``:
    converted once for every part that reads it), the same whole numbers."""
    (truth,) = request_columns(inps, ("truth_tokens",), np.int64)
    sent, peak = truth.sum(axis=1).tolist(), truth.max(axis=1).tolist()
    rows = []
    for r, inp in enumerate(inps):
        kinds = list(itertools.compress(inp.actions["kind"], inp.applied))  # (picked out in C)
        rows.append({
            "n_requests": len(inp.requests["request"]),
            "tokens_sent": sent[r],
            "peak_tokens": peak[r],
            "n_summaries": sum(map(SUMMARY_KIND_SET.__contains__, kinds)),
            "n_trims": sum(map(TRIM_KIND_SET.__contains__, kinds)),
            "cost_usd": kahan_sum(inp.requests["cost_usd"]),
        })
    return rows


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
), one_of(_fast_basic_many), needs_facts=False, many=_fast_basic_many)
METRICS: tuple[MetricPart, ...] = (BASIC,)
