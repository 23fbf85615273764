"""Collapse: the emergency tier, when the estimate nears the harness's limit.

Fires when estimate ≥ (1 − margin) × usable window, or on its ``trigger`` when it has one
(an event count, an idle gap, …).  First, with ``older_reads``, replaces every read of a file
but the newest of that file with a notice, the replay's induced re-reads of the file among its
reads, and stops there when that saved enough (Cline's duplicate-file-read removal).  Then, if allowed, trims
tool results inside the protected range (oldest first, until under the
threshold); then drops the oldest messages, keeping ``keep_messages`` (or only
as many as needed), or drops ``drop_frac`` of them rounded down to an even count (Cline's and
Roo Code's sliding window; the live induced re-reads' calls and results counted), optionally behind the run's first messages
(``keep_first_messages``) and a stub summary.  Never touches the newest
output, and every cut is at a safe split point.  Checked ``before`` sending (the
corrected harness) or only ``after`` (the original one, which lets new output
through unchecked).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from replay.engine.context import Context, HeadItem
from replay.engine.induced_items import MESSAGES_PER_ITEM
from replay.engine.prepared import CAT_RESULTS, PreparedRun
from replay.engine.summariser import Facts, summarise
from replay.engine.tiers.actions import n_actions
from replay.engine.tiers.apply import apply_cut, apply_induced_replacements, apply_trims
from replay.engine.tiers.base import Env, kept_first, placeholder
from replay.engine.tiers.step import Step
from replay.engine.tiers.trigger import TriggerCheck, fires_check, trigger_check
from replay.engine.tiers.trigger import threshold as trigger_threshold  # (its own: the margin's)
from replay.engine.trace import COLLAPSE, COLLAPSE_TRIM, DROPPED
from replay.policy import Collapse


@dataclass(slots=True, init=False)
class CollapseState:
    """One collapse tier's state in one replay (made by its own ``__init__``: compiled, a
    dataclass's generated one runs as Python; tests/replay/engine/test_own_inits.py checks the
    defaults agree)."""

    facts: Facts = field(default_factory=Facts)
    """What its stub summaries so far recorded."""
    cursor: int = 0
    """Where its next trim inside the protected range resumes looking."""
    level: int = -1
    """``level_tokens`` of the tier, resolved at its first check (-1: not yet)."""
    check: TriggerCheck | None = None
    """The tier's ``trigger`` when it has one, read once (at its first check)."""
    notice: tuple[int, int, int] | None = None
    """``older_reads.notice`` sized (est, truth, bytes), at its first use."""

    def __init__(self) -> None:
        self.facts, self.cursor, self.level, self.check = Facts(), 0, -1, None
        self.notice = None


class CollapseStep(Step):
    """A collapse tier bound for one replay (``replay.engine.tiers.step``)."""

    def __init__(self, tier: Collapse) -> None:
        self.tier, self.state = tier, CollapseState()

    def act(self, ctx: Context, env: Env) -> None:
        """Cut if over the threshold (``act``)."""
        act(self.tier, self.state, ctx, env)


def threshold(tier: Collapse, env: Env) -> int:
    """The estimated-token level the tier fires at (its actions' ``threshold_tokens``): its
    trigger's when it has one (``trigger.threshold``, 0 for a trigger without a level), else
    its margin's."""
    if tier.trigger is not None:
        return trigger_threshold(tier.trigger, env)
    return level_tokens(tier, env.usable)


def level_tokens(tier: Collapse, usable_tokens: int) -> int:
    """(1 − margin) × the usable window, in whole tokens."""
    return int((1.0 - tier.margin_frac) * usable_tokens)


