"""The facts of a recorded run that every metric row needs, whatever the policy replayed.

``run_facts(corpus, run_id)`` reads one run's tool blocks, recorded requests and
harness-summary flags once and keeps what ``analysis.per_run.fast_metrics`` needs for any
number of replays of that run (``runs_facts``: several runs, their tables made frames once):

- the ``rereads_*`` counts no eviction can change: reads, re-reads, refreshes,
  retries, loops, identical repeats (``analysis.rereads``' definitions, computed
  by that module's own call-linking helpers, so the two cannot drift apart);
- the re-reads that are redundant unless a policy evicted the previous result
  first, with the previous result's block;
- the harness's recorded compactions and the first request after one.

Not here: anything that depends on the policy (``analysis.per_run.fast_metrics``); the facts'
type, ``RunFacts``, declared in ``analysis.metric_spec`` beside ``PartInput`` that carries it
(the declarations import nothing above them: docs/architecture.md, Layers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from analysis import frames
from analysis.metric_spec import DEFAULT_PARAMS, AnalysisParams, RunFacts
from analysis.reread_calls import Call, calls_by_run, mark_loops
from analysis.rereads import REREADS_COLUMNS
from analysis.summarisation import recorded_compactions
from replay.corpus import Corpus


def run_facts(corpus: Corpus, run_id: str, params: AnalysisParams = DEFAULT_PARAMS) -> RunFacts:
    """The policy-independent facts of one run, read from the corpus (once per run).

    Args:
        corpus: the corpus holding the run.
        run_id: the run.
        params: the analyses' constants (the re-read loop's size and window).

    Returns:
        The run's facts, as ``analysis.rereads`` and ``analysis.summarisation`` see them.
    """
    return runs_facts(corpus, [run_id], params)[run_id]


def runs_facts(corpus: Corpus, run_ids: Sequence[str],
               params: AnalysisParams = DEFAULT_PARAMS) -> dict[str, RunFacts]:
    """``run_facts`` of several runs, their tables read and made frames once for all of them.

    Returns:
        Run id → its facts, in the order of ``run_ids`` (a run id given twice is read once).
    """
    ids = list(dict.fromkeys(run_ids))
    recorded = frames.recorded_requests_df(corpus, run_ids=ids)
    blocks = frames.messages_df(corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"),
                                run_ids=ids)
    flags = frames.messages_df(corpus, ("run_id", "msg", "is_harness_summary"), run_ids=ids)
    comps = recorded_compactions(flags, recorded)
    firsts: dict[str, list[int]] = {rid: [] for rid in ids}
    for rid, req in zip(comps["run_id"].tolist(), comps["request"].tolist()):
        firsts[rid].append(-1 if pd.isna(req) else int(req))  # NA, None or NaN: none after
    outs: dict[str, list[int]] = {rid: [] for rid in ids}
    for rid, m in zip(recorded["run_id"].tolist(), recorded["output_msg"].tolist()):
        outs[rid].append(int(m))
    calls = calls_by_run(blocks, {rid: sorted(m) for rid, m in outs.items()})
    return {rid: _facts(rid, calls.get(rid, []), firsts[rid], params) for rid in ids}


def _facts(run_id: str, calls: list[Call], firsts: list[int],
           params: AnalysisParams) -> RunFacts:
    """One run's facts from its tool calls (``calls_by_run``) and the first request after each
    recorded compaction (-1: none after it)."""
    mark_loops(calls, params.loop_k, params.loop_window_requests)
    counts = dict.fromkeys(("rereads_n_reads", "rereads_n", "rereads_n_refresh",
                            "rereads_n_retry", "rereads_tokens", "rereads_n_identical",
                            "rereads_n_identical_unchanged"), 0)
    loops: dict[int, int] = {}
    candidates = []
    for call in calls:
        counts["rereads_n_identical"] += call.is_identical_repeat
        counts["rereads_n_identical_unchanged"] += call.is_unchanged_repeat
        if not call.is_read:
            continue
        counts["rereads_n_reads"] += 1
        if call.loop_id >= 0:
            loops[call.loop_id] = loops.get(call.loop_id, 0) + 1
        prev = call.prev
        if prev is None:
            continue
        tokens = call.result.tokens if call.result else 0
        counts["rereads_n"] += 1
        counts["rereads_tokens"] += tokens
        if call.refreshed:
            counts["rereads_n_refresh"] += 1
        elif prev.result is None or prev.result.is_error:
            counts["rereads_n_retry"] += 1
        else:
            candidates.append((call.request, prev.result.msg, prev.result.block, tokens))
    counts["rereads_n_loops"] = len(loops)
    counts["rereads_loop_reads"] = sum(loops.values())
    counts["rereads_max_loop_reads"] = max(loops.values(), default=0)
    after = [r for r in firsts if r >= 0]
    return RunFacts(run_id, counts, tuple(candidates), len(firsts),
                    float(min(after)) if after else math.inf)
