"""Summarise: replace old messages with a stub summary and keep a verbatim remainder.

Where the log recorded a compaction near this request (``Summarise.restore``), the recorded
summary is used instead, and the cut falls at the recorded boundary: what the harness kept and
re-attached after its summary stays verbatim, so a replay that compacts where the harness did
sends what the harness sent.

The remainder is the last ``keep_messages`` messages, shrunk (whole messages
from the oldest end) until it fits ``keep_max_frac`` of the usable window; the
split then walks back to a safe point (a tool result never loses its call), or
forward when walking back would break the cap — never past the newest output's start: a newest
output larger than the cap stays, whole, in the remainder.  The head becomes the summary
followed by the re-inserted items (task, todo list) and, with ``restore.files``, the files
read last (``replay.engine.tiers.restore``).  Elsewhere than at a recorded compaction the stub's size
follows ``restore.summary_base_tokens`` + ``restore.summary_tokens_per_summarised`` × the true
tokens it replaces when set (the model ``replay calibrate`` fits on recorded compactions), else
the fixed ``summary_tokens``.  Every ``fail_every``-th summary fails and a marked mechanical
fallback takes its place.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from replay.engine.context import Context, HeadItem
from replay.engine.prepared import token_scale
from replay.engine.summariser import Facts, fallback, summarise
from replay.engine.tiers.apply import allowed_end, apply_cut
from replay.engine.tiers.base import Env, kept_first, reinserted, reuse_recorded
from replay.engine.tiers.restore import restored_files, summary_size
from replay.engine.tiers.step import Step
from replay.engine.tiers.trigger import (
    TriggerCheck,
    fires_check,
    harness_estimate,
    threshold,
    trigger_check,
)
from replay.engine.trace import SUMMARISE, SUMMARISED
from replay.engine.truth import recorded_summary_truth, summary_count
from replay.policy import Summarise


@dataclass(slots=True, init=False)
class SummariseState:
    """One summarise tier's state in one replay (made by its own ``__init__``: compiled, a
    dataclass's generated one runs as Python; tests/replay/engine/test_own_inits.py checks the
    defaults agree)."""

    facts: Facts = field(default_factory=Facts)
    """What its summaries so far recorded (a later summary replaces the earlier one)."""
    reused: set[int] = field(default_factory=set)
    """Recorded compactions whose summary this tier has already reused."""
    check: TriggerCheck | None = None
    """The tier's trigger, read once (at its first check: ``trigger_check``; a trigger without
    a token level is checked at every request)."""

    def __init__(self) -> None:
        self.facts, self.reused, self.check = Facts(), set(), None


class SummariseStep(Step):
    """A summarise tier bound for one replay (``replay.engine.tiers.step``)."""

    def __init__(self, tier: Summarise) -> None:
        self.tier, self.state = tier, SummariseState()

    def act(self, ctx: Context, env: Env) -> None:
        """Summarise if the trigger fires (``act``)."""
        act(self.tier, self.state, ctx, env)


def act(tier: Summarise, st: SummariseState, ctx: Context, env: Env) -> None:
    """Summarise if the trigger fires and there is enough to summarise."""
    check = st.check
    if check is None:
        check = st.check = trigger_check(tier.trigger)
    if not fires_check(check, ctx, env) or ctx.n_messages <= tier.min_messages:
        return
    if tier.only_at_user_message and not at_user_message(ctx):
        return
    recorded = recorded_compaction(tier, st, ctx, env)
    if recorded is not None:
        _reuse(tier, st, *recorded, ctx, env)
        return
    split = remainder_start(ctx, env, tier.keep_messages, tier.keep_max_frac, tier.keep_events)
    if split <= ctx.lo:
        return
    run = ctx.run
    failed = bool(tier.fail_every) and (env.n_summaries + 1) % tier.fail_every == 0
    if failed:
        text = fallback(st.facts, run, ctx.lo, split, tier.fallback_tokens)
    else:
        text = summarise(st.facts, run, ctx.lo, split, summary_size(tier, ctx, split))
    env.n_summaries += 1
    summary = HeadItem("summary", text, env.est_text(text), env.truth_text(text),
                       len(text.encode("utf-8", "surrogatepass")))
    head = [*kept_first(ctx, split, tier.keep_first_messages), summary,
            *reinserted(ctx, env, split, tier.reinsert, tier.reinsert_user_tokens),
            *restored_files(tier.restore, ctx, split)]
    apply_cut(ctx, env, split, head, tier=tier.name, kind=SUMMARISE, fate=SUMMARISED,
              protect_from=ctx.newest_output_start(), trigger_tokens=harness_estimate(ctx, env),
              threshold_tokens=threshold(tier.trigger, env), summary_tokens=summary.truth,
              failed=failed)


def at_user_message(ctx: Context) -> bool:
    """Whether the newest message is the user's own text, no tool result in it (a turn's
    start)."""
    start, run = ctx.newest_output_start(), ctx.run
    if start >= ctx.hi or run.role[start] != "user":
        return False
    return all(run.kind[b] != "tool_result" for b in range(start, ctx.hi))


def recorded_compaction(tier: Summarise, st: SummariseState, ctx: Context,
                        env: Env) -> tuple[int, int] | None:
    """The recorded compaction this summary reuses and where it cuts: the first not yet reused
    whose first request after is within ``restore.recorded_within_requests`` of this one, cut
    at its boundary when that is inside the live context at a safe split.  The newest output
    may be inside the cut: Claude Code summarises the tool result it just received, and the
    log shows it.  Fired before the recorded point (the boundary not reached yet), the cut
    takes everything there is: the recorded summary then stands for a little more than the
    replay has seen, and the exchanges up to the recorded point stay verbatim after it — closer
    to the log than a stub summary.  None: no recorded compaction to reuse."""
    tol, run = tier.restore.recorded_within_requests, ctx.run
    if tol is None or not run.harness_boundary:
        return None
    end = allowed_end(ctx, ctx.hi, may_touch_newest=True)
    for c, (first, split) in enumerate(zip(run.harness_first_request, run.harness_boundary)):
        if c in st.reused or c in env.reused or first is None or abs(env.request - first) > tol:
            continue
        if split > end and env.request < first:  # early: cut all there is
            split = ctx.safe_split_at_or_before(end)
        if ctx.lo < split <= end and ctx.is_safe_split(split):
            return c, split
    return None


def _reuse(tier: Summarise, st: SummariseState, c: int, split: int, ctx: Context,
           env: Env) -> None:
    """Cut before ``split`` with recorded compaction ``c``'s summary as the head."""
    st.reused.add(c)
    reuse_recorded(env, ctx, c)
    summary = recorded_summary_item(ctx, env, c)
    env.n_summaries += 1
    apply_cut(ctx, env, split, [summary], tier=tier.name, kind=SUMMARISE,
              fate=SUMMARISED, protect_from=ctx.hi,
              trigger_tokens=harness_estimate(ctx, env),
              threshold_tokens=threshold(tier.trigger, env), summary_tokens=summary.truth,
              recorded=True)


