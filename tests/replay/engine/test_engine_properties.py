"""Invariants of the replay engine over random runs and random policies (hypothesis)."""

from __future__ import annotations

import io
import math
from collections import Counter
from itertools import pairwise

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.fold import replay
from replay.engine.needs import run_needs
from replay.engine.prepared import PreparedRun
from replay.engine.trace import INDUCED_REREAD, Trace
from replay.policy import Policy, policy_from_dict
from tests.replay.engine.test_induced import (
    _evicted_before,
    _induced_actions,
    _with,
    _without_induced_columns,
)
from tests.strategies import policies, runs

REMOVED = ("summarised", "dropped")


def _live_sets(run: PreparedRun, trace: Trace) -> list[list[int]]:
    """For each request, the raw blocks in context (not removed before it), from the trace."""
    removed_at: dict[tuple[int, int], int] = {}
    for row in trace.evictions.to_pylist():
        if row["fate"] in REMOVED:
            removed_at.setdefault((row["msg"], row["block"]), row["request"])
    live = []
    for k in range(run.n_requests):
        live.append([b for b in range(run.req_blocks[k])
                     if removed_at.get((run.msg[b], run.block[b]), 10**9) > k])
    return live


@settings(max_examples=20, deadline=None)
@given(runs(), policies())
def test_no_orphaned_tool_result_after_any_tier(run: PreparedRun, policy) -> None:
    """Every tool result in a request's context has its call in that context too; and so would
    a cut at any message prepare calls a safe split, not only at those the tiers chose (counted
    again here from the calls and results)."""
    for o, start in enumerate(run.msg_start[:-1]):
        if run.safe_split[o]:
            assert not any(run.kind[b] == "tool_result" and 0 <= run.call_of[b] < start
                           for b in range(start, run.n_blocks)), f"message {o} is no safe split"
    trace = replay(run, policy)
    for live in _live_sets(run, trace):
        alive = set(live)
        for b in live:
            if run.kind[b] == "tool_result" and run.call_of[b] >= 0:
                assert run.call_of[b] in alive


@settings(max_examples=20, deadline=None)
@given(runs(), policies())
def test_order_preserved_removals_are_a_prefix(run: PreparedRun, policy) -> None:
    """Tiers remove or replace blocks but never reorder: what survives is a contiguous suffix."""
    trace = replay(run, policy)
    for k, live in enumerate(_live_sets(run, trace)):
        if live:
            assert live == list(range(live[0], run.req_blocks[k]))


@settings(max_examples=20, deadline=None)
@given(runs(), st.integers(0, 6), st.integers(0, 5000))
def test_policy_that_never_fires_reproduces_raw_sizes(run: PreparedRun, overhead: int,
                                                      fixed: int) -> None:
    """With no tier firing, every request is exactly the recorded stream before its output."""
    policy = policy_from_dict({"name": "idle", "server": {
        "window_tokens": 10**9, "message_overhead_tokens": overhead, "fixed_overhead_tokens": fixed},
        "tiers": [{"type": "summarise", "trigger": {"at_tokens": 10**8}}]})
    trace = replay(run, policy)
    tokens = run.tokens["o200k_base"]
    expected = []
    for k in range(run.n_requests):
        hi = run.req_blocks[k]
        n_msgs = len({run.msg[b] for b in range(hi)})
        expected.append(fixed + sum(tokens[:hi]) + overhead * n_msgs)
    assert trace.requests["truth_tokens"].to_pylist() == expected
    assert trace.requests["raw_tokens"].to_pylist() == expected
    assert trace.actions.num_rows == 0


@settings(max_examples=20, deadline=None)
@given(runs())
def test_a_tier_switched_off_never_acts_even_far_over_its_window(run: PreparedRun) -> None:
    """``trigger: {never: true}``: trim and summarise tiers stay idle on a window every run
    overshoots (the same tiers with a trigger at 0 act), so a tier can be switched off
    without a trigger level above the window (which the loader refuses)."""
    def policy(trigger: dict[str, object]) -> object:
        return policy_from_dict({"name": "off", "server": {"window_tokens": 50},
                                 "tiers": [{"type": "trim", "trigger": trigger, "min_chars": 0},
                                           {"type": "summarise", "trigger": trigger,
                                            "min_messages": 0, "keep_messages": 1}]})
    assert replay(run, policy({"never": True})).actions.num_rows == 0
    if run.n_requests > 2 and run.n_blocks > 4:
        assert replay(run, policy({"at_tokens": 0})).actions.num_rows > 0


