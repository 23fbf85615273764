"""Event-count and idle-time triggers (#26 items 2 and 4), tool filters of a trim tier, the
tool-result token budget and OpenHands' keep-first / keep-events remainder.

Each expectation is computed here from the hand-built run (events counted by walking its blocks,
gaps from the timestamps written into it), not from the engine's own helpers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.errors import PolicyError
from tests.replay.engine.tier_runs import (
    evicted,
    lines,
    policy,
    prepared,
    results_of,
    session,
    start,
)
from tests.strategies import runs

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _timed(minutes_after: list[float], tools: list[str] | None = None) -> PreparedRun:
    """A task, then per entry a call and its result; request k is made ``minutes_after[k]``
    minutes after the start (its timestamp), tool k is ``tools[k]`` (default Read)."""
    b = start()
    for i, m in enumerate(minutes_after):
        b.message("assistant")
        b.tool_call(f"c{i}", (tools or [])[i] if tools else "Read", {"file_path": f"f{i}.py"})
        b.request(ts=(T0 + timedelta(minutes=m)).isoformat())
        b.message("tool")
        b.tool_result(f"c{i}", lines(f"out {i}", 40))
    b.message("assistant")
    b.text("finished")
    b.request(ts="")  # no timestamp: never an idle gap
    return prepared(b)


def _fired_at(trace: Any, tier: str) -> list[int]:
    return [r["request"] for r in trace.actions.to_pylist()
            if r["tier"] == tier and not r["undone"]]


# -- idle time -------------------------------------------------------------------------------

@pytest.mark.parametrize("idle", [59.99, 60.0, 60.01])
def test_idle_trigger_fires_on_a_gap_of_at_least_the_minutes(idle: float) -> None:
    # requests at 0, 1, 2, then 62 (a 60-minute gap), 63
    run = _timed([0, 1, 2, 62, 63])
    p = policy([{"type": "trim", "name": "mc", "trigger": {"idle_minutes": idle},
                 "protect": {"tool_results": 1}}])
    fired = _fired_at(replay(run, p), "mc")
    assert fired == ([3] if idle <= 60.0 else [])


def test_idle_trigger_never_fires_without_timestamps() -> None:
    run = session([40] * 6)  # no timestamps at all
    p = policy([{"type": "trim", "name": "mc", "trigger": {"idle_minutes": 1},
                 "protect": {"tool_results": 1}}])
    assert _fired_at(replay(run, p), "mc") == []


def test_a_gap_is_taken_from_the_previous_timestamped_request() -> None:
    run = _timed([0, 30, 95])
    assert run.gaps_s()[:3] == [None, 30 * 60.0, 65 * 60.0]
    assert run.gaps_s()[3] is None  # the final request has no timestamp


def test_microcompact_keeps_the_newest_compactable_results_and_clears_only_those_tools() -> None:
    tools = ["Read", "Task", "Bash", "Read", "Grep", "Read", "Read", "Bash", "Glob"]
    run = _timed([0, 1, 2, 3, 4, 5, 6, 7, 70], tools)
    p = policy([{"type": "trim", "name": "mc", "trigger": {"idle_minutes": 60},
                 "tools": ["Read", "Bash", "Grep", "Glob"], "protect": {"tool_results": 5},
                 "placeholder": {"template": "[Old tool result content cleared]"}}])
    trace = replay(run, p)
    res = results_of(run)
    # at request 8 the context holds results 0..7; compactable ones: all but 'Task' (1)
    compactable = [i for i in range(8) if tools[i] != "Task"]
    kept = compactable[-5:]
    assert sorted(evicted(run, trace)) == [res[i] for i in compactable if i not in kept]
    assert _fired_at(trace, "mc") == [8]


def test_exclude_tools_are_never_trimmed_but_count_as_protected() -> None:
    tools = ["read_file", "shell", "shell", "read_file", "shell", "shell"]
    run = _timed([0, 1, 2, 3, 4, 5], tools)
    p = policy([{"type": "trim", "name": "collapse", "exclude_tools": ["read_file"],
                 "protect": {"tool_results": 3}}])
    trace = replay(run, p)
    res = results_of(run)
    # the final request sees results 0..5: the newest 3 (3, 4, 5) protected; of 0..2, the
    # read_file result 0 is exempt
    assert sorted(set(evicted(run, trace))) == [res[1], res[2]]


def test_tool_result_token_budget_protects_the_newest_results_that_fit() -> None:
    run = session([40] * 6, every_step=False)  # one request at the end
    res = results_of(run)
    size = run.tokens["o200k_base"]
    budget = size[res[5]] + size[res[4]]  # exactly the newest two
    p = policy([{"type": "trim", "name": "budget", "protect": {"tool_result_tokens": budget}}])
    assert sorted(evicted(run, replay(run, p))) == res[:4]
    p = policy([{"type": "trim", "name": "budget", "protect": {"tool_result_tokens": budget - 1}}])
    assert sorted(evicted(run, replay(run, p))) == res[:5]


# -- event count -----------------------------------------------------------------------------

def _events_in(run: PreparedRun, hi: int) -> int:
    """Events in blocks [0, hi): walked here message by message, not with the engine's prefix."""
    n, b = 0, 0
    while b < hi:
        m = run.msg[b]
        blocks = [x for x in range(b, run.n_blocks) if run.msg[x] == m]
        tools = [x for x in blocks if run.kind[x] in ("tool_call", "tool_result") and x < hi]
        n += len(tools) if any(run.kind[x] in ("tool_call", "tool_result") for x in blocks) else 1
        b = blocks[-1] + 1
    return n