def recorded_summary_item(ctx: Context, env: Env, c: int) -> HeadItem:
    """Recorded compaction ``c``'s summary as the head of a cut, sized as the anchor counts it."""
    run = ctx.run
    text = run.harness_summary_text[c]
    return HeadItem("recorded summary", text, _recorded_summary_est(ctx, env, c),
                    recorded_summary_truth(run, c, env.truth_counter, ctx.msg_overhead),
                    len(text.encode("utf-8", "surrogatepass")))


def _recorded_summary_est(ctx: Context, env: Env, c: int) -> int:
    """The estimate of recorded summary ``c`` from its ingest counts (a summary redacted to a
    size marker is sized from the marker, like any block), not from its text."""
    counter = env.policy.estimator
    if counter.method == "chars" or not ctx.run.harness_summary_tokens[c]:
        return env.est_text(ctx.run.harness_summary_text[c])
    return summary_count(ctx.run, c, counter.tokenizer, token_scale(counter, env.calibration))


def remainder_start(ctx: Context, env: Env, keep_messages: int, keep_max_frac: float,
                    keep_events: int | None = None) -> int:
    """The safe block where the verbatim remainder begins: never after the newest output's
    start, even when the newest output alone is over the cap.  A remainder counted in events
    moves forward to a safe point (OpenHands forgets up to the next manipulation index, so it
    keeps at most ``keep_events``); one counted in messages walks back (keeps more)."""
    run = ctx.run
    if ctx.hi <= ctx.lo:
        return ctx.lo
    newest = ctx.newest_output_start()
    last = run.ordinal[ctx.hi - 1]
    if keep_events is not None:  # the newest whole messages holding at most keep_events
        events = run.event_prefix()
        b = bisect.bisect_left(events, events[ctx.hi] - keep_events)  # first block kept whole
        first = run.ordinal[b] + (b < ctx.hi and run.msg_start[run.ordinal[b]] != b) \
            if b < ctx.hi else last + 1
        first = max(run.ordinal[ctx.lo], first)
    else:
        first = max(run.ordinal[ctx.lo], last - keep_messages + 1) if keep_messages else last + 1
    start = min(run.msg_start[first], newest)
    cap = int(keep_max_frac * env.usable)
    while start < newest and ctx.est_from(start) > cap:
        start = run.msg_start[run.ordinal[start] + 1]
    if keep_events is not None:  # OpenHands forgets up to the next safe index: keep fewer
        forward = ctx.safe_split_at_or_after(start)
        if forward <= newest:
            return forward
    split = ctx.safe_split_at_or_before(start)
    if ctx.est_from(split) > cap:
        forward = ctx.safe_split_at_or_after(start)  # walking back broke the cap: cut further
        if forward <= newest:
            split = forward
    return split