@settings(max_examples=20, deadline=None)
@given(runs(), policies())
def test_replay_twice_is_byte_identical(run: PreparedRun, policy) -> None:
    """Same run and policy → identical tables and identical Parquet bytes."""
    a, b = replay(run, policy), replay(run, policy)
    for name in ("requests", "actions", "evictions"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert ta.equals(tb)
        ba, bb = io.BytesIO(), io.BytesIO()
        pq.write_table(ta, ba)
        pq.write_table(tb, bb)
        assert ba.getvalue() == bb.getvalue()


@given(runs(max_lines=40), st.floats(0.0, 0.09), st.floats(0.1, 0.3))
def test_before_send_check_with_margin_above_estimator_error_never_overshoots(
        run: PreparedRun, error: float, margin: float) -> None:
    """An estimator reading up to `error` low and a before-send emergency check with a larger
    margin keep every request inside window − reserve (messages are small next to the window)."""
    policy = policy_from_dict({
        "name": "safe", "server": {"window_tokens": 6000, "reserve_tokens": 1000},
        "estimator": {"method": "tokenizer", "scale": 1.0 - error},
        "subtract_reserve": True,
        "tiers": [{"type": "collapse", "when": "before", "margin_frac": margin,
                   "may_trim_protected": True, "keep_messages": None}]})
    trace = replay(run, policy)
    assert max(trace.requests["overshoot_tokens"].to_pylist()) == 0


@given(runs(), policies())
def test_incremental_totals_equal_a_recount_of_the_live_context(run: PreparedRun, policy) -> None:
    """Where no block was trimmed, no summary sits at the head and nothing was re-read yet, the
    engine's running totals (tokens, result bytes) equal a recount over the blocks live at that request."""
    trace = replay(run, policy)
    acts = trace.actions.to_pylist()
    first_trim = min((e["request"] for e in trace.evictions.to_pylist() if e["fate"] == "trimmed"),
                     default=10**9)
    kept_first = {t.name for t in policy.tiers if getattr(t, "keep_first_messages", 0)}
    first_head = min((a["request"] for a in acts if a["kind"] == "summarise" or a["summary_tokens"]
                      or a["tier"] in kept_first),  # the run's first messages in front of a cut
                     default=10**9)
    first_head = min(first_head, min((a["request"] for a in acts  # a re-read is no recorded block
                                      if a["kind"] == INDUCED_REREAD and not a["undone"]),
                                     default=10**9))
    tokens = run.tokens["o200k_base"]
    overhead = policy.server.message_overhead_tokens
    rows = trace.requests.to_pylist()
    checked = 0
    for k, live in enumerate(_live_sets(run, trace)):
        if k >= min(first_trim, first_head):
            break
        n_msgs = len({run.msg[b] for b in live})
        assert rows[k]["truth_tokens"] == sum(tokens[b] for b in live) + overhead * n_msgs
        assert rows[k]["bytes_results"] == sum(run.n_bytes[b] for b in live
                                               if run.kind[b] == "tool_result")
        assert rows[k]["n_messages"] == n_msgs
        checked += 1
    assert checked >= 1


def _est_sizes(run: PreparedRun, policy) -> list[int]:  # type: ignore[no-untyped-def]
    """Each block's estimated size before any change, counted here from the policy's estimator
    (the three the strategy draws), message overhead on a message's first block."""
    e, overhead = policy.estimator, policy.server.message_overhead_tokens
    tokens = run.tokens["o200k_base"]
    if e.method == "chars":
        sizes = [math.ceil(n / e.chars_per_token) for n in run.n_chars]
    else:
        sizes = [round(t * e.scale) for t in tokens]
    return [s + (overhead if b == 0 or run.msg[b - 1] != run.msg[b] else 0)
            for b, s in enumerate(sizes)]


@given(runs(), policies())
def test_newest_output_is_never_evicted_and_nothing_trimmed_inside_the_protected_range(
        run: PreparedRun, policy) -> None:
    """Walking the evictions in order: no tier ever takes the newest message of the context it
    acts on, and the trim tier never trims inside what its ``protect`` fields cover (messages
    and tool results counted here; a token budget covers at least the newest messages whose
    original sizes fit, since trims only shrink blocks)."""
    trace = replay(run, policy)
    when = {t.name: t.when for t in policy.tiers}
    trim = next((t for t in policy.tiers if t.type == "trim"), None)
    sizes = _est_sizes(run, policy)
    ordinal = run.ordinal
    index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
    lo = 0
    for row in trace.evictions.to_pylist():
        if row["induced"]:  # a re-read the replay inserted (tests/replay/engine/test_induced.py)
            continue
        b = index[(row["msg"], row["block"])]
        k = row["request"] if when[row["tier"]] == "before" else row["request"] - 1
        hi = max(run.req_blocks[:k + 1])
        assert lo <= b < hi
        assert ordinal[b] < ordinal[hi - 1], "the newest output was evicted"
        if row["fate"] != "trimmed":
            lo = b + 1
            continue
        if trim is None or row["tier"] != trim.name:
            continue
        p = trim.protect
        if p.messages:
            assert ordinal[b] <= ordinal[hi - 1] - p.messages
        if p.tool_results:
            live_results = [x for x in range(lo, hi) if run.kind[x] == "tool_result"]
            if live_results:
                nth = live_results[max(0, len(live_results) - p.tool_results)]
                assert ordinal[b] < ordinal[nth]
        budget = max(p.tokens, int(p.frac * policy.usable_tokens))
        if budget:
            assert sum(sizes[run.msg_start[ordinal[b]]:hi]) > budget, \
                "trimmed inside the token-protected range"


# -- induced re-reads (replay.engine.induced; real logs: tests/replay/engine/test_induced.py) --------


@given(runs(), policies())
def test_induced_rereads_never_exceed_the_needs_of_removed_blocks(run: PreparedRun,
                                                                  policy: Policy) -> None:
    """Each re-read made at a need re-reads a block the policy evicted before that request and
    the need rules name there; at most one per (block, need)."""
    policy = _with(policy, invited_recall="at_need")
    trace = replay(run, policy)
    needs = run_needs(run)
    evicted = _evicted_before(run, trace)
    pairs = {(b, r) for b, bn in needs.blocks.items() for r in bn.need_requests
             if evicted.get(b, 10**9) <= r}
    made = [a for a in _induced_actions(trace) if not a["undone"]]
    assert len(made) <= len(pairs)
    for a in made:
        assert a["when"] == "need"
        assert any(run.msg[b] == a["first_msg"] for b, r in pairs if r == a["request"])
    rq = trace.requests.to_pylist()
    assert sum(r["induced_rereads"] for r in rq) == len(made)
    # nothing re-read while its copy is still in context: between two re-reads of a one-block
    # message the first copy went (an induced eviction of it between them). At request k the
    # re-reads come after the tiers stamped k that act before sending's checks begin (the
    # ``after`` tiers of request k - 1, stamped k) and before the ``before`` tiers stamped k.
    late = {t.name for t in policy.tiers if t.when == "before"}
    blocks_of = Counter(run.msg[b] for b in range(run.n_blocks))
    copy_gone: dict[int, list[tuple[int, bool]]] = {}
    for e in trace.evictions.to_pylist():
        if e["induced"]:
            copy_gone.setdefault(e["msg"], []).append((e["request"], e["tier"] in late))
    reread_at: dict[int, list[int]] = {}
    for a in made:
        reread_at.setdefault(a["first_msg"], []).append(a["request"])
    for m, at in reread_at.items():
        if blocks_of[m] == 1:
            at.sort()
            for r1, r2 in pairwise(at):
                assert any(r1 <= e < r2 if after_rereads else r1 < e <= r2
                           for e, after_rereads in copy_gone.get(m, ())), (m, at)


@given(runs())
def test_with_nothing_removed_the_trace_is_unchanged(run: PreparedRun) -> None:
    """A policy that never removes anything induces nothing: its trace equals the trace with the
    model off, every column."""
    idle = policy_from_dict({"name": "idle", "server": {"window_tokens": 10**9},
                             "tiers": [{"type": "trim", "trigger": {"at_tokens": 10**8}}]})
    on, off = replay(run, idle), replay(run, _with(idle, rereads=False))
    for t in ("requests", "actions", "evictions"):
        assert on.table(t).equals(off.table(t))
    assert not _induced_actions(on)


@given(runs(), policies())
def test_the_model_changes_nothing_until_it_induces_a_reread(run: PreparedRun,
                                                             policy: Policy) -> None:
    """Before the first induced re-read every request row equals the one with the model off, and
    at it (when no tier acts there) the context grows by exactly what was re-read and costs
    more."""
    on, off = replay(run, policy), replay(run, _with(policy, rereads=False))
    rq_on, rq_off = on.requests.to_pylist(), off.requests.to_pylist()
    first = next((k for k, r in enumerate(rq_on) if r["induced_rereads"]), None)
    if first is None:
        assert _without_induced_columns(on)["requests"] == _without_induced_columns(off)["requests"]
        return
    for k in range(first):
        assert rq_on[k] == {**rq_off[k], "induced_rereads": 0, "induced_tokens": 0,
                            "induced_cost_usd": 0.0}
    acted = {(a["request"], a["when"]) for t in (on, off) for a in t.actions.to_pylist()
             if a["kind"] != INDUCED_REREAD}
    if (first, "before") not in acted:
        assert rq_on[first]["truth_tokens"] - rq_off[first]["truth_tokens"] == \
            rq_on[first]["induced_tokens"] > 0
        assert rq_on[first]["cost_usd"] > rq_off[first]["cost_usd"]
