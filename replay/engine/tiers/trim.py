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
from dataclasses import dataclass, field

from replay.engine.context import Context
from replay.engine.prepared import CAT_ARGS, CAT_ARGS_WRITE, CAT_RESULTS, PreparedRun
from replay.engine.tiers.apply import apply_induced_trims, apply_trims, record_undone_trims
from replay.engine.tiers.base import Env, fires, placeholder, threshold, write_note
from replay.engine.trace import TRIM
from replay.policy import Protect, Trim


@dataclass(slots=True)
class TrimState:
    """One trim tier's state in one replay (made by ``bind``; resolved at the first pass)."""

    ready: bool = False
    """Whether the constants below are resolved for this replay."""
    cursor: int = 0
    """The blocks before it were scanned."""
    next_eligible: int = 0
    """The index in ``eligible`` of the first block at or after ``cursor``."""
    pending: list[tuple[int, int, int, int]] = field(default_factory=list)
    """Candidates (block, est, truth, bytes) found but not applied, in block order."""
    results: list[int] | None = None
    """The run's tool-result blocks of the tier's ``tools`` (for protecting the newest N;
    memoised per run, found at the first pass), then ``n_blocks``: a sentinel past any ``hi``."""
    live_results: tuple[int, int] = (0, 0)
    """``results[first:end]``, the live ones at the previous pass: ``lo`` and ``hi`` only grow,
    so the next pass walks them forward from there (see ``protect_start``)."""
    gain_est: int = 0
    """Estimated tokens the pending candidates would reclaim."""
    epoch: int = -1
    cats: frozenset[int] = frozenset()
    """Byte categories this tier trims."""
    sized_result: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    """Per-run memo of each result's candidate under this policy: (block, est, truth, bytes) of
    its placeholder (the tuple a pass applies, made once)."""
    sized_write: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    minimum: int = 0
    """Estimated tokens a pass must reclaim, or it is undone."""
    threshold: int = 0
    """The trigger's level (recorded with each action)."""
    eligible: list[int] = field(default_factory=list)
    """The run's blocks this tier could ever trim (category, tool and size), in order, then
    ``n_blocks``: a sentinel past any ``hi`` (a walk forward needs no length check)."""
    protect_tokens: int = 0
    """The protected range by estimated tokens (``protect.tokens``, or its ``frac`` of the usable
    window if more; 0: none), resolved once."""
    induced_cursor: int = 0
    """The induced re-reads before this one were examined (``apply_induced_trims``)."""
    tools: frozenset[str] = frozenset()
    """The tier's ``tools``: only their results count for ``protect.tool_results``."""
    reach: tuple[int, int, int, int] = (-1, 0, 0, 0)
    """The protected range by tokens at the previous pass: (``Context.epoch``, ``hi``, its first
    block, the estimated tokens from it to ``hi`` when some of them are trimmed); see
    ``_reaching_est``."""


def min_reclaim(tier: Trim, usable_tokens: int) -> int:
    """Estimated tokens a pass must reclaim, or it is undone."""
    return tier.min_reclaim_tokens or int(tier.min_reclaim_frac * usable_tokens)


def _resolve(tier: Trim, st: TrimState, ctx: Context, env: Env) -> None:
    """Everything constant in this replay, resolved once."""
    run, counters = ctx.run, (env.policy.estimator, env.truth_counter, env.calibration)
    st.cats = _categories(tier.blocks)
    st.sized_result = run.memo(("trim_sized", tier.placeholder, *counters))
    st.sized_write = run.memo(("trim_sized", tier.write_note, *counters))
    st.minimum = min_reclaim(tier, env.usable)
    st.threshold = threshold(tier.trigger, env)
    st.eligible = _eligible(run, st.cats, tier.min_chars, tier.min_lines, tier.tools,
                            tier.exclude_tools)
    p = tier.protect
    st.protect_tokens = max(p.tokens, int(p.frac * env.usable)) if p.frac else p.tokens
    st.tools = frozenset(tier.tools)
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
    """Run one trim pass if the trigger fires."""
    if not tier.trigger.every_request and not fires(tier.trigger, ctx, env):
        return
    if not st.ready:
        _resolve(tier, st, ctx, env)
    stop = protect_start(tier.protect, ctx, st)
    begin = st.cursor if st.cursor > ctx.lo else ctx.lo  # noqa: FURB136 (see protect_start)
    if begin < stop:
        e = st.next_eligible
        if st.eligible[e] < stop:  # a block to look at: scan (the sentinel ends the list)
            e = _scan(tier, ctx, env, st, begin, stop)
        st.cursor, st.next_eligible = stop, e
    passed = _pass(tier, st, ctx, env, stop) if st.pending else False
    ind, cursor = ctx.induced, st.induced_cursor
    if ((passed or not st.minimum) and len(ind.pos) > cursor
            and (cursor < ind.lo or ind.pos[cursor] < stop) and CAT_RESULTS in st.cats):
        # an induced re-read from the tier's cursor on may lie before stop (else _trim_induced
        # would examine none): the re-reads before the protected range go with the pass, in its
        # one action (a tier with a minimum trims them only with a pass that went through)
        _trim_induced(tier, st, ctx, env, stop, into=len(env.action_rows) - 1 if passed else None)
    st.epoch = ctx.epoch


