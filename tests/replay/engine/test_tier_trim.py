"""The trim tier, directly: the protected range is the union of every ``protect`` field, a pass
that reclaims exactly the minimum is kept and one token less is undone.

Expected figures come from the run's own token counts and the placeholder text counted with the
tokenizer here, not from the engine's running totals.
"""

from __future__ import annotations

from typing import Any

import pytest

from replay.engine.fold import replay
from replay.ingest.tokens import encoding
from tests.replay.engine.tier_runs import evicted, policy, results_of, session

N_READS = 8
"""Reads of 40 lines each; one request, at the end: the pass sees every result at full size."""


def _protected_start(run: Any, protect: dict[str, Any], usable: int) -> int:
    """First protected block, from the protect fields read here (every message is one block)."""
    hi = run.req_blocks[-1]
    tokens = run.tokens["o200k_base"]
    starts = [hi - 1]  # the newest message
    if protect.get("messages"):
        starts.append(hi - protect["messages"])
    if protect.get("tool_results"):
        starts.append([b for b in range(hi) if run.kind[b] == "tool_result"][-protect["tool_results"]])
    budget = max(protect.get("tokens", 0), int(protect.get("frac", 0.0) * usable))
    if budget:
        starts.append(min(m for m in range(hi + 1) if sum(tokens[m:hi]) <= budget))
    return min(starts)


CASES = {
    "messages": {"messages": 5},
    "tool_results": {"tool_results": 4},
    "frac": {"frac": 0.02},
    "tokens": {"tokens": 1500},
    "union: messages binds": {"messages": 9, "tool_results": 2, "frac": 0.01},
    "union: tool_results binds": {"messages": 3, "tool_results": 5, "frac": 0.01},
    "union: frac binds": {"messages": 3, "tool_results": 2, "frac": 0.03},
}


@pytest.mark.parametrize("protect", CASES.values(), ids=CASES.keys())
def test_trim_leaves_the_union_of_the_protected_ranges(protect: dict[str, Any]) -> None:
    run = session([40] * N_READS, every_step=False)
    p = policy([{"type": "trim", "protect": protect}])
    start = _protected_start(run, protect, p.usable_tokens)
    want = [b for b in results_of(run) if b < start]
    # each case's binding field matters: protecting the newest message alone trims more
    assert want != [b for b in results_of(run) if b < run.req_blocks[-1] - 1]
    assert want, "nothing to trim: the case tests nothing"
    trace = replay(run, p)
    assert evicted(run, trace, "trimmed") == want
    # the trace says where the protected range began (analyses read it, never re-derive it)
    assert [a["protect_first_msg"] for a in trace.actions.to_pylist()] == [run.msg[start]]


def _gain(run: Any, b: int) -> int:
    """Estimated tokens trimming block ``b`` to the default placeholder reclaims."""
    note = f"[Read output trimmed: {run.n_lines[b]} lines, {len(run.text[b])} chars]"
    return run.tokens["o200k_base"][b] - len(encoding("o200k_base").encode_ordinary(note))


@pytest.mark.parametrize("over", [0, 1])
def test_a_pass_reclaiming_exactly_the_minimum_is_kept_one_more_is_undone(over: int) -> None:
    run = session([40, 5], every_step=False)  # one trimmable result, the newest protected
    first = results_of(run)[0]
    minimum = _gain(run, first) + over
    trace = replay(run, policy([{"type": "trim", "min_reclaim_tokens": minimum}]))
    (action,) = trace.actions.to_pylist()
    assert action["undone"] is bool(over)
    assert action["n_blocks"] == 1
    assert evicted(run, trace) == ([] if over else [first])
    assert action["reclaimed_est_tokens"] == (0 if over else minimum)


def test_min_reclaim_frac_resolves_against_the_usable_window() -> None:
    run = session([40, 5], every_step=False)
    gain = _gain(run, results_of(run)[0])
    # a fraction whose resolved minimum is the gain exactly (window chosen to make it whole)
    kept = replay(run, policy([{"type": "trim", "min_reclaim_frac": 0.5}], window=2 * gain))
    undone = replay(run, policy([{"type": "trim", "min_reclaim_frac": 0.5}],
                                window=2 * gain + 2))
    assert [a["undone"] for a in kept.actions.to_pylist()] == [False]
    assert [a["undone"] for a in undone.actions.to_pylist()] == [True]
    # the resolved minimum is in the trace: the gain exactly, then one more
    assert [a["min_reclaim_tokens"] for a in kept.actions.to_pylist()] == [gain]
    assert [a["min_reclaim_tokens"] for a in undone.actions.to_pylist()] == [gain + 1]


def test_newest_output_is_trimmed_only_when_the_tier_says_so() -> None:
    run = session([40, 40], every_step=False)
    newest = results_of(run)[-1]
    kept = replay(run, policy([{"type": "trim"}]))
    taken = replay(run, policy([{"type": "trim", "protect": {"newest": False}}]))
    assert newest not in evicted(run, kept)
    assert newest in evicted(run, taken, "trimmed")
