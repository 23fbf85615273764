"""Trim: replace old tool output (and completed write/edit arguments) with placeholders.

Guarantees: blocks are replaced, never removed, so no call loses its result;
the protected recent range is never touched; a pass that would reclaim less
than the minimum is undone in full (recorded as an undone action, nothing
changes).  Each block is examined once per replay: a cursor remembers how far
passes have looked, and candidates of undone passes stay pending, so the cost
over a whole run is O(blocks).
"""

from __future__ import annotations

import bisect
import functools
from typing import Any, Final

from replay.engine.context import Context
from replay.engine.fenwick import bisect_left
from replay.engine.prepared import CAT_ARGS, CAT_ARGS_WRITE, CAT_RESULTS, PreparedRun
from replay.engine.probe import Probe
from replay.engine.reach import block_reaching_est, same_stop_tokens
from replay.engine.tiers.actions import n_actions
from replay.engine.tiers.apply import (
    Candidate,
    apply_induced_trims,
    apply_pass,
    record_undone_trims,
)
from replay.engine.tiers.base import Env, placeholder, write_note
from replay.engine.tiers.step import Step
from replay.engine.tiers.trigger import fires_check, threshold, trigger_check
from replay.engine.tiers.trim_state import TrimState
from replay.engine.trace import TRIM
from replay.policy import Trim

_RESULTS: Final = CAT_RESULTS
_TRIM: Final = TRIM
"""Read at every pass: compiled, a ``Final`` name is a static, an imported one a dict lookup."""


class TrimStep(Step):
    """A trim tier bound for one replay (``replay.engine.tiers.step``)."""

    def __init__(self, tier: Trim) -> None:
        self.tier, self.state = tier, TrimState()

    def act(self, ctx: Context, env: Env) -> None:
        """One trim pass if the trigger fires (``act``)."""
        act(self.tier, self.state, ctx, env)


def min_reclaim(tier: Trim, usable_tokens: int) -> int:
    """Estimated tokens a pass must reclaim, or it is undone."""
    return tier.min_reclaim_tokens or int(tier.min_reclaim_frac * usable_tokens)


def protect_tokens(tier: Trim, usable_tokens: int) -> int:
    """The estimated tokens the tier protects: ``protect.tokens``, or its ``frac`` of the usable
    window if more (0: none)."""
    p = tier.protect
    return max(p.tokens, int(p.frac * usable_tokens)) if p.frac else p.tokens


def _resolve(tier: Trim, st: TrimState, ctx: Context, env: Env) -> None:
    """Everything constant in this replay, resolved once."""
    run, counters = ctx.run, (env.policy.estimator, env.truth_counter, env.calibration)
    st.cats = _categories(tier.blocks)
    st.sized_result = _by_block(run, run.memo(("trim_sized", tier.placeholder, *counters)))
    st.sized_write = _by_block(run, run.memo(("trim_sized", tier.write_note, *counters)))
    st.minimum = min_reclaim(tier, env.usable)
    st.threshold = threshold(tier.trigger, env)
    st.eligible = _eligible(run, st.cats, tier.min_chars, tier.min_lines, tier.tools,
                            tier.exclude_tools)
    p = tier.protect
    st.protect = (p.messages, protect_tokens(tier, env.usable), p.tool_results,
                  p.tool_result_tokens, p.newest)
    st.tools = frozenset(tier.tools)
    st.touch_newest, st.trims_results = not p.newest, CAT_RESULTS in st.cats
    st.name = tier.name
    if p.tool_results or p.tool_result_tokens:
        st.results = [*_results(run, st.tools), run.n_blocks]
    st.ready = True


