"""Induced re-reads: the agent fetching again what the policy removed, where the run needs it.

A replay keeps the recorded trajectory, so on its own evicting what the agent uses later costs
nothing.  This step makes it cost what it would have: at each request where the recorded run
depends on a block (``replay.engine.needs``) and the need is **unmet** — the block is not in
the context whole, no copy the replay re-read earlier is, the recorded run did not fetch it
again after it went (at or before the need), the recording's own context lacked it there too
(the harness's compaction had removed it: what followed is already in the log), and no head
item (a re-attached file, a re-inserted task) carries it, nor, for a read of a file, is the file
in the context whole some other way (a newer whole read of it, or the replay's re-read of it made
for another of its blocks: one re-read per file, as fidelity counts) — the replay inserts the
re-read the agent would have made: one more model call, and the block's recorded result (for a
read of a file, the file whole as known then, edits applied: ``replay.engine.refetch``) back at
the end of the context.

- The context grows (``replay.engine.induced_items``): the later triggers, the tiers, the
  overshoots and the cache respond.  The inserted call is sent with the context as it is (the
  cache reads the prefix it shares with the previous request and holds it after), so the request
  that needed the content reads that prefix and sends the re-read fresh.
- At most ``behaviour.max_rereads_per_turn`` re-reads are made in one turn; an unmet need past
  the cap is an undone ``induced_reread`` action (counted, nothing inserted).
- With ``behaviour.invited_recall: immediate``, a placeholder that asks for a re-call
  (``replay.policy.invites``) makes the agent re-read what it replaced at the next request, when
  the content is needed later; if that re-read is trimmed again before the need, it is re-read
  again: the seed's loop, bounded by the cap and counted.
- Inserted at request ``k`` before the ``before`` tiers act (the harness checks what the
  re-reads add before it sends, as it checks what arrived; a need is judged on the context the
  previous request left), recorded as actions of the tier ``behaviour`` and kind ``induced_reread``
  (``reclaimed_tokens`` negative: what was added; ``when``: ``need``, or ``invited`` for a
  placeholder's immediate re-read) and as the request's ``induced_*`` columns.

Deterministic: the order is the needs' block order, then the queue's.  Not here: the need rules
(``replay.engine.needs``), the live items and their totals (``replay.engine.induced_items``).
"""

from __future__ import annotations

import bisect

from replay.engine.context import Context
from replay.engine.fenwick import bisect_left
from replay.engine.induced_state import InduceState
from replay.engine.tiers.actions import record_action
from replay.engine.tiers.base import Env
from replay.engine.trace import INDUCED_AT_NEED, INDUCED_INVITED, INDUCED_REREAD, INDUCED_TIER
from replay.engine.truth import floored


def induce(st: InduceState, ctx: Context, env: Env, k: int) -> list[tuple[int, int]]:
    """Make the re-reads due before request ``k``; returns (true tokens of the context the
    inserted call sent, its output tokens) per call, in order."""
    turn = st.plan.turn_of[k]
    if turn != st.turn:
        st.turn, st.used = turn, 0
    calls: list[tuple[int, int]] = []
    if st.queue:
        due = [b for r, b in st.queue if r <= k]
        st.queue = [(r, b) for r, b in st.queue if r > k]
        need_requests = st.plan.need_requests
        for b in due:
            got = need_requests.get(b)
            if got is None:  # (not fetched content, or never needed)
                continue
            reqs, first = got  # (its key's: the block's own from ``first``)
            i = bisect.bisect_left(reqs, k, first)
            if i < len(reqs) and unmet(st, ctx, b, reqs[i]):
                _reread(st, ctx, env, b, calls, INDUCED_INVITED)
    for b in st.due_at(k):  # removed blocks needed here (one still in context whole is met)
        state = need_state(st, ctx, b, k)
        if state == UNMET:
            if _reread(st, ctx, env, b, calls, INDUCED_AT_NEED):
                continue  # met while the copy stays: its removal schedules the next check
            st.schedule(b, k + 1)
        elif state == MET_HERE:
            st.schedule(b, k + 1)
        # MET_WHILE_COPY: scheduled again when the copy goes; MET_FROM_NOW_ON: never again
    return calls


UNMET, MET_HERE, MET_WHILE_COPY, MET_FROM_NOW_ON = range(4)
"""What ``need_state`` finds: the need is unmet; met here (the block is in context, the
recording lacked it too, or a head item carries it: a later need may be unmet); met while the
newest re-read of the block stays in context whole; met at this need and every later one (the
recorded run fetched the content again since it went, and only a re-read — which needs an unmet
need — could change when it went)."""


def unmet(st: InduceState, ctx: Context, b: int, need: int) -> bool:
    """Whether the need of block ``b`` at request ``need`` is unmet in the context as it is."""
    return need_state(st, ctx, b, need) == UNMET


