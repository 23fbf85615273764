"""Every ``metrics()`` column for one (run, policy) replay, from plain column lists.

The path of every command that shows a metric: sweeps (a row per replay, under a millisecond),
``replay run``'s roll-up (some parts) and ``analysis.metrics.metrics`` (check, report, diff: the
trace split by run).  The columns are computed in two parts:

- ``analysis.run_facts.run_facts(corpus, run_id)`` — everything that does not
  depend on the policy, once per run (``runs_facts``: several runs);
- ``fast_metrics(facts, trace, policy)`` — one row (a dict in ``METRIC_COLUMNS``
  order) from the trace's column lists (``Trace.columns``), with no Arrow or
  pandas per replay: each ``MetricPart`` of ``analysis.per_run.PARTS`` computes its
  columns.

The arithmetic of each part follows its analysis's pandas definition step by step
(NumPy means, sums and percentiles where pandas used them), and the tests check the rows
equal the pandas analyses' frame (``analysis.metrics_by_analyses``) on real traces, column by
column (``tests/analysis/sweep/test_sweep.py``, ``tests/analysis/test_metrics_agree.py``).
Integers are equal exactly; floats are equal to the last bits or within 1e-12 relative (the
order of a float sum can differ between pandas' grouped sums and NumPy's).

Not here: the definitions themselves (the analysis modules), the sweep loop
(``analysis.sweep.core``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.metric_spec import DEFAULT_PARAMS, AnalysisParams, RunFacts
from analysis.per_run import (
    FLOAT_COLUMNS,
    METRIC_COLUMNS,
    PARTS,
    part_metrics,
    part_metrics_many,
)
from replay.engine.trace import Trace
from replay.policy import Policy

__all__ = ["FLOAT_COLUMNS", "METRICS_VERSION", "METRIC_COLUMNS", "fast_metrics", "fast_metrics_many",
           "metrics_frame", "part_metrics"]

METRICS_VERSION = "4"
"""Bumped whenever a column changes meaning (sweep caches are keyed by it). 2: summarisation_n
merged into n_summaries (#25 item 10).  3: ``cost_usd`` and
``cache_invalidation_invalidated_tokens`` include induced re-reads, and the
``induced_rereads_*`` columns (``analysis.per_run.induced``).  4:
``induced_rereads_estimated_n`` (re-reads sized without an edit the replay cannot apply)."""


def fast_metrics(facts: RunFacts, trace: Trace, policy: Policy,
                 params: AnalysisParams = DEFAULT_PARAMS) -> dict[str, Any]:
    """One ``metrics()`` row for a replay of one run under one policy.

    Args:
        facts: ``run_facts`` of the replayed run.
        trace: the replay (``replay.engine.fold.replay`` of that run under ``policy``).
        policy: the replayed policy (prices, tier minimums, usable window).
        params: the analyses' constants.

    Returns:
        ``run_id``, ``policy`` and every column of ``METRIC_COLUMNS``, in that order.
    """
    return fast_metrics_many(facts, [(trace, policy)], params)[0]


def fast_metrics_many(facts: RunFacts, replays: Sequence[tuple[Trace, Policy]],
                      params: AnalysisParams = DEFAULT_PARAMS) -> list[dict[str, Any]]:
    """``fast_metrics`` of several replays of one run (each a trace and its policy), the parts
    that can computing them all at once (``analysis.per_run.part_metrics_many``): a sweep's unit.
    """
    return part_metrics_many(replays, PARTS, facts=facts, params=params,
                             heads=[{"run_id": facts.run_id, "policy": policy.name}
                                    for _, policy in replays])


def metrics_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows of ``fast_metrics`` as a frame with ``metrics()``'s columns and dtypes.

    Args:
        rows: dicts with ``run_id``, ``policy`` and every metric column (other keys are kept,
            after them).

    Returns:
        A frame: ``run_id``, ``policy``, ``METRIC_COLUMNS`` (int64 or float64), then any extra keys.
    """
    rows = list(rows)
    cols: dict[str, Any] = {
        key: pd.Series([r[key] for r in rows], dtype=object).astype(str)
        for key in ("run_id", "policy")}
    for col in METRIC_COLUMNS:  # a column at a time, the frame made once (an insertion ~1 ms)
        cols[col] = np.array([r[col] for r in rows],
                             dtype="float64" if col in FLOAT_COLUMNS else "int64")
    out = pd.DataFrame(cols)
    known = set(cols)
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in known))
    return pd.concat([out, pd.DataFrame(rows, columns=extra)], axis=1) if extra else out
