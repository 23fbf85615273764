"""What a report draws from each policy's trace: its metrics (``analysis.metrics``: the per-run
functions) and the five analyses' frames (``gather``: the corpus's own frames and the runs'
facts read once for every policy), the truth that judged each run, each run's note (as ``replay
run`` shows it), and the runs in corpus order or longest first.

Not here: drawing the figures (``analysis.report.figures``), writing the report
(``analysis.report.build``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from analysis import frames
from analysis.arg_share import arg_share
from analysis.cache_invalidation import cache_invalidation
from analysis.metrics import metrics
from analysis.overshoots import overshoots
from analysis.per_run.rollup import replay_note
from analysis.rereads import REREADS_COLUMNS, rereads
from analysis.run_facts import runs_facts
from analysis.summarisation import recorded_compactions, summarisation
from replay.apply_policy import run_meta
from replay.corpus import Corpus
from replay.engine.trace import TRACE_SCHEMAS, Trace
from replay.errors import ReplayInputError
from replay.policy import Policy


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    """One policy's trace over the corpus and every frame the report draws from it."""

    policy: Policy
    metrics: pd.DataFrame
    requests: pd.DataFrame
    actions: pd.DataFrame
    rereads: pd.DataFrame
    arg_share: pd.DataFrame
    summarisation: pd.DataFrame
    cache: pd.DataFrame
    overshoots: pd.DataFrame


def gather(corpus: Corpus, runs: Sequence[tuple[Policy, Trace]]) -> list[Replayed]:
    """Metrics and analysis frames of every policy (the corpus's frames read once)."""
    present = {rid for _, t in runs for rid in t.requests["run_id"].to_pylist()}
    ids = [rid for rid in corpus.run_ids if rid in present]
    if len(ids) < len(present):
        raise ReplayInputError(f"report: runs {sorted(present - set(ids))[:5]} of the traces are "
                               "not in the corpus (report traces with the data they came from)")
    recorded = frames.recorded_requests_df(corpus, run_ids=ids)
    blocks = frames.messages_df(corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"),
                                run_ids=ids)
    flags = frames.messages_df(corpus, ("run_id", "msg", "is_harness_summary"), run_ids=ids)
    comps = recorded_compactions(flags, recorded)
    facts = runs_facts(corpus, ids)  # once for every policy
    out = []
    for policy, trace in runs:
        req, act = frames.requests_df(trace), frames.actions_df(trace)
        out.append(Replayed(
            policy=policy, metrics=metrics(corpus, trace, policy, facts=facts), requests=req,
            actions=act,
            rereads=rereads(blocks, recorded, frames.evictions_df(trace), policies=[policy.name]),
            arg_share=arg_share(req), summarisation=summarisation(act, req, comps),
            cache=cache_invalidation(req, policy), overshoots=overshoots(req, compactions=comps)))
    return out


def truth_sources(reps: list[Replayed]) -> dict[tuple[str, str], str]:
    """(run id, policy) → the truth that judged it (``replay.engine.truth``)."""
    out: dict[tuple[str, str], str] = {}
    for r in reps:
        req = r.requests
        if "truth_source" not in req.columns:  # traces written before the column existed
            continue
        for rid, src in zip(req["run_id"].tolist(), req["truth_source"].tolist()):
            out.setdefault((rid, r.policy.name), src)
    return out


def replay_notes(corpus: Corpus, runs: Sequence[tuple[Policy, Trace]]
                 ) -> dict[tuple[str, str], str]:
    """(run id, policy) → what the run's figures under the policy rest on beyond the log, for
    the runs that have a note (``analysis.per_run.rollup.replay_note``: the same note as
    ``replay run``'s ``note`` column)."""
    meta = run_meta(corpus)
    out: dict[tuple[str, str], str] = {}
    for policy, trace in runs:
        tables = [trace.table(name) for name in TRACE_SCHEMAS]
        rows = [_rows_by_run(t) for t in tables]  # (one pass a table, not a filter a run)
        for rid in rows[0]:
            one = Trace(*(t.take(pa.array(by.get(rid, ()), pa.int64()))
                          for t, by in zip(tables, rows)))
            _, _, _, harness, model, _ = meta.get(rid, ("", "", "", "", "", None))
            if note := replay_note(one, policy, harness, model):
                out[(rid, policy.name)] = note
    return out


def _rows_by_run(table: pa.Table) -> dict[str, list[int]]:
    """Run id → the indices of its rows in ``table``, in order."""
    by: dict[str, list[int]] = {}
    for i, rid in enumerate(table["run_id"].to_pylist()):
        by.setdefault(rid, []).append(i)
    return by


def run_order(corpus: Corpus, reps: list[Replayed]) -> list[str]:
    """Run ids in any trace, in corpus order."""
    present = {rid for r in reps for rid in r.metrics["run_id"]}
    return [rid for rid in corpus.run_ids if rid in present]


def longest(reps: list[Replayed], run_ids: list[str], k: int) -> list[str]:
    """The ``k`` runs with the most requests (ties in corpus order), longest first."""
    n = pd.concat([r.metrics[["run_id", "n_requests"]] for r in reps]).groupby("run_id")[
        "n_requests"].max()
    pos = {rid: i for i, rid in enumerate(run_ids)}
    return sorted(run_ids, key=lambda rid: (-int(n.get(rid, 0)), pos[rid]))[:k]
