"""Summarise: replace old messages with a stub summary and keep a verbatim remainder.

The remainder is the last ``keep_messages`` messages, shrunk (whole messages
from the oldest end) until it fits ``keep_max_frac`` of the usable window; the
split then walks back to a safe point (a tool result never loses its call), or
forward when walking back would break the cap.  The head becomes the summary
followed by the re-inserted items (task, todo list).  Every ``fail_every``-th
summary fails and a marked mechanical fallback takes its place.
"""

from __future__ import annotations

from replay.context import Context, HeadItem
from replay.policy import Summarise
from replay.summariser import Facts, fallback, summarise
from replay.tiers.base import (
    Env,
    cut_and_record,
    fires,
    invalidated_from,
    record_action,
    reinserted,
    threshold,
)


def act(tier: Summarise, index: int, ctx: Context, env: Env) -> None:
    """Summarise if the trigger fires and there is enough to summarise."""
    if not fires(tier.trigger, ctx, env) or ctx.n_messages <= tier.min_messages:
        return
    split = remainder_start(ctx, env, tier.keep_messages, tier.keep_max_frac)
    if split <= ctx.lo:
        return
    run = ctx.run
    facts: Facts = env.state.setdefault(("facts", index), Facts())
    failed = bool(tier.fail_every) and (env.n_summaries + 1) % tier.fail_every == 0
    if failed:
        text = fallback(facts, run, ctx.lo, split, tier.fallback_tokens)
    else:
        text = summarise(facts, run, ctx.lo, split, tier.summary_tokens)
    env.n_summaries += 1
    summary = HeadItem("summary", text, env.est_text(text), env.truth_text(text),
                       len(text.encode("utf-8", "surrogatepass")))
    head = [summary, *reinserted(ctx, env, split, tier.reinsert)]
    before = (env.fixed_est + ctx.est(), ctx.est(), ctx.truth())
    first_msg, last_msg = run.msg[ctx.lo], run.msg[split - 1]
    invalidated = invalidated_from(ctx, env, None)
    n = cut_and_record(ctx, env, split, head, tier.name, "summarised")
    record_action(env, ctx, tier=tier.name, kind="summarise", trigger_tokens=before[0],
                  threshold_tokens=threshold(tier.trigger, env), n_blocks=n,
                  first_msg=first_msg, last_msg=last_msg,
                  reclaimed=(before[1] - ctx.est(), before[2] - ctx.truth()),
                  invalidated=invalidated, failed=failed, summary_tokens=summary.truth)


def remainder_start(ctx: Context, env: Env, keep_messages: int, keep_max_frac: float) -> int:
    """The safe block where the verbatim remainder begins."""
    run = ctx.run
    if ctx.hi <= ctx.lo:
        return ctx.lo
    last = run.ordinal[ctx.hi - 1]
    first = max(run.ordinal[ctx.lo], last - keep_messages + 1) if keep_messages else last + 1
    start = run.msg_start[first]
    cap = int(keep_max_frac * env.usable)
    while start < ctx.hi and ctx.est_from(start) > cap:
        start = run.msg_start[run.ordinal[start] + 1]
    split = ctx.safe_split_at_or_before(start)
    if ctx.est_from(split) > cap:
        split = ctx.safe_split_at_or_after(start)
    return split