def _eligible(run: PreparedRun, cats: frozenset[int], min_chars: int, min_lines: int,
              tools: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> list[int]:
    """Blocks of a trimmed category, of the named tools (a result by its call's tool) and at
    least the minimum size, then ``n_blocks`` (a sentinel; memoised per run): a scan then visits
    only these, not every block."""
    memo = run.memo(("trim_eligible", cats, min_chars, min_lines, tools, exclude))
    got = memo.get("blocks")
    if got is None:
        category, n_chars, n_lines = run.category, run.n_chars, run.n_lines
        got = [b for b in range(run.n_blocks) if category[b] in cats
               and n_chars[b] >= min_chars and n_lines[b] >= min_lines]
        if tools or exclude:
            only, never = frozenset(tools), frozenset(exclude)
            got = [b for b in got if (not only or tool_of(run, b) in only)
                   and tool_of(run, b) not in never]
        got.append(run.n_blocks)
        memo["blocks"] = got
    return got


def tool_of(run: PreparedRun, b: int) -> str:
    """The tool of block ``b`` as recorded: its own, else (a result) its call's."""
    name = run.tool[b]
    if not name and run.call_of[b] >= 0:
        name = run.tool[run.call_of[b]]
    return name


def act(tier: Trim, st: TrimState, ctx: Context, env: Env) -> None:
    """Run one trim pass if the trigger fires.

    One function for the pass's steps — where the protected range starts, the blocks that
    became candidates since the previous pass, the pass itself — as a trim at every request is
    the usual case and a Python call costs more than most of these steps; helpers only for
    what is rare (a token budget, a re-check after a change, a first sizing).  (Conditional
    expressions where ``min`` / ``max`` of two ints would do, FURB136 off: a builtin min/max
    of two ints costs about 1,000 instructions — an argument tuple, keyword parsing — ten
    times the comparison.)"""
    check = st.check
    if check is None:
        check = st.check = trigger_check(tier.trigger)
    if not check.every_request and not fires_check(check, ctx, env):
        return
    if not st.ready:  # (once it first fires: a tier that never does resolves nothing more)
        _resolve(tier, st, ctx, env)
    run, lo, hi = ctx.run, ctx.lo, ctx.hi
    # 1. stop: the first block of the protected recent range (hi when nothing is protected),
    # the oldest start of every protection set, never before lo
    stop = hi
    if hi > lo:
        messages, tokens, n_results, result_tokens, newest = st.protect
        if messages:
            first, last = run.ordinal[lo], run.ordinal[hi - 1] - messages + 1
            stop = run.msg_start[last if last > first else first]  # noqa: FURB136
        if n_results or result_tokens:
            # the live results res[first:end], walked forward from the previous pass (a step or
            # none a pass, where a bisection costs a dozen comparisons; the sentinel ends a walk)
            res = st.results
            first, end = st.live_first, st.live_end
            while res[first] < lo:
                first += 1
            while res[end] < hi:
                end += 1
            st.live_first, st.live_end = first, end
            if first < end and n_results:
                nth = end - n_results
                nth = run.msg_start[run.ordinal[res[first if first > nth else nth]]]  # noqa: FURB136
                stop = nth if nth < stop else stop  # noqa: FURB136
            if result_tokens:
                nth = _within_budget(ctx, res, first, end, result_tokens)
                stop = nth if nth < stop else stop  # noqa: FURB136
        if newest:  # Context.newest_output_start, inlined (hi > lo here)
            nth = run.msg_start[run.ordinal[hi - 1]]
            stop = nth if nth < stop else stop  # noqa: FURB136
        if tokens:  # (last: under a probe, stop is then the other protections' start)
            reach = _reaching_est(ctx, tokens, st)
            if reach < hi:  # Context.message_start_at_or_after, inlined
                o = run.ordinal[reach]
                reach = reach if run.msg_start[o] == reach else run.msg_start[o + 1]
            if env.probe is not None:
                _probe_tokens(tier, st, ctx, env.probe, stop, reach)
            stop = reach if reach < stop else stop  # noqa: FURB136
        stop = stop if stop > lo else lo  # noqa: FURB136
    # 2. the candidates among the eligible blocks in [cursor, stop): where the last pass
    # stopped (unless a cut moved lo past it), walked forward to stop (the blocks the walk visits:
    # a bisection would cost a dozen comparisons for the usual one; the sentinel ends it)
    cursor = st.cursor
    begin = cursor if cursor > lo else lo  # noqa: FURB136
    if begin < stop:
        eligible, e = st.eligible, st.next_eligible
        b = eligible[e]
        if b < stop:
            if begin != cursor:
                e = bisect_left(eligible, begin, e, len(eligible))
                b = eligible[e]
            pending, trimmed = st.pending, ctx.trimmed  # (pairs: four at once make a tuple)
            cur_est, category = ctx.cur_est, run.category
            results, writes, gain_est = st.sized_result, st.sized_write, st.gain_est
            while b < stop:
                if not trimmed[b]:
                    got = (results if category[b] == _RESULTS else writes)[b]
                    if got is None:
                        got = _candidate(tier, st, env, run, b)
                    gain = cur_est[b] - got[1]
                    if gain > 0:
                        pending.append(got)
                        gain_est += gain
                e += 1
                b = eligible[e]
            st.gain_est = gain_est
        st.cursor, st.next_eligible = stop, e
    # 3. the pass: the pending candidates before stop, trimmed if they reclaim the minimum (one
    # action), else one undone action
    passed = False
    pending = st.pending
    if pending and st.epoch != ctx.epoch:  # something was cut or trimmed since: re-check
        pending = _rechecked(st, ctx)
    if pending:
        later = None
        if pending[-1][0] >= stop:  # the protected range grew back over candidates found before
            cut = bisect.bisect_left(pending, (stop,))
            pending, later = pending[:cut], pending[cut:]
        if pending:
            gain = st.gain_est if later is None else sum(ctx.cur_est[p[0]] - p[1] for p in pending)
            # env.fixed_est + ctx.est(), inlined as the replay loop's gate has it (a call a pass)
            trigger_tokens = env.fixed_est + (ctx.head_est + ctx.pre_est[hi] - ctx.pre_est[lo]
                                              - ctx.live_cut_est + ctx.induced.live_est)
            if gain < st.minimum:
                # by position (see apply_trims): tier, kind, protect_from, trigger, threshold,
                # min_reclaim, may_touch_newest
                record_undone_trims(ctx, env, pending[0][0], pending[-1][0], len(pending),
                                    st.name, _TRIM, stop, trigger_tokens, st.threshold,
                                    st.minimum, st.touch_newest)
            else:
                # by position: tier, kind, protect_from, trigger, threshold, may_touch_newest,
                # min_reclaim
                apply_pass(ctx, env, pending, st.name, _TRIM, stop, trigger_tokens,
                           st.threshold, st.touch_newest, st.minimum)
                st.pending = later or []
                st.gain_est = 0 if later is None else st.gain_est - gain
                passed = True
    # 4. the induced re-reads before stop
    ind, cursor = ctx.induced, st.induced_cursor
    if (len(ind.pos) > cursor and (passed or not st.minimum)
            and (cursor < ind.lo or ind.pos[cursor] < stop) and st.trims_results):
        # an induced re-read from the tier's cursor on may lie before stop (else _trim_induced
        # would examine none): the re-reads before the protected range go with the pass, in its
        # one action (a tier with a minimum trims them only with a pass that went through)
        _trim_induced(tier, st, ctx, env, stop, into=n_actions(env) - 1 if passed else None)
    st.epoch = ctx.epoch


def _probe_tokens(tier: Trim, st: TrimState, ctx: Context, probe: Probe, other: int,
                  reach: int) -> None:
    """Narrow the probe's record of the token protections that give this tier's passes their
    starts (``Probe.protect``) to this pass's: ``other`` its other protections' start, ``reach``
    the token protection's (``replay.engine.reach.same_stop_tokens``)."""
    low, high = same_stop_tokens(ctx, other, reach)
    got = st.probed
    if got is None:
        got = st.probed = probe.tokens_range(id(tier))
    if low > got[0]:  # noqa: PLR1730
        got[0] = low
    if high < got[1]:  # noqa: PLR1730
        got[1] = high


def _rechecked(st: TrimState, ctx: Context) -> list[Candidate]:
    """The pending candidates still live and whole after a cut or a trim, and their gain."""
    st.pending = [p for p in st.pending if p[0] >= ctx.lo and not ctx.trimmed[p[0]]]
    gain, cur = 0, ctx.cur_est
    for p in st.pending:
        gain += cur[p[0]] - p[1]
    st.gain_est = gain
    st.epoch = ctx.epoch
    return st.pending


def _trim_induced(tier: Trim, st: TrimState, ctx: Context, env: Env, stop: int,
                  into: int | None) -> None:
    """The induced re-reads before the protected range, trimmed as their blocks would be;
    ``into``: the action row of the pass they go with (None: their own action)."""
    run, eligible = ctx.run, st.eligible

    def sized(b: int) -> tuple[int, int, int] | None:
        i = bisect_left(eligible, b, 0, len(eligible))
        if eligible[i] != b:  # (the sentinel, n_blocks, ends the list)
            return None  # the tier would not trim the block (its kind, tools or size)
        got = st.sized_result[b]
        if got is None:
            got = st.sized_result[b] = _sized(env, b, placeholder(run, b, tier.placeholder))
        return got[1], got[2], got[3]

    st.induced_cursor = apply_induced_trims(
        ctx, env, sized, tier=st.name, kind=_TRIM, protect_from=stop,
        trigger_tokens=env.fixed_est + ctx.est(), threshold_tokens=st.threshold,
        min_chars=tier.min_chars, first=st.induced_cursor, into=into)


def _candidate(tier: Trim, st: TrimState, env: Env, run: PreparedRun,
               b: int) -> Candidate:
    """Block ``b``'s candidate, sized at its first scan in this run under this policy
    (memoised: a placeholder for a result, the write note for arguments)."""
    if run.category[b] == CAT_RESULTS:
        got = st.sized_result[b] = _sized(env, b, placeholder(run, b, tier.placeholder))
    else:
        got = st.sized_write[b] = _sized(env, b, write_note(run, b, tier.write_note))
    return got


def _sized(env: Env, b: int, text: str) -> Candidate:
    """Block ``b``'s candidate: (block, est, truth, bytes) of ``text``, what it becomes."""
    return (b, env.est_text(text), env.truth_text(text),
            len(text.encode("utf-8", "surrogatepass")))


def _by_block(run: PreparedRun, memo: dict[Any, Any]) -> list[Candidate | None]:
    """The candidates of a per-run memo, by block (made at its first use: all None)."""
    got: list[Candidate | None] | None = memo.get(None)
    if got is None:
        got = memo[None] = [None] * run.n_blocks
    return got


@functools.cache
def _categories(blocks: tuple[str, ...]) -> frozenset[int]:
    cats = {CAT_RESULTS} if "tool_results" in blocks else set()
    if "write_args" in blocks or "call_args" in blocks:
        cats.add(CAT_ARGS_WRITE)
    if "call_args" in blocks:
        cats.add(CAT_ARGS)
    return frozenset(cats)


def _reaching_est(ctx: Context, tokens: int, st: TrimState) -> int:
    """``block_reaching_est(ctx, tokens)``, carried forward from the tier's previous pass while
    nothing was trimmed or cut since (the same ``Context.epoch``): the blocks that arrived since
    are whole, so the tokens from the previous answer on only grew by theirs and the answer only
    moves forward — a bisection of the static sums from it when nothing from it on is trimmed,
    else a walk forward over the blocks the new ones push out (where the search walks back over
    the trimmed blocks before the range at every pass)."""
    epoch, hi = st.reach_epoch, st.reach_hi  # (pairs: four names at once would make a tuple)
    b, total = st.reach_first, st.reach_total
    pre = ctx.pre_est
    if epoch != ctx.epoch:
        b = block_reaching_est(ctx, tokens)
        total = 0
        if b <= ctx.last_trimmed:  # (a loop, not sum() of a slice: see fenwick.bisect_left)
            cur = ctx.cur_est
            for x in range(b, ctx.hi):
                total += cur[x]
    elif b > ctx.last_trimmed:  # the static sums are exact from b on
        b = bisect_left(pre, pre[ctx.hi] - tokens, b, ctx.hi + 1)
    else:  # total: the tokens of [b, hi), carried (hence only where something is trimmed)
        total += pre[ctx.hi] - pre[hi]
        cur = ctx.cur_est
        while total > tokens:  # then b < hi: the blocks from b on hold tokens
            total -= cur[b]
            b += 1
        if b > ctx.last_trimmed:
            total = 0
    st.reach_epoch, st.reach_hi = ctx.epoch, ctx.hi
    st.reach_first, st.reach_total = b, total
    return b


def _results(run: PreparedRun, tools: frozenset[str]) -> list[int]:
    """The run's tool-result blocks, of ``tools`` only when given, in order (memoised per
    run)."""
    memo = run.memo(("trim_results", tools))
    got = memo.get("blocks")
    if got is None:
        category = run.category
        got = memo["blocks"] = [b for b in range(run.n_blocks) if category[b] == CAT_RESULTS
                                and (not tools or tool_of(run, b) in tools)]
    return got


def _within_budget(ctx: Context, results: list[int], first: int, end: int, budget: int) -> int:
    """Start of the message of the oldest live result (``results[first:end]``) in the newest run
    of results whose estimated tokens sum to at most ``budget`` (``hi`` when not even the newest
    fits)."""
    run, cur, used, start = ctx.run, ctx.cur_est, 0, ctx.hi
    for i in range(end - 1, first - 1, -1):
        b = results[i]
        used += cur[b]
        if used > budget:
            break
        start = run.msg_start[run.ordinal[b]]
    return start
