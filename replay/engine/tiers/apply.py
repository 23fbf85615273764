"""The one way a tier changes the context: ``apply_trims`` (and ``apply_pass``, its form for a
trim tier's pass: a list, every block) and ``apply_cut``.

Every tier, built-in or custom, changes the context only through these functions, which
enforce the engine's invariants and write the action row and the eviction rows:

- **no orphaned call/result**: a trim replaces a block's content (nothing is removed); a cut is
  only ever at a safe split point (``Context.is_safe_split``);
- **nothing inside the protected range**: every trimmed block and every cut lies before
  ``protect_from``, the first block of the range the calling tier protects (a collapse tier that
  may trim inside the other tiers' protected ranges passes the newest output's start);
- **the newest output is never evicted**: ``protect_from`` is capped at the newest message's first
  block, unless a trim tier explicitly trims it (``protect.newest: false``); a cut never takes it.

A violation is a bug in a tier and raises ``TierInvariantError``, which ends the replay (no trace
is made from a context that broke them); a custom tier's decision is clipped to the allowed range
before it gets here (``replay.engine.tiers.custom``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple

from replay.engine.context import Context, HeadItem
from replay.engine.tiers.actions import add_to_action, record_action
from replay.engine.tiers.base import Env, invalidated_from
from replay.engine.trace import TRIMMED
from replay.engine.truth import floored
from replay.errors import TierInvariantError  # there: mypyc cannot compile its class here

_TRIMMED: Final = TRIMMED
"""Written at every trim: compiled, a ``Final`` name is a static, an imported one a dict
lookup."""


def allowed_end(ctx: Context, protect_from: int, may_touch_newest: bool = False) -> int:
    """The first block a change may not reach: the protected range's start, capped at the newest
    output's unless the tier explicitly may touch it.  (``apply_trims`` inlines it, a call a
    trim saved: a change of the rule here is made there too.)"""
    lo, hi = ctx.lo, ctx.hi
    if may_touch_newest or hi <= lo:
        end = hi
    else:  # Context.newest_output_start, inlined
        run = ctx.run
        end = run.msg_start[run.ordinal[hi - 1]]
    # min() and max() as conditional expressions (FURB136 off): called at every trim, and a
    # builtin min/max of two ints costs about 1,000 instructions (an argument tuple, keyword
    # parsing), ten times the comparison; the same at every trim pass below and in trim.py
    end = protect_from if protect_from < end else end  # noqa: FURB136
    return end if end > lo else lo  # noqa: FURB136


Candidate = tuple[int, ...]
"""A block a trim pass replaces: (block, est, truth, bytes) of its new content.  Of any length
in its type, so the compiled engine keeps it the tuple object it is (memoised per run and held
in a tier's pending list), where a fixed-length tuple is taken apart into native values at every
read and made again at every append (400-700 instructions a candidate)."""


class Trimmed(NamedTuple):
    """What ``apply_trims`` did."""

    n_blocks: int
    last_block: int
    """The last block trimmed (-1: none)."""
    est_tokens: int
    """Estimated tokens reclaimed."""
    truth_tokens: int
    """True tokens reclaimed."""


def protect_first_msg(ctx: Context, end: int) -> int | None:
    """The first message a change could not touch (recorded with each action; None: none)."""
    return ctx.run.msg[end] if end < ctx.hi else None


def apply_trims(ctx: Context, env: Env, sized: Iterable[tuple[int, int, int, int]], tier: str,
                kind: str, protect_from: int, trigger_tokens: int, threshold_tokens: int,
                may_touch_newest: bool = False, until_est: int | None = None,
                min_reclaim_tokens: int = 0) -> Trimmed:
    """Replace each block of ``sized`` — (block, est, truth, bytes) of its new content, in
    increasing block order — and record one action and an eviction (``trimmed``) per block.

    With ``until_est``, stop before the next block once the estimate (fixed overhead included)
    is under it (``sized`` may then be a lazy iterator: what is not reached is not computed).
    No action is recorded when nothing was trimmed.  (Its arguments and those of the calls it
    makes go by position where a trim at every request passes: keyword matching costs more
    than the work.)
    """
    lo, hi, run = ctx.lo, ctx.hi, ctx.run
    # allowed_end, inlined (called at every trim: a call costs more than its few comparisons)
    end = hi if may_touch_newest or hi <= lo else run.msg_start[run.ordinal[hi - 1]]
    end = protect_from if protect_from < end else end  # noqa: FURB136
    end = end if end > lo else lo  # noqa: FURB136
    applied: list[int] = []
    prev, got_est, got_truth, invalidated = lo - 1, 0, 0, 0
    for b, est, truth, n_bytes in sized:  # (one loop for a list and a lazy iterator alike)
        if until_est is not None and env.fixed_est + ctx.est() < until_est:
            break
        if not prev < b < end:
            raise _misplaced(tier, b, ctx, end)
        if prev < lo:  # the first: the tokens before it are what it invalidates, and the
            # cache's prefix (Context.dirty_truth_before) if it is the earliest change since the
            # request
            before = ctx.truth_before(b)
            if env.prev_truth > 0:
                invalidated = env.prev_truth - (floored(env.fixed_truth, before, env.truth_floor)
                                                if env.truth_floor else env.fixed_truth + before)
                invalidated = invalidated if invalidated > 0 else 0  # noqa: FURB136 (max(0, …))
            de, dt = ctx.set_block(b, est, truth, n_bytes, before)
        else:
            de, dt = ctx.set_block(b, est, truth, n_bytes)
        got_est += de
        got_truth += dt
        applied.append(b)
        prev = b
    if prev < lo:
        return _NOTHING
    n, evictions = len(applied), env.evictions
    if n == 1:  # Evictions.add, inlined (a trim at every request)
        evictions.blocks.append(prev)
        evictions.requests.append(env.request)
        evictions.tiers.append(tier)
        evictions.fates.append(_TRIMMED)
        evictions.n += 1
    else:
        evictions.add_many(applied, env.request, tier, _TRIMMED)
    induce = env.induce
    if induce is not None and (n > 1 or prev in induce.plan.need_requests or induce.recall_tiers):
        induce.removed(applied, env.request, tier)  # (a call only when it has something to do)
    msg = run.msg
    # record_action's values by position (tier, kind, trigger, threshold, n_blocks, first_msg,
    # last_msg, reclaimed est / truth, invalidated, min_reclaim, protect_first_msg: inlined)
    record_action(env, ctx, tier, kind, trigger_tokens, threshold_tokens, n, msg[applied[0]],
                  msg[prev], got_est, got_truth, invalidated, min_reclaim_tokens,
                  msg[end] if end < hi else None)
    return _new_trimmed(Trimmed, (n, prev, got_est, got_truth))


def apply_pass(ctx: Context, env: Env, sized: list[Candidate], tier: str,
               kind: str, protect_from: int, trigger_tokens: int, threshold_tokens: int,
               may_touch_newest: bool, min_reclaim_tokens: int) -> None:
    """``apply_trims`` of every block of a list that is not empty (a trim tier's pass): the same
    checks, evictions and action, nothing returned.  Its steps are inlined (the action row too:
    ``record_action``'s, ``ACTION_VALUES`` in order, checked against it by
    tests/replay/engine/test_trace_rows.py), as a trim at every request makes this the engine's
    most frequent change and each Python call or tuple costs about as much as a dozen of its
    statements."""
    lo, hi, run = ctx.lo, ctx.hi, ctx.run
    # allowed_end, inlined
    end = hi if may_touch_newest or hi <= lo else run.msg_start[run.ordinal[hi - 1]]
    end = protect_from if protect_from < end else end  # noqa: FURB136
    end = end if end > lo else lo  # noqa: FURB136
    c = sized[0]
    first, est, truth, n_bytes = c[0], c[1], c[2], c[3]
    last, n = sized[-1][0], len(sized)
    if not lo <= first or not last < end:
        raise _misplaced(tier, first if first < lo else last, ctx, end)
    applied = None
    if n > 1:  # in block order (checked before anything changes)
        applied = [c[0] for c in sized]
        for prev, b in itertools.pairwise(applied):
            if not prev < b:
                raise _misplaced(tier, b, ctx, end)
    # the tokens before the first trimmed block: what it invalidates, and the cache's prefix
    # (Context.dirty_truth_before) if it is the earliest change since the request
    before = ctx.truth_before(first)
    invalidated = env.prev_truth - (floored(env.fixed_truth, before, env.truth_floor)
                                    if env.truth_floor else env.fixed_truth + before) \
        if env.prev_truth > 0 else 0
    invalidated = invalidated if invalidated > 0 else 0  # noqa: FURB136 (max(0, …))
    got_est, got_truth = ctx.set_block(first, est, truth, n_bytes, before)
    evictions = env.evictions
    if applied is None:  # Evictions.add, inlined (a trim at every request)
        evictions.blocks.append(first)
        evictions.requests.append(env.request)
        evictions.tiers.append(tier)
        evictions.fates.append(_TRIMMED)
        evictions.n += 1
    else:
        for c in sized[1:]:
            de, dt = ctx.set_block(c[0], c[1], c[2], c[3])
            got_est += de
            got_truth += dt
        evictions.add_many(applied, env.request, tier, _TRIMMED)
    induce = env.induce
    if induce is not None and (n > 1 or last in induce.plan.need_requests or induce.recall_tiers):
        induce.removed([first] if applied is None else applied, env.request, tier)
    msg: list[Any] = run.msg  # (ids kept as the list's objects: compiled, not re-boxed)
    # the context after it: env.fixed_truth + ctx.truth(), inlined (a call a pass)
    after = env.fixed_truth + (ctx.head_truth + ctx.pre_truth[hi] - ctx.pre_truth[lo]
                               - ctx.live_cut_truth + ctx.induced.live_truth)
    if env.truth_floor:
        after = floored(env.fixed_truth, after - env.fixed_truth, env.truth_floor)
    env.action_rows += (
        env.request, tier, kind, env.when, trigger_tokens, threshold_tokens, n, msg[first],
        msg[last], got_truth, got_est, invalidated, False, False, 0, after, False,
        min_reclaim_tokens, msg[end] if end < hi else None, False, "")


def _misplaced(tier: str, b: int, ctx: Context, end: int) -> TierInvariantError:
    return TierInvariantError(f"{tier}: trims block {b} outside the allowed range "
                              f"[{ctx.lo}, {end}) or out of order")


_NOTHING = Trimmed(0, -1, 0, 0)
_new_trimmed = tuple.__new__
"""A ``Trimmed`` from its values in field order, without NamedTuple's Python-level ``__new__``."""


def apply_induced_trims(ctx: Context, env: Env,
                        sized: Callable[[int], tuple[int, int, int] | None], *,
                        tier: str, kind: str, protect_from: int, trigger_tokens: int,
                        threshold_tokens: int, min_chars: int = 0, first: int = 0,
                        into: int | None = None) -> int:
    """Trim the induced re-reads (``replay.engine.induced``) from item ``first`` on before
    ``protect_from`` whose result is still whole and at least ``min_chars`` long, each to
    ``sized(block)`` — the (est, truth, bytes) of the placeholder of the block it re-read (None:
    the tier would not trim that block; nor is an item trimmed that its placeholder would not
    make smaller); an eviction per item and one action (``_apply_items``).  Returns one past the
    last item examined (the caller's cursor: an item examined is trimmed, or never will be by
    this tier)."""
    ind, run = ctx.induced, ctx.run
    end = allowed_end(ctx, protect_from)
    stop = ind.upto(end)
    start = ind.lo if ind.lo > first else first  # noqa: FURB136 (max: see allowed_end)
    if start >= stop:
        return start
    ov = ctx.msg_overhead
    chosen: list[tuple[int, tuple[int, int, int]]] = []
    for i in range(start, stop):
        b = ind.src[i]
        if ind.trimmed[i] or run.n_chars[b] < min_chars:
            continue
        got = sized(b)
        if got is None:
            continue
        est, truth, n_bytes = got
        if est + ov >= ind.est[i] - ind.call_est[i]:
            continue
        chosen.append((i, (est + ov, truth + ov, n_bytes)))
    if chosen:
        _apply_items(ctx, env, chosen, tier, kind, end, trigger_tokens, threshold_tokens, into)
    return stop


def apply_induced_replacements(ctx: Context, env: Env, items: list[int],
                               sized: tuple[int, int, int], *, tier: str, kind: str,
                               protect_from: int, trigger_tokens: int, threshold_tokens: int,
                               into: int | None = None) -> None:
    """Replace the results of the induced re-reads ``items`` (ascending, each live and whole,
    each before ``protect_from`` and the newest output) with a text of ``sized`` (est, truth,
    bytes), whatever their size (a collapse tier's ``older_reads`` notice, as ``apply_trims``
    replaces a recorded read with it); an eviction per item and one action (``_apply_items``).
    An item out of that range, out of order, gone or trimmed already raises
    ``TierInvariantError``."""
    ind = ctx.induced
    end = allowed_end(ctx, protect_from)
    stop, prev, ov = ind.upto(end), ind.lo - 1, ctx.msg_overhead
    for i in items:
        if not prev < i < stop or ind.trimmed[i]:
            raise TierInvariantError(f"{tier}: replaces induced re-read {i} outside the live "
                                     f"whole ones before block {end}, or out of order")
        prev = i
    if items:
        size = (sized[0] + ov, sized[1] + ov, sized[2])
        _apply_items(ctx, env, [(i, size) for i in items], tier, kind, end, trigger_tokens,
                     threshold_tokens, into)


def _apply_items(ctx: Context, env: Env, chosen: list[tuple[int, tuple[int, int, int]]],
                 tier: str, kind: str, end: int, trigger_tokens: int, threshold_tokens: int,
                 into: int | None) -> None:
    """Shrink each induced re-read of ``chosen`` — (item, the (est, truth, bytes) of its new
    result, message overhead included), in item order, checked by the caller — and record an
    eviction per item and one action (``induced``), or, with ``into``, the items join that
    action row (the pass just applied at this request: one pass, one action — its blocks, its
    reclaim, and what it invalidated counted from the earliest change of either)."""
    ind, msg, induce = ctx.induced, ctx.run.msg, env.induce
    got_est = got_truth = invalidated = 0
    lo_msg = hi_msg = -1
    for n, (i, size) in enumerate(chosen):
        b = ind.src[i]
        before = ctx.induced_truth_before(i)
        if not n and env.prev_truth > 0:
            invalidated = env.prev_truth - floored(env.fixed_truth, before, env.truth_floor)
            invalidated = invalidated if invalidated > 0 else 0  # noqa: FURB136 (max(0, …))
        de, dt = ind.shrink(i, size, env.request)
        ctx.touch_induced(i, before)
        got_est += de
        got_truth += dt
        m = msg[b]
        if lo_msg < 0 or m < lo_msg:
            lo_msg = m
        if m > hi_msg:  # noqa: PLR1730 (max: see allowed_end)
            hi_msg = m
        env.evictions.add_induced(b, env.request, tier, _TRIMMED)
        if induce is not None and (induce.recall_tiers or induce.copy.get(b) == i):
            induce.removed_copy(b, i, env.request, tier)  # (a call only when it has work)
    if into is not None:
        add_to_action(env, into, len(chosen), lo_msg, hi_msg, got_est, got_truth, invalidated,
                      floored(env.fixed_truth, ctx.truth(), env.truth_floor))
    else:
        first, last = msg[ind.src[chosen[0][0]]], msg[ind.src[chosen[-1][0]]]
        record_action(env, ctx, tier=tier, kind=kind, trigger_tokens=trigger_tokens,
                      threshold_tokens=threshold_tokens, n_blocks=len(chosen),
                      first_msg=min(first, last), last_msg=max(first, last),
                      reclaimed_est_tokens=got_est, reclaimed_tokens=got_truth,
                      invalidated=invalidated, protect_first_msg=protect_first_msg(ctx, end),
                      induced=True)


def record_undone_trims(ctx: Context, env: Env, first: int, last: int, n_blocks: int,
                        tier: str, kind: str, protect_from: int, trigger_tokens: int,
                        threshold_tokens: int, min_reclaim_tokens: int,
                        may_touch_newest: bool = False) -> None:
    """A trim pass over ``n_blocks`` blocks from ``first`` to ``last`` that reclaimed too little,
    undone in full: an action row (``undone``), nothing changed.  (Blocks as bounds, not a list:
    a tier with a minimum may hold many pending candidates and be undone at every request; for
    the same reason its calls go by position, as ``apply_trims``'s do.)"""
    msg = ctx.run.msg
    # record_action's values by position (see apply_trims), then undone
    record_action(env, ctx, tier, kind, trigger_tokens, threshold_tokens, n_blocks, msg[first],
                  msg[last], 0, 0, 0, min_reclaim_tokens,
                  protect_first_msg(ctx, allowed_end(ctx, protect_from, may_touch_newest)), True)


def apply_cut(ctx: Context, env: Env, split: int, head: list[HeadItem], *, tier: str, kind: str,
              fate: str, protect_from: int, trigger_tokens: int, threshold_tokens: int,
              summary_tokens: int = 0, failed: bool = False, recorded: bool = False) -> int:
    """Remove every block before the safe ``split`` and put ``head`` (summary, re-inserted items)
    in front; record one action and an eviction (``fate``) per removed block.  Returns the blocks
    removed.  ``summary_tokens``: true tokens of the summary in ``head`` (0: none); ``recorded``:
    that summary is the one the log recorded, cut where the harness cut — past the newest
    output too, when the log shows the harness summarised it (the one exception to "the newest
    output is never evicted": it reproduces what the harness did, not what a policy chose)."""
    end = allowed_end(ctx, protect_from, may_touch_newest=recorded)
    if not ctx.lo < split <= end or not ctx.is_safe_split(split):
        raise TierInvariantError(f"{tier}: cut before block {split} outside the allowed range "
                                 f"({ctx.lo}, {end}] or not at a safe split point")
    run = ctx.run
    est_before, truth_before = ctx.est(), ctx.truth()
    first_msg, last_msg = run.msg[ctx.lo], run.msg[split - 1]
    invalidated = invalidated_from(ctx, env, None)
    ind = ctx.induced
    if ind.n_live:  # the re-reads inserted before the split go with it
        for i in range(ind.lo, ind.upto(split)):
            env.evictions.add_induced(ind.src[i], env.request, tier, fate)
            if ind.gone_at[i] < 0:
                ind.gone_at[i] = env.request
                if env.induce is not None:
                    env.induce.copy_gone(ind.src[i], i)
    env.evictions.add_range(ctx.lo, split, env.request, tier, fate)
    if env.induce is not None:
        env.induce.removed_range(ctx.lo, split, env.request)
    n = ctx.cut_before(split, head)
    record_action(env, ctx, tier=tier, kind=kind, trigger_tokens=trigger_tokens,
                  threshold_tokens=threshold_tokens, n_blocks=n, first_msg=first_msg,
                  last_msg=last_msg,
                  reclaimed_est_tokens=est_before - ctx.est(),
                  reclaimed_tokens=truth_before - ctx.truth(),
                  invalidated=invalidated, failed=failed, summary_tokens=summary_tokens,
                  recorded=recorded, protect_first_msg=protect_first_msg(ctx, end))
    return n
