"""Metrics over replay traces: the five analyses, their per-run summaries, plots, loaders.

Each analysis is a module with a tidy per-event (or per-request) function, a
``*_summary`` with one row per (run_id, policy), and a ``plot_*``;
``metrics`` joins every summary for sweeps and CI checks.  The frames come from
``analysis.frames`` (the only place Arrow becomes pandas).
"""

from analysis.arg_share import arg_share, arg_share_summary, plot_arg_share
from analysis.cache_invalidation import (
    cache_actions,
    cache_invalidation,
    cache_invalidation_summary,
    plot_cache_invalidation,
)
from analysis.frames import (
    actions_df,
    evictions_df,
    messages_df,
    recorded_requests_df,
    requests_df,
    runs_df,
)
from analysis.metrics import METRIC_DIRECTIONS, metrics
from analysis.overshoots import overshoots, overshoots_summary, plot_overshoots
from analysis.rereads import lint_placeholders, plot_rereads, rereads, rereads_summary
from analysis.summarisation import (
    plot_summarisation,
    recorded_compactions,
    summarisation,
    summarisation_summary,
)

__all__ = [
    "METRIC_DIRECTIONS",
    "actions_df",
    "arg_share",
    "arg_share_summary",
    "cache_actions",
    "cache_invalidation",
    "cache_invalidation_summary",
    "evictions_df",
    "lint_placeholders",
    "messages_df",
    "metrics",
    "overshoots",
    "overshoots_summary",
    "plot_arg_share",
    "plot_cache_invalidation",
    "plot_overshoots",
    "plot_rereads",
    "plot_summarisation",
    "recorded_compactions",
    "recorded_requests_df",
    "requests_df",
    "rereads",
    "rereads_summary",
    "runs_df",
    "summarisation",
    "summarisation_summary",
]
