"""Metrics over replay traces: the five analyses, their per-run summaries, plots, loaders.

Each analysis is a module with a tidy per-event (or per-request) function, a
``*_summary`` with one row per (run_id, policy), and a ``plot_*``;
``metrics_by_analyses`` joins every summary: the cross-check of ``metrics``, which computes
the same frame by the per-run functions (``analysis.per_run``) for checks, reports and diffs.
The frames come from ``analysis.frames`` (the only place Arrow becomes pandas).

The names below are imported on first use, so that importing a submodule
(``analysis.per_run``, what ``replay run`` needs) does not load pandas and matplotlib.
An analysis function named like its module (``metrics``, ``rereads``, ``arg_share``,
``summarisation``, ``cache_invalidation``, ``overshoots``) is imported from its module:
``from analysis.metrics import metrics``.
"""

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "METRIC_DIRECTIONS": "analysis.per_run",
    "actions_df": "analysis.frames",
    "arg_share_summary": "analysis.arg_share",
    "cache_actions": "analysis.cache_invalidation",
    "cache_invalidation_summary": "analysis.cache_invalidation",
    "evictions_df": "analysis.frames",
    "lint_placeholders": "analysis.rereads",
    "messages_df": "analysis.frames",
    "overshoots_summary": "analysis.overshoots",
    "plot_arg_share": "analysis.arg_share",
    "plot_cache_invalidation": "analysis.cache_invalidation",
    "plot_overshoots": "analysis.overshoots",
    "plot_rereads": "analysis.rereads",
    "plot_summarisation": "analysis.summarisation",
    "recorded_compactions": "analysis.summarisation",
    "recorded_requests_df": "analysis.frames",
    "requests_df": "analysis.frames",
    "rereads_summary": "analysis.rereads",
    "runs_df": "analysis.frames",
    "summarisation_summary": "analysis.summarisation",
}
"""Name → the module it comes from, imported when the name is first used."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(_LAZY)