def act(tier: Collapse, st: CollapseState, ctx: Context, env: Env) -> None:
    """Cut until the estimate is under the threshold, if it is over."""
    level = st.level  # threshold(tier, env), constant in a replay: resolved once
    if level < 0:
        level = st.level = level_tokens(tier, env.usable)
    over = env.fixed_est + ctx.est()
    if tier.trigger is None and env.probe is not None:
        env.probe.saw(id(tier), over, over >= level)
    if tier.trigger is None:
        if over < level:
            return
    else:
        check = st.check
        if check is None:
            check = st.check = trigger_check(tier.trigger)
        if not fires_check(check, ctx, env):
            return
    newest = ctx.newest_output_start()
    if tier.older_reads is not None and _replace_older_reads(tier, st, ctx, env, newest, over):
        return
    if tier.may_trim_protected:
        _trim_inside(tier, st, ctx, env, newest, level, over)
    if tier.trigger is None and env.fixed_est + ctx.est() < level:
        return
    run = ctx.run
    # the blocks before kept_end go only to come back in front (keep_first_messages)
    kept_end = max(ctx.lo, run.msg_start[min(tier.keep_first_messages, len(run.msg_start) - 1)])
    if tier.drop_frac is not None:
        start = _dropped_to(tier.drop_frac, ctx, kept_end)
        if start <= kept_end:  # too few messages to drop an even number of them
            return
    elif tier.keep_messages is not None:
        last = run.ordinal[ctx.hi - 1]
        start = run.msg_start[max(run.ordinal[ctx.lo], last - tier.keep_messages + 1)]
    else:
        start = ctx.lo
        while start < newest and env.fixed_est + ctx.est_from(start) >= level:
            start = run.msg_start[run.ordinal[start] + 1]
    start = min(start, newest)
    split = ctx.safe_split_at_or_before(start)
    if (tier.drop_frac is None and env.fixed_est + ctx.est_from(split) >= level) \
            or split <= kept_end:
        forward = ctx.safe_split_at_or_after(start)  # walking back kept too much: cut further
        if forward <= newest:
            split = forward
    if split <= kept_end:
        return
    head = kept_first(ctx, split, tier.keep_first_messages)
    if tier.summary_tokens:
        text = summarise(st.facts, run, ctx.lo, split, tier.summary_tokens)
        head.append(HeadItem("summary", text, env.est_text(text), env.truth_text(text),
                             len(text.encode("utf-8", "surrogatepass"))))
    apply_cut(ctx, env, split, head, tier=tier.name, kind=COLLAPSE, fate=DROPPED,
              protect_from=newest, trigger_tokens=over,
              threshold_tokens=level if tier.trigger is None else threshold(tier, env),
              summary_tokens=sum(h.truth for h in head))


