"""The per-run metric functions agree with the pandas analyses on drawn runs, alone and batched.

``test_metrics_agree`` compares the two computations of every metric (``analysis.per_run``, what
every command shows, and ``analysis.metrics_by_analyses``, the pandas analyses) on the real
runs of ``logs/`` and the samples; ``test_metrics_batch`` compares a sweep's batched path with
the per-run path alone.  Neither reaches what real runs rarely hold: a request with an empty
context (no task before the first call), the harness's compactions with usage recorded after
them, usage recorded at some requests only, tool errors, several models in a run.  Here runs
with those (``tests.strategies.recorded_runs``) are replayed under drawn policies and every
metric of ``metrics()`` (the per-run functions, one replay at a time) and of
``fast_metrics_many`` (a sweep's unit: the replays of one run under several settings at once)
is compared with ``metrics_by_analyses``: integers exactly, floats to 1e-12 relative, unknown
(NaN) only where the other is unknown too.  Both compute every metric column (the frames'
columns are compared too): no value is left out on either side.  The batched parts are also
given replays whose run facts differ (``_check_other_facts``): each replay still gets its own
values, to the bit.

The pandas computation costs ~0.25 s a call whatever its size, half this test's time: each
example measures 2-5 runs under three policies in one call, and 5 examples are enough (each of
the planted bugs it was checked on is caught by 75-100 % of drawn examples alone).  The policies differ in their tiers
only (the second and third take the first's server, estimator, cache and name): the metrics
read a policy's fields outside its tiers, never a tier's (``analysis.per_run``'s docstring; a
sweep relies on it), so one call of ``metrics_by_analyses`` with the first policy measures every
replay.  Each run is in the corpus once a policy (a copy of its draft under another run id:
``metrics_by_analyses`` keeps one row per run and policy name).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.metric_spec import PartInput, RunFacts
from analysis.metrics import FLOAT_COLUMNS, METRIC_COLUMNS, PARTS, metrics
from analysis.metrics_by_analyses import metrics_by_analyses
from analysis.per_run.fast_metrics import fast_metrics_many
from analysis.run_facts import runs_facts
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.engine.trace import Trace
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.run_tables import tokenize
from replay.policy import Policy, policy_from_dict, policy_to_dict
from tests.analysis.test_metrics_batch import _bits
from tests.strategies import policies, recorded_runs

POLICIES = 3
"""Policies a drawn example replays its runs under (a sweep's unit of three settings)."""
_WINDOWS = st.integers(1000, 8000)
_PRICES = st.sampled_from([None, {"input_per_mtok": 7.0, "cache_read_per_mtok": 0.5,
                                  "cache_write_per_mtok": 9.0, "output_per_mtok": 2.0}])


def _same_outside_tiers(tiers_of: Policy, base: dict[str, Any]) -> Policy:
    """``base`` (a policy's plain data) with the tiers of ``tiers_of``."""
    return policy_from_dict({**base, "tiers": policy_to_dict(tiers_of)["tiers"]})


def _copy(draft: RunDraft, j: int) -> RunDraft:
    """The run of ``draft`` under another run id (its ``j``-th copy)."""
    return RunDraft({**draft.run, "run_id": f"{draft.run['run_id']}~{j}"}, draft.messages,
                    draft.requests, draft.events)


@st.composite
def _examples(draw: st.DrawFn) -> tuple[Corpus, list[str], list[Policy]]:
    """A corpus of 2-5 drawn runs, each with a copy for every policy but the first; its runs'
    ids; the policies (``POLICIES``: their tiers drawn, the rest the first's, with a window of
    1,000-8,000 tokens, the drawn runs' size, so that the tiers act, and other prices
    sometimes)."""
    base = policy_to_dict(draw(policies()))
    window = draw(_WINDOWS)
    base["server"] = {**base["server"], "window_tokens": window,
                      "reserve_tokens": min(base["server"]["reserve_tokens"], window // 4)}
    prices = draw(_PRICES)
    if prices is not None:
        base["cache"]["prices"] = prices
    chosen = [policy_from_dict(base)] + [_same_outside_tiers(draw(policies()), base)
                                         for _ in range(POLICIES - 1)]
    drafts = [draw(recorded_runs(index=i)) for i in range(draw(st.integers(2, 5)))]
    tables = tokenize([*drafts, *(_copy(d, j) for j in range(1, POLICIES) for d in drafts)],
                      ("o200k_base",), counted={})  # (a copy's texts are its run's: counted once)
    return (Corpus.from_tables(tables.runs, tables.messages, tables.requests),
            [d.run["run_id"] for d in drafts], chosen)


def _run_of(rid: str, j: int) -> str:
    """The run replayed under the ``j``-th policy (``_copy``'s id)."""
    return f"{rid}~{j}" if j else rid


def _same(a: Any, b: Any, float_column: bool) -> bool:
    """Equal (floats to 1e-12 relative), or both unknown."""
    if not float_column:
        return not isinstance(a, float) and not isinstance(b, float) and a == b
    unknown = [math.isnan(v) for v in (a, b)]
    return all(unknown) or (not any(unknown) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0))


def _differences(row: dict[str, Any], want: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The metrics of ``row`` that are not ``want``'s: (column, value, wanted)."""
    return [(c, row[c], want[c]) for c in METRIC_COLUMNS
            if not _same(row[c], want[c], c in FLOAT_COLUMNS)]


@settings(max_examples=5, deadline=None)
@given(_examples())
def test_the_per_run_functions_and_a_sweeps_batches_agree_with_the_analyses(
        example: tuple[Corpus, list[str], list[Policy]]) -> None:
    corpus, rids, chosen = example
    replays = {(rid, j): replay(corpus.prepared(_run_of(rid, j)), policy,
                                calibration=corpus.calibration(_run_of(rid, j)))
               for j, policy in enumerate(chosen) for rid in rids}
    trace = Trace.concat(list(replays.values()))
    facts = runs_facts(corpus, corpus.run_ids)
    per_run = metrics(corpus, trace, chosen[0], facts=facts)
    oracle = metrics_by_analyses(corpus, trace, chosen[0])
    assert list(per_run.columns) == list(oracle.columns) == ["run_id", "policy",
                                                             *METRIC_COLUMNS]
    assert list(per_run.dtypes) == list(oracle.dtypes)
    keys = ["run_id", "policy"]
    assert per_run[keys].equals(oracle[keys])
    assert len(oracle) == len(rids) * POLICIES
    by_run = {r["run_id"]: r for r in oracle.to_dict(orient="records")}
    for row in per_run.to_dict(orient="records"):
        assert not _differences(row, by_run[row["run_id"]]), row["run_id"]
    for rid in rids:  # a sweep's unit: the run's replays under every policy at once
        others = [replay(corpus.prepared(rid), p, calibration=corpus.calibration(rid))
                  for p in chosen[1:]]
        batched = fast_metrics_many(facts[rid], list(zip([replays[(rid, 0)], *others], chosen)))
        for j, row in enumerate(batched):
            assert not _differences(row, by_run[_run_of(rid, j)]), (rid, j)
        _check_other_facts(facts[rid], [replays[(rid, 0)], *others], chosen)


def _check_other_facts(facts: RunFacts, traces: list[Trace], chosen: list[Policy]) -> None:
    """The batched parts give each replay the values it gets alone when the replays' run facts
    differ too (every other replay's first recorded compaction moved: none, or at request 1).
    No caller batches replays of several runs today (``part_metrics_many`` takes one run's
    facts); the parts compare the facts all the same, and this keeps that comparison honest."""
    other = replace(facts, first_compaction_request=(
        math.inf if math.isfinite(facts.first_compaction_request) else 1.0))
    inps = []
    for k, (trace, policy) in enumerate(zip(traces, chosen)):
        ac = trace.columns("actions")
        inps.append(PartInput(trace.columns("requests"), ac, trace.columns("evictions"),
                              [not u for u in ac["undone"]], policy, other if k % 2 else facts))
    for part in PARTS:
        if part.many is not None:
            assert ([_bits(r) for r in part.compute_many(inps)]
                    == [_bits(part.compute(i)) for i in inps]), part.name

