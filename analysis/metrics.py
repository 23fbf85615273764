"""Every metric of one replay, one row per (run_id, policy): what checks, reports and diffs compare.

``metrics(corpus, trace, policy)`` splits the trace by run and computes each run's row by the
per-run functions declared beside each metric (``analysis.per_run``): the runs' facts read
once from the corpus (``analysis.run_facts.runs_facts``), then every part
(``analysis.per_run.fast_metrics``), the same code ``replay run``'s roll-up and sweeps use, so
every consumer reads one declaration.
``metrics_of_replays`` does it for traces that are already one per run (``replay check``).
A command that measures several policies over the same runs reads the runs' facts once and
passes them (``facts=``).

``n_requests``, ``tokens_sent``, ``peak_tokens``, ``n_summaries``, ``n_trims`` and
``cost_usd`` come first (``analysis.per_run.basic``: their declarations say what each is).
Columns come in a fixed order (keys, basic, then ``rereads_*``,
``arg_share_*``, ``summarisation_*``, ``cache_invalidation_*``,
``overshoots_*``, ``induced_rereads_*``), rows sorted by ``run_id`` then ``policy``; integers
are ``int64`` and everything else ``float64`` (NaN where a statistic is undefined),
so two runs of the same inputs give equal frames.
Every column is declared once, as a ``MetricSpec`` in ``analysis.per_run.<analysis>``
beside its fast computation; ``METRIC_COLUMNS``, ``FLOAT_COLUMNS``, ``METRIC_DIRECTIONS``
(which way is better), ``RATIOS`` and ``WEIGHTS`` (how runs combine) are built from them
there and re-exported here.

The pandas analyses compute the same frame independently
(``analysis.metrics_by_analyses``): the tests' cross-check, which no command calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from analysis.metric_spec import DEFAULT_PARAMS, AnalysisParams, RunFacts
from analysis.per_run import (
    FLOAT_COLUMNS,
    METRIC_COLUMNS,
    METRIC_DIRECTIONS,
    PARTS,
    RATIOS,
    SPECS,
    WEIGHTS,
    known,
)
from analysis.per_run.basic import BASIC
from analysis.per_run.fast_metrics import fast_metrics, metrics_frame
from analysis.run_facts import runs_facts
from replay.corpus import Corpus
from replay.engine.trace import TRACE_SCHEMAS, Trace
from replay.policy import Policy

__all__ = ["BASIC", "BASIC_COLUMNS", "FLOAT_COLUMNS", "METRIC_COLUMNS", "METRIC_DIRECTIONS", "PARTS",
           "RATIOS", "SPECS", "WEIGHTS", "known", "metrics", "metrics_of_replays"]
BASIC_COLUMNS: tuple[str, ...] = BASIC.names


def metrics(corpus: Corpus, trace: Trace, policy: Policy,
            params: AnalysisParams = DEFAULT_PARAMS, *,
            facts: Mapping[str, RunFacts] | None = None) -> pd.DataFrame:
    """Every metric column, one row per (run_id, policy) of the trace.

    Args:
        corpus: the corpus the trace was replayed from.
        trace: the replay of ``policy`` over (some of) the corpus's runs.
        policy: the replayed policy (prices, tier minimums).
        params: the analyses' constants.
        facts: ``analysis.run_facts.runs_facts`` of (some of) the runs, under ``params``: read
            once for several policies' traces; the other runs' facts are read here.

    Returns:
        ``run_id``, ``policy`` and ``METRIC_COLUMNS``: ``BASIC_COLUMNS``, then the
        ``rereads_*``, ``arg_share_*``, ``summarisation_*``, ``cache_invalidation_*``,
        ``overshoots_*`` and ``induced_rereads_*`` columns.

    Raises:
        ValueError: the trace holds another policy's rows.
    """
    return metrics_of_replays(corpus, _by_run(trace), policy, params, facts=facts)


def metrics_of_replays(corpus: Corpus, traces: Iterable[Trace], policy: Policy,
                       params: AnalysisParams = DEFAULT_PARAMS, *,
                       facts: Mapping[str, RunFacts] | None = None) -> pd.DataFrame:
    """``metrics`` of traces that are each one run's replay under ``policy`` (a trace with no
    request has no row).

    Raises:
        ValueError: a trace holds another policy's rows, or several runs.
    """
    runs: list[tuple[str, Trace]] = []
    for trace in traces:
        rq = trace.columns("requests")
        if not rq["request"]:
            continue
        names = sorted(set(rq["policy"]))
        if names != [policy.name]:
            raise ValueError(f"trace holds policies {names}, expected only {policy.name!r}")
        rid = rq["run_id"][0]
        if any(r != rid for r in rq["run_id"]):
            raise ValueError("metrics_of_replays takes traces of one run each")
        runs.append((rid, trace))
    given = facts or {}  # (not ``known``: analysis.per_run's, imported above)
    read = runs_facts(corpus, [rid for rid, _ in runs if rid not in given], params)
    rows = [fast_metrics(given[rid] if rid in given else read[rid], trace, policy, params)
            for rid, trace in runs]
    rows.sort(key=lambda r: r["run_id"])
    return metrics_frame(rows)


def _by_run(trace: Trace) -> list[Trace]:
    """The trace split into one trace per run (rows in their order), runs in order of their
    first request."""
    rq = trace.columns("requests")
    ids = list(dict.fromkeys(rq["run_id"]))
    if len(ids) <= 1:
        return [trace]
    tables = {name: trace.columns(name) for name in TRACE_SCHEMAS}
    rows: dict[str, dict[str, list[int]]] = {rid: {n: [] for n in tables} for rid in ids}
    for name, cols in tables.items():
        for i, rid in enumerate(cols["run_id"]):
            if rid in rows:  # actions or evictions of a run with no request: no row
                rows[rid][name].append(i)
    return [Trace(columns={n: {c: [v[i] for i in at] for c, v in tables[n].items()}
                           for n, at in by.items()})
            for by in rows.values()]
