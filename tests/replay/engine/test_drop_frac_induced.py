"""Cline's ``truncate_half`` (a collapse tier's ``drop_frac``) meets the replay's induced
re-reads (``replay.engine.tiers.collapse._dropped_to``): the harness counts every message of its
conversation, so the live re-reads' calls and results count among the messages it drops a share
of, and a cut drops them with the messages they follow.

The expected cut is worked out here by walking the context in the order the agent saw it (a
recorded message at its first block, an induced re-read's call and result right after the block
it follows), counting its messages from the kept first messages on, and finding the first
message start before which at least Cline's share (rounded down to an even count) lies; the
existing safe-split rule then moves it as before (``Context.safe_split_at_or_before/after``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.tiers.base import Env, Evictions
from replay.engine.tiers.collapse import CollapseState, act
from replay.engine.trace import COLLAPSE, INDUCED_REREAD
from replay.policy import Collapse, policy_from_dict
from tests.replay.engine.test_older_reads_induced import _policy_dict as _older_reads_policy
from tests.replay.engine.test_older_reads_induced import _run as _older_reads_run
from tests.replay.engine.tier_runs import lines, prepared, start


def _policy_dict(frac: float, keep_first: int) -> dict[str, Any]:
    return {"name": "t", "server": {"window_tokens": 100_000},
            "estimator": {"method": "tokenizer"}, "truth": {"method": "tokenizer"},
            "tiers": [{"type": "collapse", "name": "half", "trigger": {"every_request": True},
                       "drop_frac": frac, "keep_first_messages": keep_first}]}


@st.composite
def _contexts(draw: Any) -> tuple[Context, list[int]]:
    """A task, then call/result steps (an assistant message with a Read call, a tool message
    with its result; some steps two calls in one message), the context cut at a drawn request,
    and induced re-reads (some trimmed already) following drawn blocks in order; and the drawn
    positions."""
    b = start()
    for n in range(draw(st.integers(2, 12))):
        calls = draw(st.integers(1, 2))
        b.message("assistant")
        for c in range(calls):
            b.tool_call(f"c{n}.{c}", "Read", {"file_path": f"src/f{n}_{c}.py"})
        b.request()
        b.message("tool")
        for c in range(calls):
            b.tool_result(f"c{n}.{c}", lines(f"r{n}", draw(st.integers(1, 20))))
    b.message("assistant")
    b.text("finished")
    b.request()
    run = prepared(b)
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, 0)
    ctx.hi = run.req_blocks[draw(st.integers(1, run.n_requests - 1))]
    results = [x for x in range(ctx.hi) if run.kind[x] == "tool_result"]
    pos = sorted(draw(st.lists(st.integers(0, ctx.hi - 1), max_size=8)))
    for p in pos:
        i = ctx.induced.add(p, draw(st.sampled_from(results)), (5, 5, 20), (30, 30, 120))
        if draw(st.booleans()) and draw(st.booleans()):  # still two messages when trimmed
            ctx.induced.shrink(i, (1, 1, 3), 0)
    return ctx, pos


def _walk(ctx: Context) -> list[float]:
    """Where each live message of the context sits, in the order the agent saw them: a recorded
    message at its first block's index, each of an induced re-read's messages (its call and its
    result) at the index of the block it follows plus a half."""
    run, ind = ctx.run, ctx.induced
    at: list[float] = []
    for b in range(ctx.lo, ctx.hi):
        if b == ctx.lo or run.ordinal[b] != run.ordinal[b - 1]:
            at.append(b)
        at += [b + 0.5, b + 0.5] * sum(1 for i in range(ind.lo, len(ind.pos)) if ind.pos[i] == b)
    return at


@settings(max_examples=120, deadline=None)
@given(_contexts(), st.sampled_from([0.25, 0.5, 0.75, 1.0]), st.integers(0, 3))
def test_drop_frac_counts_the_live_re_reads_messages(drawn: tuple[Context, list[int]],
                                                     frac: float, keep_first: int) -> None:
    ctx, pos = drawn
    run = ctx.run
    policy = policy_from_dict(_policy_dict(frac, keep_first))
    (tier,) = policy.tiers
    assert isinstance(tier, Collapse)
    env = Env(policy=policy, calibration=None, action_rows=[], evictions=Evictions(),
              fixed_est=0, fixed_truth=0, truth_counter=policy.truth)
    newest = ctx.newest_output_start()
    kept_end = run.msg_start[min(keep_first, len(run.msg_start) - 1)]
    # the messages from the kept first ones on, the re-reads following their last block included
    rest = [x for x in _walk(ctx) if x > kept_end - 1]
    assert len(rest) == (run.ordinal[ctx.hi - 1] - run.ordinal[kept_end] + 1
                         + 2 * sum(p >= kept_end - 1 for p in pos))
    drop = int(len(rest) * frac) // 2 * 2
    starts = [run.msg_start[m] for m in range(run.ordinal[kept_end] + 1,
                                              run.ordinal[ctx.hi - 1] + 2)]
    start_at = next((c for c in starts if sum(x < c for x in rest) >= drop), None) if drop else None
    split = -1
    if start_at is not None:
        # the first message start with at least Cline's count before it: one earlier has fewer
        assert start_at == starts[0] or sum(x < starts[starts.index(start_at) - 1]
                                            for x in rest) < drop
        s = min(start_at, newest)
        split = ctx.safe_split_at_or_before(s)
        if split <= kept_end:
            forward = ctx.safe_split_at_or_after(s)
            if forward <= newest:
                split = forward
    n_items = len(pos)

    act(tier, CollapseState(), ctx, env)

    if split <= kept_end:
        assert ctx.lo == 0 and env.evictions.n == 0
        return
    assert ctx.lo == split
    gone = sum(p < split for p in pos)
    assert ctx.induced.lo == gone and ctx.induced.n_live == n_items - gone
    assert len(env.evictions.induced_rows) == gone


def test_a_replayed_truncation_counts_the_live_re_read() -> None:
    """A whole replay (the run of ``test_older_reads_induced``: Cline's older-reads step replaces
    the whole read of A, the edit at request 4 needs it, the agent re-reads it: two messages,
    live), then Cline's half-truncation after the first two messages, firing once the context
    holds 15 messages: at request 6 (13 recorded ones and the re-read's two).  Of the 13 after
    the first two, 11 recorded and 2 the re-read's, 6 go: messages 2-7 (the re-read follows
    message 8); message 8 is a tool result, so the cut walks back to the call, message 7.
    Counting the recorded messages only, 4 of 11 went: the cut was before message 5."""
    run = _older_reads_run()
    tiers = [*_older_reads_policy()["tiers"],
             {"type": "collapse", "name": "half", "trigger": {"after_messages": 15},
              "drop_frac": 0.5, "keep_first_messages": 2}]
    trace = replay(run, policy_from_dict({**_older_reads_policy(), "tiers": tiers}))
    acts = trace.actions.to_pylist()
    (cut, *_) = [a for a in acts if a["kind"] == COLLAPSE]
    request = cut["request"]
    # the independent count: the recorded messages in the request's context, and the live
    # re-reads (made before it, none dropped before: this is the first cut), each two messages
    # after the message that ended the context when it was made
    last = run.msg[max(run.req_blocks[:request + 1]) - 1]
    rereads = [a["first_msg"] for a in acts if a["kind"] == INDUCED_REREAD
               and a["request"] <= request]
    after = [run.msg[max(run.req_blocks[:a["request"] + 1]) - 1]
             for a in acts if a["kind"] == INDUCED_REREAD and a["request"] <= request]
    assert (request, last, rereads, after) == (6, 12, [2], [8])
    walk = [float(m) for m in range(2, last + 1)] + [m + 0.5 for m in after for _ in (0, 1)]
    drop = int(len(walk) * 0.5) // 2 * 2
    first_start = next(m for m in range(3, last + 2) if sum(x < m for x in walk) >= drop)
    assert (len(walk), drop, first_start) == (13, 6, 8)
    split_msg = first_start - 1 if first_start % 2 == 0 else first_start  # back to a call
    assert (cut["first_msg"], cut["last_msg"]) == (0, split_msg - 1) == (0, 6)
    # the first two messages come back in front; the re-read, after message 8, stays live
    assert not [e for e in trace.evictions.to_pylist() if e["induced"] and e["fate"] == "dropped"]