def _pass(tier: Trim, st: TrimState, ctx: Context, env: Env, stop: int) -> bool:
    """Trim the pending candidates before ``stop`` if they reclaim the minimum (one action, or
    one undone action); returns whether a pass went through (there are some: the caller
    checks)."""
    if st.epoch != ctx.epoch:  # something was cut or trimmed since: re-check
        st.pending = [p for p in st.pending if p[0] >= ctx.lo and not ctx.trimmed[p[0]]]
        st.gain_est = sum(ctx.cur_est[b] - est for b, est, _, _ in st.pending)
        st.epoch = ctx.epoch
        if not st.pending:
            return False
    pending, later = st.pending, None
    if pending[-1][0] >= stop:  # the protected range grew back over candidates found before
        cut = bisect.bisect_left(pending, (stop,))
        pending, later = pending[:cut], pending[cut:]
        if not pending:
            return False
    gain = st.gain_est if later is None else sum(ctx.cur_est[p[0]] - p[1] for p in pending)
    trigger_tokens = env.fixed_est + ctx.est()
    if gain < st.minimum:
        # by position (see below): tier, kind, protect_from, trigger, threshold, min_reclaim,
        # may_touch_newest
        record_undone_trims(ctx, env, pending[0][0], pending[-1][0], len(pending), tier.name,
                            TRIM, stop, trigger_tokens, st.threshold, st.minimum,
                            not tier.protect.newest)
        return False
    # by position (apply_trims: keyword matching costs more than a one-block trim): tier, kind,
    # protect_from, trigger, threshold, may_touch_newest, until_est, min_reclaim
    apply_trims(ctx, env, pending, tier.name, TRIM, stop, trigger_tokens, st.threshold,
                not tier.protect.newest, None, st.minimum)
    st.pending = later or []
    st.gain_est = 0 if later is None else st.gain_est - gain
    return True


def _trim_induced(tier: Trim, st: TrimState, ctx: Context, env: Env, stop: int,
                  into: int | None) -> None:
    """The induced re-reads before the protected range, trimmed as their blocks would be;
    ``into``: the action row of the pass they go with (None: their own action)."""
    run, eligible = ctx.run, st.eligible

    def sized(b: int) -> tuple[int, int, int] | None:
        i = bisect.bisect_left(eligible, b)
        if eligible[i] != b:  # (the sentinel, n_blocks, ends the list)
            return None  # the tier would not trim the block (its kind, tools or size)
        got = st.sized_result.get(b)
        if got is None:
            got = st.sized_result[b] = _sized(env, b, placeholder(run, b, tier.placeholder))
        return got[1:]

    st.induced_cursor = apply_induced_trims(
        ctx, env, sized, tier=tier.name, kind=TRIM, protect_from=stop,
        trigger_tokens=env.fixed_est + ctx.est(), threshold_tokens=st.threshold,
        min_chars=tier.min_chars, first=st.induced_cursor, into=into)


def _scan(tier: Trim, ctx: Context, env: Env, st: TrimState, begin: int, stop: int) -> int:
    """Add the blocks in ``[begin, stop)`` worth trimming to the pending candidates; returns
    the index in ``st.eligible`` of the first block at or after ``stop``."""
    run, eligible, pending = ctx.run, st.eligible, st.pending
    category, trimmed, cur_est = run.category, ctx.trimmed, ctx.cur_est
    # where the last scan stopped, unless a cut moved lo past it; then forward to stop (the
    # blocks the loop visits: a bisection would cost a dozen comparisons for the usual one)
    first = (st.next_eligible if begin == st.cursor
             else bisect.bisect_left(eligible, begin, st.next_eligible))
    end = first
    while eligible[end] < stop:  # the sentinel ends the walk
        end += 1
    for b in eligible[first:end]:
        if trimmed[b]:
            continue
        if category[b] == CAT_RESULTS:
            got = st.sized_result.get(b)
            if got is None:
                got = st.sized_result[b] = _sized(env, b, placeholder(run, b, tier.placeholder))
        else:
            got = st.sized_write.get(b)
            if got is None:
                got = st.sized_write[b] = _sized(env, b, write_note(run, b, tier.write_note))
        gain = cur_est[b] - got[1]
        if gain > 0:
            pending.append(got)
            st.gain_est += gain
    return end


