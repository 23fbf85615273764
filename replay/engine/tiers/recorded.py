"""Recorded compactions the replay takes from the log whatever the policy.

- **The user's ``/compact``.**  A compaction the log records with ``trigger: manual`` was the
  user's command, not the harness's policy.  With ``manual_compactions: keep`` (the default) the
  replay applies it before the first request after it: everything before the recorded boundary
  becomes the recorded summary (sized as the anchor counts it, with what the harness re-attached
  after it), as an action of the tier ``manual /compact`` (kind ``summarise``,
  ``recorded_summary`` true).  When the policy has already cut past that boundary there is
  nothing left to compact: the action is recorded as undone, so the trace says it was not
  applied.  A policy's own summarise tier that fires near a manual compaction may reuse it
  first (``replay.engine.tiers.summarise``); it is then not applied twice.
- **A log that begins after a compaction** (a session continued in a new file, whose first
  context is the summary): the replay's context starts with that recorded summary, as the
  log's first request sent it; no action (it is where the run starts, like the system prompt).
"""

from __future__ import annotations

from replay.engine.context import Context
from replay.engine.tiers.actions import record_action
from replay.engine.tiers.apply import apply_cut
from replay.engine.tiers.base import Env, reuse_recorded
from replay.engine.tiers.summarise import recorded_summary_item
from replay.engine.trace import SUMMARISE, SUMMARISED

MANUAL_TIER = "manual /compact"
"""The tier name of a replayed manual compaction in the actions table."""


def manual_at(first_requests: list[int | None], triggers: list[str]) -> dict[int, int]:
    """Request → manual compaction it follows, for the run's recorded manual compactions."""
    return {first: c for c, (first, trig) in enumerate(zip(first_requests, triggers))
            if trig == "manual" and first is not None}


def replay_manual(ctx: Context, env: Env, c: int) -> None:
    """Apply recorded manual compaction ``c`` before the current request."""
    if c in env.reused:
        return
    run = ctx.run
    split = run.harness_boundary[c]
    trigger = env.fixed_est + ctx.est()
    if not ctx.lo < split <= ctx.hi or not ctx.is_safe_split(split):
        lo = run.msg[ctx.lo] if ctx.lo < run.n_blocks else run.msg[-1]
        record_action(env, ctx, tier=MANUAL_TIER, kind=SUMMARISE, trigger_tokens=trigger,
                      threshold_tokens=0, n_blocks=0, first_msg=lo, last_msg=lo,
                      reclaimed_est_tokens=0, reclaimed_tokens=0, invalidated=0, undone=True,
                      recorded=True)
        return
    reuse_recorded(env, ctx, c)
    summary = recorded_summary_item(ctx, env, c)
    env.n_summaries += 1
    apply_cut(ctx, env, split, [summary], tier=MANUAL_TIER, kind=SUMMARISE, fate=SUMMARISED,
              protect_from=ctx.hi, trigger_tokens=trigger, threshold_tokens=0,
              summary_tokens=summary.truth, recorded=True)


def start_after_recorded(ctx: Context, env: Env) -> None:
    """Start the context with the recorded summary the log begins after, if it does."""
    run = ctx.run
    if run.harness_boundary and run.harness_boundary[0] == 0:
        env.reused.add(0)
        ctx.cut_before(0, [recorded_summary_item(ctx, env, 0)])