@settings(max_examples=40, deadline=None)
@given(runs(max_steps=12, max_lines=20))
def test_event_prefix_counts_calls_results_and_plain_messages(run: PreparedRun) -> None:
    prefix = run.event_prefix()
    for hi in sorted(set(run.req_blocks)):
        assert prefix[hi] == _events_in(run, hi)


@pytest.mark.parametrize("offset", [-2, -1, 0, 1])
def test_event_trigger_fires_at_or_above_the_count(offset: int) -> None:
    run = session([5] * 8)
    # request k's context: the task and k (call, result) pairs (its output, the k-th call, is
    # not in it) = 1 + 2k events
    at = 5
    n_events = 1 + 2 * at
    assert _events_in(run, run.req_blocks[at]) == n_events
    p = policy([{"type": "summarise", "name": "cond",
                 "trigger": {"after_events": n_events + offset}, "keep_messages": 2,
                 "summary_tokens": 20}])
    fired = _fired_at(replay(run, p), "cond")
    # two events arrive per request: request at − 1 holds n_events − 2
    first = {-2: at - 1, -1: at, 0: at, 1: at + 1}[offset]
    assert fired[:1] == [first]


def test_keep_events_and_keep_first_messages() -> None:
    run = session([5] * 10)
    p = policy([{"type": "summarise", "name": "cond", "trigger": {"after_events": 15},
                 "keep_events": 4, "keep_first_messages": 1, "summary_tokens": 20}])
    trace = replay(run, p)
    first = trace.actions.to_pylist()[0]
    k = first["request"]
    hi = run.req_blocks[k]
    # kept whole messages hold at most 4 events: the last two (call, result) pairs minus one
    # message — the newest call message (1), its predecessor result (1), call (1), result (1)
    kept_from = next(b for b in range(hi) if _events_in(run, hi) - _events_in(run, b) <= 4
                     and (b == 0 or run.msg[b] != run.msg[b - 1]))
    assert first["last_msg"] == run.msg[kept_from - 1]
    req = trace.requests.to_pylist()[k]
    task_tokens = run.tokens["o200k_base"][0]
    # the task is in front of the summary: its tokens are in the context after the cut
    assert req["truth_tokens"] >= task_tokens + first["summary_tokens"]


def test_a_collapse_tier_fires_on_its_trigger() -> None:
    run = session([5] * 10)
    p = policy([{"type": "collapse", "name": "drop", "trigger": {"after_events": 11},
                 "keep_messages": 2}], window=1_000_000)
    fired = _fired_at(replay(run, p), "drop")
    assert fired and fired[0] == 5  # 1 + 2·5 = 11 events before request 5


@pytest.mark.parametrize("trigger", [{"idle_minutes": 0}, {"idle_minutes": 5, "at_tokens": 9},
                                     {"after_events": 3, "after_messages": 3}])
def test_a_trigger_sets_exactly_one_positive_condition(trigger: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        policy([{"type": "trim", "name": "t", "trigger": trigger}])


@settings(max_examples=30, deadline=None)
@given(runs(max_steps=14, max_lines=30), st.integers(1, 40), st.integers(0, 10),
       st.integers(0, 3))
def test_event_condenser_replays_keep_their_invariants(run: PreparedRun, after: int, keep: int,
                                                       first: int) -> None:
    # the engine's own checks (no orphaned result, newest output kept) raise on a violation
    p = policy([{"type": "summarise", "name": "cond", "trigger": {"after_events": after},
                 "keep_events": keep, "keep_first_messages": first, "summary_tokens": 30}])
    trace = replay(run, p)
    for r in trace.actions.to_pylist():
        assert r["request"] >= 0