def need_state(st: InduceState, ctx: Context, b: int, need: int) -> int:
    """The need of block ``b`` at request ``need`` in the context as it is: ``UNMET`` or why it
    is met (see ``UNMET``)."""
    if ctx.lo <= b and not ctx.trimmed[b]:
        return MET_HERE  # still there, whole
    run = ctx.run
    if b < run.recorded_from[need]:
        return MET_HERE  # the recording lacked it there too: its consequence is in the log
    since = st.gone_at[b]
    i = st.copy.get(b)
    if i is not None:
        ind = ctx.induced
        if i >= ind.lo and not ind.trimmed[i]:  # Induced.live, inlined
            return MET_WHILE_COPY  # re-read earlier and still there
        gone = ind.gone_at[i]
        since = gone if gone > since else since  # noqa: FURB136 (max: see replay.engine.fold)
    got = st.plan.refetch.get(b)  # RunNeeds.of(b).refetch_requests, inlined
    if got is None:  # (not a fetched block)
        return MET_FROM_NOW_ON
    refetch, first = got  # (its key's: the block's own from ``first`` on)
    n = len(refetch)
    j = bisect_left(refetch, since, first, n)
    if j < n and refetch[j] <= need:
        return MET_FROM_NOW_ON  # the recorded run fetched it again itself
    if (ctx.head and any(h.block == b for h in ctx.head)) or file_in_context(st, ctx, b):
        return MET_HERE
    return UNMET


def file_in_context(st: InduceState, ctx: Context, b: int) -> bool:
    """Whether the file block ``b`` read is in the context whole some other way: a read of the
    whole file after ``b``, in context untrimmed, or the replay's newest re-read of the file
    (made for another of its blocks), in context whole.  An agent with the file in front of it
    does not read it again; fidelity likewise counts no re-read of a file the harness kept."""
    contents = st.plan.contents
    key = contents.key_of.get(b)
    if key is None:
        return False
    i = st.file_copy.get(key)
    if i is not None:
        ind = ctx.induced
        if i >= ind.lo and not ind.trimmed[i]:  # Induced.live, inlined
            return True
    # newest first: a trim cuts old blocks first, so the newest whole read in the context is
    # usually untrimmed and this is one bisect, not a walk over every read since ``b``
    reads, trimmed = contents.whole_reads[key], ctx.trimmed
    first = b + 1 if b + 1 > ctx.lo else ctx.lo  # noqa: FURB136 (max: see replay.engine.fold)
    j = bisect_left(reads, ctx.hi, 0, len(reads)) - 1
    while j >= 0 and reads[j] >= first:
        if not trimmed[reads[j]]:
            return True
        j -= 1
    return False


def _reread(st: InduceState, ctx: Context, env: Env, b: int, calls: list[tuple[int, int]],
            when: str) -> bool:
    """Insert one re-read of ``b`` at the end of the context (or count it, past the cap);
    returns whether it was inserted.  (``record_action``'s values by position, as
    ``apply_trims`` passes them: tier, kind, trigger, threshold, n_blocks, first / last message,
    reclaimed est / truth, invalidated, min_reclaim, protect_first_msg, undone, failed,
    summary_tokens, recorded, induced, when, size_estimate.)"""
    trigger = env.fixed_est + ctx.est()
    m = ctx.run.msg[b]
    if st.used >= st.cap:
        record_action(env, ctx, INDUCED_TIER, INDUCED_REREAD, trigger, 0, 0, m, m, 0, 0, 0, 0,
                      None, True, False, 0, False, True, when)
        return False
    st.used += 1
    sent = floored(env.fixed_truth, ctx.truth(), env.truth_floor)
    call_size, result, added_est, added_truth, estimate = _sizes(st, ctx, b)
    i = ctx.induced.add(ctx.hi - 1, b, call_size, result)
    st.copy[b] = i
    key = st.plan.contents.key_of.get(b)
    if key is not None:
        st.file_copy[key] = i
    calls.append((sent, call_size[1] - ctx.msg_overhead))
    record_action(env, ctx, INDUCED_TIER, INDUCED_REREAD, trigger, 0, 1, m, m, -added_est,
                  -added_truth, 0, 0, None, False, False, 0, False, True, when, estimate)
    return True


_Sizes = tuple[tuple[int, int, int], tuple[int, int, int], int, int, str]


def _sizes(st: InduceState, ctx: Context, b: int) -> _Sizes:
    """What a re-read of ``b`` made now adds: its call's and its result's (est, truth, bytes),
    message overheads included, their est and truth together, and why the size is an estimate
    (``FileContents.estimate``; "" exact).  It depends on the run, its counts and the version of
    ``b``'s file the re-read returns (``replay.engine.refetch``: the file's content events before
    ``hi``) only: memoised per run and counts, so every policy and sweep setting replaying the
    run shares it."""
    memo = st.sizes
    if memo is None:
        # the count lists by identity (held by the table, so an identity is never reused while
        # it lives), as PreparedRun.sized keys its table
        memo = st.sizes = ctx.run.memo(("reread_sizes", id(ctx.est_of), id(ctx.truth_of),
                                        ctx.msg_overhead))
        memo.setdefault(None, (ctx.est_of, ctx.truth_of))
    contents, hi = st.plan.contents, ctx.hi
    key = contents.key_of.get(b)
    version = 0
    if key is not None:
        events = contents.events[key]
        version = bisect_left(events, hi, 0, len(events))
    got: _Sizes | None = memo.get((b, version))
    if got is None:
        run, ov = ctx.run, ctx.msg_overhead
        call = run.call_of[b]
        if call >= 0:
            call_size = (ctx.est_of[call] + ov, ctx.truth_of[call] + ov, run.n_bytes[call])
        else:
            call_size = (ov, ov, 0)
        src = st.content(run, b, hi)
        blk = src.block
        result = (src.scaled(run, ctx.est_of[blk]) + ov, src.scaled(run, ctx.truth_of[blk]) + ov,
                  src.scaled(run, run.n_bytes[blk]))
        got = memo[b, version] = (call_size, result, call_size[0] + result[0],
                                  call_size[1] + result[1], contents.estimate(b, hi))
    return got
