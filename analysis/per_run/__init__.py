r"""Every per-run metric, declared once, and its fast computation from a replay's columns.

One module per analysis (``basic``, ``rereads``, ``arg_share``, ``summarisation``,
``cache_invalidation``, ``overshoots``, ``induced``), each with its ``METRICS``: ``MetricPart``\ s of
``MetricSpec``\ s (``analysis.metric_spec``) and the fast function that computes them.
This package collects them (``PARTS``, ``SPECS``) and builds every list of metrics from
them: ``METRIC_COLUMNS``, ``FLOAT_COLUMNS``, ``METRIC_DIRECTIONS``, ``RATIOS``, ``WEIGHTS``;
``part_metrics`` computes some or all parts for one run's replay, ``part_metrics_many`` for
several replays of one run at once (a sweep's unit: the parts with ``MetricPart.many`` convert
their request columns to NumPy and make each operation once for all of them).

A fast function reads the trace, the run's facts and the policy's fields outside its tiers
(prices, the usable window, the name), never a tier's settings: a sweep gives the row of one
replay to every setting that replay stands for (``replay.engine.share``), and
``tests/analysis/sweep/test_sweep.py`` checks the rows equal those computed under each setting.

No pandas and no matplotlib here (``replay run`` imports this for its summary).  Every command
computes its metrics here: ``replay run``'s roll-up, sweeps, and ``analysis.metrics.metrics``
(check, report, diff).  The pandas roll-ups of the analysis modules
(``analysis.metrics_by_analyses``) compute the same columns independently: the tests' oracle.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from analysis.metric_spec import (
    DEFAULT_PARAMS,
    AnalysisParams,
    MetricPart,
    MetricSpec,
    PartInput,
    RunFacts,
)
from analysis.per_run import (  # _build first: the compiled parts or their .py
    _build,  # noqa: F401
    arg_share,
    basic,
    cache_invalidation,
    induced,
    overshoots,
    rereads,
    summarisation,
)
from analysis.per_run.columns import BatchArrays
from replay.engine.trace import Trace
from replay.policy import Policy

PARTS: tuple[MetricPart, ...] = (*basic.METRICS, *rereads.METRICS, *arg_share.METRICS,
                                 *summarisation.METRICS, *cache_invalidation.METRICS,
                                 *overshoots.METRICS, *induced.METRICS)
"""Every metric, by the fast function that computes it, in ``metrics()``'s column order."""
SPECS: dict[str, MetricSpec] = {m.name: m for p in PARTS for m in p.metrics}
"""Metric column → its declaration."""
METRIC_COLUMNS: tuple[str, ...] = tuple(SPECS)
"""The metric columns of ``metrics()``, in its order (after ``run_id`` and ``policy``)."""
FLOAT_COLUMNS: frozenset[str] = frozenset(n for n, m in SPECS.items() if m.dtype == "float64")
"""Columns that are float64 (the rest are int64)."""
METRIC_DIRECTIONS: dict[str, str] = {n: m.better for n, m in SPECS.items() if m.better}
"""Metric column → ``"lower"`` or ``"higher"`` (which direction is better)."""
RATIOS: dict[str, tuple[str, str, float]] = {n: m.ratio for n, m in SPECS.items() if m.ratio}
"""Metric → (numerator, denominator, scale): totals over runs recomputed as a ratio of sums."""
WEIGHTS: dict[str, str] = {n: m.weight for n, m in SPECS.items() if m.weight}
"""Metric → the metric its cross-run mean is weighted by (default ``n_requests``)."""
UNITS: dict[str, str] = {n: m.unit for n, m in SPECS.items()}
"""Metric column → its unit (how tables format it: ``analysis.metric_spec.format_value``)."""
if len(SPECS) != sum(len(p.metrics) for p in PARTS):
    raise RuntimeError("a metric is declared twice")


def known(*names: str) -> tuple[str, ...]:
    """``names``, checked to be metric columns (for lists that pick some, e.g. a headline).

    Raises:
        KeyError: a name is not a declared metric.
    """
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        raise KeyError(f"not declared metrics: {unknown}")
    return names


def part_metrics(trace: Trace, policy: Policy, parts: Sequence[MetricPart], *,
                 facts: RunFacts | None = None,
                 params: AnalysisParams = DEFAULT_PARAMS) -> dict[str, Any]:
    """The columns of ``parts`` for a replay of one run (its trace) under ``policy``.

    Args:
        trace: one run's replay.
        policy: the replayed policy.
        parts: which metrics (``PARTS`` or some of them).
        facts: the run's facts; only parts with ``needs_facts=False`` without them.
        params: the analyses' constants.

    Returns:
        Metric column → value, the parts' columns in order.

    Raises:
        ValueError: a part needs run facts and ``facts`` is None.
    """
    return part_metrics_many([(trace, policy)], parts, facts=facts, params=params)[0]


def part_metrics_many(replays: Sequence[tuple[Trace, Policy]], parts: Sequence[MetricPart], *,
                      facts: RunFacts | None = None, params: AnalysisParams = DEFAULT_PARAMS,
                      heads: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``part_metrics`` of several replays of one run, each under its policy: the parts with a
    function of several replays (``MetricPart.many``) compute them all at once.  ``heads``:
    each replay's row begins with these entries (a copy; ``fast_metrics_many``'s run and
    policy), the row not copied again to put them first.

    Raises:
        ValueError: a part needs run facts and ``facts`` is None, or the replays are of runs of
            different lengths.
    """
    arrays = BatchArrays([trace.columns("requests") for trace, _ in replays])
    inps = []
    for (trace, policy), requests in zip(replays, arrays.requests):
        ac = trace.columns("actions")
        inps.append(PartInput(requests, ac, trace.columns("evictions"),
                              list(map(operator.not_, ac["undone"])), policy, facts, params,
                              arrays))
    if len({len(inp.requests["request"]) for inp in inps}) > 1:
        raise ValueError("part_metrics_many: the replays differ in length (not of one run)")
    out: list[dict[str, Any]] = ([{} for _ in inps] if heads is None
                                 else [dict(h) for h in heads])
    if len(out) != len(inps):
        raise ValueError("part_metrics_many: a head for each replay")
    for part in parts:
        for row, got in zip(out, part.compute_many(inps)):
            row.update(got)
    return out