def _sized(env: Env, b: int, text: str) -> tuple[int, int, int, int]:
    """Block ``b``'s candidate: (block, est, truth, bytes) of ``text``, what it becomes."""
    return (b, env.est_text(text), env.truth_text(text),
            len(text.encode("utf-8", "surrogatepass")))


@functools.cache
def _categories(blocks: tuple[str, ...]) -> frozenset[int]:
    cats = {CAT_RESULTS} if "tool_results" in blocks else set()
    if "write_args" in blocks or "call_args" in blocks:
        cats.add(CAT_ARGS_WRITE)
    if "call_args" in blocks:
        cats.add(CAT_ARGS)
    return frozenset(cats)


def protect_start(p: Protect, ctx: Context, st: TrimState) -> int:
    """First block of the protected recent range (``hi`` when nothing is protected).

    (Conditional expressions where ``min`` / ``max`` of two ints would do, FURB136 off: this
    runs at every pass of every trim tier, and a builtin min/max of two ints costs about 1,000
    instructions — an argument tuple, keyword parsing — ten times the comparison.)"""
    run, lo, hi = ctx.run, ctx.lo, ctx.hi
    start = hi
    if hi <= lo:
        return hi
    if p.messages:
        last = run.ordinal[hi - 1]
        first = max(run.ordinal[lo], last - p.messages + 1)
        start = min(start, run.msg_start[first])
    tokens = st.protect_tokens
    if tokens:
        reach = _reaching_est(ctx, tokens, st)
        if reach < hi:  # Context.message_start_at_or_after, inlined (a call a pass)
            o = run.ordinal[reach]
            reach = reach if run.msg_start[o] == reach else run.msg_start[o + 1]
        start = reach if reach < start else start  # noqa: FURB136
    if p.tool_results or p.tool_result_tokens:
        res = st.results if st.results is not None else _with_sentinel(run, st)
        # the live results res[first:end], walked forward from the previous pass (a step or
        # none a pass, where a bisection costs a dozen comparisons; the sentinel ends a walk)
        first, end = st.live_results
        while res[first] < lo:
            first += 1
        while res[end] < hi:
            end += 1
        st.live_results = (first, end)
        if first < end and p.tool_results:
            nth = end - p.tool_results
            nth = res[first if first > nth else nth]  # noqa: FURB136
            nth_start = run.msg_start[run.ordinal[nth]]
            start = nth_start if nth_start < start else start  # noqa: FURB136
        if p.tool_result_tokens:
            nth = _within_budget(ctx, res, first, end, p.tool_result_tokens)
            start = nth if nth < start else start  # noqa: FURB136
    if p.newest:  # Context.newest_output_start, inlined (hi > lo here)
        newest = run.msg_start[run.ordinal[hi - 1]]
        start = newest if newest < start else start  # noqa: FURB136
    return start if start > lo else lo  # noqa: FURB136


def _reaching_est(ctx: Context, tokens: int, st: TrimState) -> int:
    """``ctx.block_reaching_est(tokens)``, carried forward from the tier's previous pass while
    nothing was trimmed or cut since (the same ``Context.epoch``): the blocks that arrived since
    are whole, so the tokens from the previous answer on only grew by theirs and the answer only
    moves forward — a bisection of the static sums from it when nothing from it on is trimmed,
    else a walk forward over the blocks the new ones push out (where the search walks back over
    the trimmed blocks before the range at every pass)."""
    epoch, hi, b, total = st.reach
    pre = ctx.pre_est
    if epoch != ctx.epoch:
        b = ctx.block_reaching_est(tokens)
        total = 0 if b > ctx.last_trimmed else sum(ctx.cur_est[b:ctx.hi])
    elif b > ctx.last_trimmed:  # the static sums are exact from b on
        b = bisect.bisect_left(pre, pre[ctx.hi] - tokens, b, ctx.hi + 1)
    else:  # total: the tokens of [b, hi), carried (hence only where something is trimmed)
        total += pre[ctx.hi] - pre[hi]
        cur = ctx.cur_est
        while total > tokens:  # then b < hi: the blocks from b on hold tokens
            total -= cur[b]
            b += 1
        if b > ctx.last_trimmed:
            total = 0
    st.reach = (ctx.epoch, ctx.hi, b, total)
    return b


def _with_sentinel(run: PreparedRun, st: TrimState) -> list[int]:
    """``st.results`` made: the tier's results (``_results``), then ``n_blocks``."""
    st.results = [*_results(run, st.tools), run.n_blocks]
    return st.results


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
