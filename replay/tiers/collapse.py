"""Collapse: the emergency tier, when the estimate nears the harness's limit.

Fires when estimate ≥ (1 − margin) × usable window.  First, if allowed, trims
tool results inside the protected range (oldest first, until under the
threshold); then drops the oldest messages, keeping ``keep_messages`` (or only
as many as needed), optionally behind a stub summary.  Never touches the newest
output, and every cut is at a safe split point.  Checked ``before`` sending (the
corrected harness) or only ``after`` (the original one, which lets new output
through unchecked).
"""

from __future__ import annotations

from replay.context import Context, HeadItem
from replay.policy import Collapse
from replay.prepared import CAT_RESULTS
from replay.summariser import Facts, summarise
from replay.tiers.base import (
    Env,
    cut_and_record,
    invalidated_from,
    placeholder,
    record_action,
    record_eviction,
)


def limit(tier: Collapse, env: Env) -> int:
    """The estimated-token level the tier fires at."""
    return int((1.0 - tier.margin_frac) * env.usable)


def act(tier: Collapse, index: int, ctx: Context, env: Env) -> None:
    """Cut until the estimate is under the threshold, if it is over."""
    level = limit(tier, env)
    over = env.fixed_est + ctx.est()
    if over < level:
        return
    newest = ctx.newest_output_start()
    if tier.may_trim_protected:
        _trim_inside(tier, ctx, env, newest, level, over)
    if env.fixed_est + ctx.est() < level:
        return
    run = ctx.run
    if tier.keep_messages is not None:
        last = run.ordinal[ctx.hi - 1]
        start = run.msg_start[max(run.ordinal[ctx.lo], last - tier.keep_messages + 1)]
    else:
        start = ctx.lo
        while start < newest and env.fixed_est + ctx.est_from(start) >= level:
            start = run.msg_start[run.ordinal[start] + 1]
    start = min(start, newest)
    split = ctx.safe_split_at_or_before(start)
    if env.fixed_est + ctx.est_from(split) >= level or split <= ctx.lo:
        forward = ctx.safe_split_at_or_after(start)  # walking back kept too much: cut further
        if forward <= newest:
            split = forward
    if split <= ctx.lo:
        return
    head: list[HeadItem] = []
    if tier.summary_tokens:
        facts: Facts = env.state.setdefault(("facts", index), Facts())
        text = summarise(facts, run, ctx.lo, split, tier.summary_tokens)
        head = [HeadItem("summary", text, env.est_text(text), env.truth_text(text),
                         len(text.encode("utf-8", "surrogatepass")))]
    before = (ctx.est(), ctx.truth())
    first_msg, last_msg = run.msg[ctx.lo], run.msg[split - 1]
    invalidated = invalidated_from(ctx, env, None)
    n = cut_and_record(ctx, env, split, head, tier.name, "dropped")
    record_action(env, ctx, tier=tier.name, kind="collapse", trigger_tokens=over,
                  threshold_tokens=level, n_blocks=n, first_msg=first_msg, last_msg=last_msg,
                  reclaimed=(before[0] - ctx.est(), before[1] - ctx.truth()),
                  invalidated=invalidated, summary_tokens=sum(h.truth for h in head))


def _trim_inside(tier: Collapse, ctx: Context, env: Env, newest: int, level: int,
                 over: int) -> None:
    run = ctx.run
    changed, first = [], None
    got = [0, 0]
    cursor = env.state.get(("collapse_cursor", tier.name), 0)
    b = max(ctx.lo, cursor)
    for b in range(max(ctx.lo, cursor), newest):
        if env.fixed_est + ctx.est() < level:
            break
        if run.category[b] != CAT_RESULTS or ctx.trimmed[b]:
            continue
        text = placeholder(run, b, tier.placeholder)
        est = env.est_text(text)
        if est >= ctx.cur_est[b]:
            continue
        if first is None:
            first = invalidated_from(ctx, env, b)
        de, dt = ctx.set_block(b, est, env.truth_text(text), len(text.encode("utf-8", "surrogatepass")))
        got[0] += de
        got[1] += dt
        record_eviction(env, ctx, b, tier.name, "trimmed")
        changed.append(b)
    env.state[("collapse_cursor", tier.name)] = b
    if changed:
        record_action(env, ctx, tier=tier.name, kind="collapse_trim", trigger_tokens=over,
                      threshold_tokens=level, n_blocks=len(changed), first_msg=run.msg[changed[0]],
                      last_msg=run.msg[changed[-1]], reclaimed=(got[0], got[1]),
                      invalidated=first or 0)
