"""Where the newest range of a given size begins: ``block_reaching_est`` (a trim tier's protected
range by tokens, ``replay.engine.tiers.trim``), a search over the context's sizes; and the
other way round, which sizes give a trim pass the same start of its protected range
(``same_stop_tokens``, for ``replay.engine.share``).

Not here: the context and its totals (``replay.engine.context``).
"""

from __future__ import annotations

import bisect
import itertools

from replay.engine.context import _SHORT_RANGE, Context
from replay.engine.fenwick import bisect_left
from replay.engine.probe import NO_LIMIT


def block_reaching_est(ctx: Context, tokens_back: int) -> int:
    """The first block of the newest range holding at most ``tokens_back`` estimated tokens.

    With nothing trimmed from the block before the answer on (the usual case: trims stay
    out of protected ranges), a bisection of the static prefix sums, then at most a short
    walk back over trimmed blocks (in Python for the first 33, then summed at C speed);
    otherwise a Fenwick lifting search over current sizes, whose tree nodes are the static
    prefix sums' differences minus the trim tree's nodes.  O(log n) either way.
    """
    pre = ctx.pre_est
    b = bisect_left(pre, pre[ctx.hi] - tokens_back, ctx.lo, ctx.hi + 1)
    if not ctx.n_live_trimmed or b - 1 > ctx.last_trimmed:
        # the static sums are exact from b - 1 on: nothing there is trimmed
        return max(ctx.lo, min(b, ctx.hi))
    if ctx.last_trimmed < b <= ctx.hi:
        # exact from b on: walk back over the (trimmed, small) blocks that still fit
        total, cur, lo = pre[ctx.hi] - pre[b], ctx.cur_est, ctx.lo
        for x in range(b - 1, max(lo, b - 33) - 1, -1):
            total += cur[x]
            if total > tokens_back:
                return x + 1
        if b - 33 <= lo:
            return lo
        # a longer run of small blocks: carry on at C speed, in chunks of 64, 128, ... blocks
        end, step = b - 33, 64
        while step <= _SHORT_RANGE:
            start = max(lo, end - step)
            sums = list(itertools.accumulate(reversed(cur[start:end]), initial=total))
            k = bisect.bisect_right(sums, tokens_back)
            if k < len(sums):
                return end - k + 1
            if start == lo:
                return lo
            total, end, step = sums[-1], start, step * 2
    cut, n = ctx.trim_trees()[0], ctx.run.n_blocks
    tree = cut.tree
    target = pre[ctx.hi] - cut.prefix(ctx.hi) - tokens_back
    if target <= 0:
        return ctx.lo
    pos, rem, step = 0, target, 1 << n.bit_length()
    while step:
        nxt = pos + step
        if nxt <= n:
            node = pre[nxt] - pre[nxt - (nxt & -nxt)] - tree[nxt]
            if node < rem:
                pos, rem = nxt, rem - node
        step >>= 1
    return max(ctx.lo, min(pos + 1, ctx.hi))


def same_stop_tokens(ctx: Context, other: int, start: int) -> tuple[int, int]:
    """Every token protection ``t`` (> 0) giving a trim pass the start of its protected range
    that ``start`` gave, as ``low <= t <= high`` (``high``: ``NO_LIMIT`` when unbounded).

    A pass's start is ``max(lo, min(other, R(t)))``: ``other`` the start by its other
    protections (``hi`` when none), ``R(t)`` the first message start at or after
    ``block_reaching_est(ctx, t)`` (``hi`` when that is ``hi``; ``start`` is ``R`` of the
    pass's own ``t``).  ``R`` never grows with ``t``, and ``block_reaching_est(ctx, t) > b``
    exactly when the blocks ``[b, hi)`` hold more than ``t`` estimated tokens (``b >= lo``;
    ``Context.blocks_est_from``).  So, ``end`` being the start the pass took when ``lo`` does
    not clamp it:

    - ``start >= other`` (``end``: ``other``): any ``t`` with ``R(t) >= other``;
    - else (``end``: ``start``, a message start): ``t`` at least the tokens from ``start`` on
      (the answer there or before it), with ``R(t) >= start``;
    - ``R(t) >= end`` holds for ``t`` below the tokens from ``m`` on, ``m`` the last message
      start before ``end`` (the answer then lies past ``m``, its message start at ``end`` or
      later: none lies between); for any ``t`` when ``m < lo`` or ``end <= lo`` (clamped at
      ``lo``: every answer is at ``lo`` or later).
    """
    lo = ctx.lo
    end = start if start < other else other  # noqa: FURB136
    if end <= lo:
        return (ctx.blocks_est_from(end) if start < other else 0), NO_LIMIT
    held = ctx.blocks_est_from(end)
    low = held if start < other else 0
    run = ctx.run
    m = run.msg_start[run.ordinal[end - 1]]
    if m < lo:
        return low, NO_LIMIT
    if end - m > 32:
        return low, ctx.blocks_est_from(m) - 1
    cur = ctx.cur_est  # the tokens from m on: from end on, and the message before end's
    for x in range(m, end):
        held += cur[x]
    return low, held - 1