def _dropped_to(drop_frac: float, ctx: Context, kept_end: int) -> int:
    """Where what is kept begins when ``drop_frac`` of the live messages from ``kept_end`` on
    are dropped, oldest first, their count rounded down to an even one (Cline's
    ``getNextTruncationRange``, Roo Code's ``truncateConversation``).  The harness counts every
    message of its conversation, the live induced re-reads' too (``MESSAGES_PER_ITEM`` each,
    those following the block before ``kept_end`` or later); a cut before a message start drops
    the recorded messages before it and the re-reads following them, so what is kept begins at
    the first message start before which at least that many messages go (a re-read goes whole,
    and the re-reads following a message go with it: the cut never keeps fewer than the
    harness would drop)."""
    run = ctx.run
    if kept_end >= ctx.hi:
        return ctx.hi
    first, last = run.ordinal[kept_end], run.ordinal[ctx.hi - 1]
    ind = ctx.induced
    if not ind.n_live:
        return run.msg_start[first + int((last - first + 1) * drop_frac) // 2 * 2]
    pos, msg_start = ind.pos, run.msg_start
    i, n = ind.upto(kept_end - 1), len(ind.pos)
    drop = int((last - first + 1 + MESSAGES_PER_ITEM * (n - i)) * drop_frac) // 2 * 2
    if not drop:
        return msg_start[first]
    m, dropped = first, 0
    while dropped < drop:  # ends by last + 1: every live message is before its start
        m += 1
        cut = msg_start[m]
        dropped += 1
        while i < n and pos[i] < cut:
            dropped += MESSAGES_PER_ITEM
            i += 1
    return msg_start[m]


def _replace_older_reads(tier: Collapse, st: CollapseState, ctx: Context, env: Env, newest: int,
                         over: int) -> bool:
    """Replace every read of a file in the live context but the newest read of that file with
    ``older_reads.notice`` (reads replaced or trimmed before are not counted: Cline skips the
    messages it altered); whether that saved at least ``enough_frac`` of the live context's
    bytes (the head's and the live induced re-reads' included), so that the tier cuts nothing
    now.  A live induced re-read of a file is a read of it like any other (the agent's read, in
    the order it was made: ``_older_induced``): a recorded read older than it is replaced, and
    it is replaced when a later read of its file follows.  A read inside the newest output, or
    an induced re-read made after its start, is never replaced (the newest output is never
    touched)."""
    older_reads = tier.older_reads
    assert older_reads is not None
    run, lo, hi = ctx.run, ctx.lo, ctx.hi
    trimmed = ctx.trimmed
    newest_of: dict[str, int] = {}
    older: list[int] = []
    for b in range(lo, hi):
        p = _read_path(run, b)
        if p and not trimmed[b]:
            seen = newest_of.get(p, -1)
            if seen >= 0:
                older.append(seen)
            newest_of[p] = b
    ind = ctx.induced
    older_items = _older_induced(ctx, newest_of, older, newest) if ind.n_live else []
    older = sorted(b for b in older if b < newest)
    if not older and not older_items:
        return False
    sized = st.notice
    if sized is None:
        text = older_reads.notice
        sized = st.notice = (env.est_text(text), env.truth_text(text),
                             len(text.encode("utf-8", "surrogatepass")))
    est, truth, n_bytes = sized
    cur_bytes = ctx.cur_bytes
    total = ctx.head_n_bytes + ind.live_result_bytes + ind.live_call_bytes + sum(cur_bytes[lo:hi])
    saved = (sum(cur_bytes[b] for b in older) + sum(ind.result_bytes[i] for i in older_items)
             - n_bytes * (len(older) + len(older_items)))
    level = threshold(tier, env)
    if older:
        apply_trims(ctx, env, [(b, est, truth, n_bytes) for b in older], tier=tier.name,
                    kind=COLLAPSE_TRIM, protect_from=newest, trigger_tokens=over,
                    threshold_tokens=level)
    if older_items:  # in the action of the recorded reads replaced with them, if any
        apply_induced_replacements(ctx, env, older_items, sized, tier=tier.name,
                                   kind=COLLAPSE_TRIM, protect_from=newest, trigger_tokens=over,
                                   threshold_tokens=level,
                                   into=n_actions(env) - 1 if older else None)
    return total > 0 and saved >= older_reads.enough_frac * total


def _older_induced(ctx: Context, newest_of: dict[str, int], older: list[int],
                   newest: int) -> list[int]:
    """The live induced re-reads of a file (re-reads of a read's result: ``_read_path``) that a
    later read of the file follows, recorded or induced, ascending, those made after the newest
    output's start left out; adds to ``older`` the newest recorded read of a file (``newest_of``)
    that a live induced re-read of the file follows.  (An item follows block ``pos``: it is newer
    than the blocks up to ``pos``, older than those after; items are in the order made.)"""
    run, ind = ctx.run, ctx.induced
    pos, src, trimmed = ind.pos, ind.src, ind.trimmed
    last_of: dict[str, int] = {}
    out: list[int] = []
    for i in range(ind.lo, len(pos)):
        if trimmed[i]:
            continue
        p = _read_path(run, src[i])
        if not p:
            continue
        prev = last_of.get(p, -1)
        if prev >= 0:
            out.append(prev)
        last_of[p] = i
    for p, i in last_of.items():
        b = newest_of.get(p, -1)
        if b > pos[i]:  # a recorded read of the file after the newest re-read of it
            out.append(i)
        elif b >= 0:  # the re-read follows the newest recorded read
            older.append(b)
    return sorted(i for i in out if pos[i] < newest)


def _read_path(run: PreparedRun, b: int) -> str:
    """The file block ``b`` read: a tool result whose call reads a path ("": none)."""
    if run.op[b] == "read" and run.kind[b] == "tool_result":
        return run.path[b]
    return ""


def _trim_inside(tier: Collapse, st: CollapseState, ctx: Context, env: Env, newest: int,
                 level: int, over: int) -> None:
    """Trim tool results up to the newest output (inside the other tiers' protected ranges),
    oldest first, until the estimate is under ``level``."""
    begin = max(ctx.lo, st.cursor)
    done = apply_trims(ctx, env, _candidates(tier, ctx, env, begin, newest), tier=tier.name,
                       kind=COLLAPSE_TRIM, protect_from=newest, trigger_tokens=over,
                       threshold_tokens=level, until_est=level)
    # resume where this pass stopped: after its last trim if the estimate got under the level
    # before the newest output, else at the last block looked at
    if begin >= newest:
        st.cursor = begin
    elif done.n_blocks and done.last_block + 1 < newest and env.fixed_est + ctx.est() < level:
        st.cursor = done.last_block + 1
    else:
        st.cursor = newest - 1


def _candidates(tier: Collapse, ctx: Context, env: Env, begin: int,
                newest: int) -> Iterator[tuple[int, int, int, int]]:
    """Untrimmed tool results in ``[begin, newest)`` whose placeholder is smaller, sized lazily."""
    run = ctx.run
    for b in range(begin, newest):
        if run.category[b] != CAT_RESULTS or ctx.trimmed[b]:
            continue
        text = placeholder(run, b, tier.placeholder)
        est = env.est_text(text)
        if est < ctx.cur_est[b]:
            yield b, est, env.truth_text(text), len(text.encode("utf-8", "surrogatepass"))
