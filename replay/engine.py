"""The replay engine: ``replay(run, policy) -> Trace``, a pure, deterministic fold.

For each recorded request, in order:

1. append the messages that arrived since the previous request;
2. let the ``before`` tiers act, lightest first (each checks its own trigger);
3. build the request and record it: tokens by estimate and by truth, the
   overshoot against window − reserve, the bytes of call arguments / results,
   the prefix the cache can reuse (from the earliest position changed since
   the previous request), tokens invalidated, cost;
4. let the ``after`` tiers act (they see the context as sent, not what comes next).

No clock, no I/O, no randomness: the same run and policy give the same trace.
Token counts come from ingest; running totals are incremental, so one replay
costs O(messages + requests + actions).
"""

from __future__ import annotations

from typing import Any

from replay.cache import request_cache
from replay.context import Context
from replay.errors import ReplayInputError
from replay.policy import Custom, Policy
from replay.prepared import Calibration, PreparedRun
from replay.tiers import act
from replay.tiers import custom as custom_tier
from replay.tiers.base import Env
from replay.trace import ACTIONS, EVICTIONS, REQUESTS, Trace, empty_columns


def replay(run: PreparedRun, policy: Policy, *, calibration: Calibration | None = None,
           allow_python: bool = False) -> Trace:
    """Replay ``policy`` over ``run``.

    Args:
        run: the prepared run (``replay.prepared.prepare``).
        policy: the policy to simulate.
        calibration: the run's fit of truth to recorded usage (for ``truth.method: calibrated``).
        allow_python: allow ``module:Class`` tiers to be loaded.

    Returns:
        The trace: one row per request, per action and per evicted block.
    """
    if run.n_requests == 0:
        raise ReplayInputError(f"run {run.run_id}: no requests to replay")
    s, cache = policy.server, policy.cache
    fit = calibration.overhead_tokens if calibration is not None else 0.0
    fixed_truth = s.fixed_overhead_tokens + (round(fit) if policy.truth.method == "calibrated" else 0)
    fixed_est = s.fixed_overhead_tokens + (round(fit) if policy.estimator.method == "calibrated" else 0)
    cols = empty_columns()
    env = Env(policy=policy, calibration=calibration, action_rows=[], eviction_rows=[],
              fixed_est=fixed_est,
              fixed_truth=fixed_truth)
    truth_of = run.counts(policy.truth, calibration)
    ctx = Context(run, run.counts(policy.estimator, calibration), truth_of,
                  s.message_overhead_tokens)
    impls = {i: custom_tier.load(t, allow_python=allow_python)
             for i, t in enumerate(policy.tiers) if isinstance(t, Custom)}
    before = [(i, t) for i, t in enumerate(policy.tiers) if t.when == "before"]
    after = [(i, t) for i, t in enumerate(policy.tiers) if t.when == "after"]
    reserve_counted = s.reserve_tokens if s.reserve_counts else 0
    rows: list[tuple[Any, ...]] = []
    prev_ts: float | None = None
    window, usable, reserve = s.window_tokens, policy.usable_tokens, s.reserve_tokens
    run_id, name = run.run_id, policy.name
    for k in range(run.n_requests):
        # 1. what arrived since the previous request
        ctx.append_until(run.req_blocks[k])
        # 2. tiers that check before sending
        env.request, env.when = k, "before"
        for i, tier in before:
            act(tier, i, ctx, env, impls.get(i))
        # 3. the request as sent
        truth = fixed_truth + ctx.truth()
        common = _common_prefix(ctx, env, k, truth)
        ts_s = run.ts_s[k]
        expired = prev_ts is not None and ts_s is not None and ts_s - prev_ts > cache.ttl_s
        output = run.recorded_output[k]
        if output is None:
            out_lo, out_hi = run.req_output_blocks[k]
            output = sum(truth_of[out_lo:out_hi])
        c = request_cache(cache, truth, 0 if expired else common, output)
        args, args_write, results, other = ctx.bytes_split()
        invalidated = 0 if ctx.dirty is None or k == 0 else max(0, env.prev_truth - common)
        rows.append((
            run_id, name, k, run.ts[k], env.fixed_est + ctx.est(), truth,
            fixed_truth + ctx.raw_truth, run.recorded_input[k], run.recorded_cache_read[k],
            window, reserve, usable, max(0, truth + reserve_counted - window), ctx.n_messages,
            ctx.hi - ctx.lo + len(ctx.head), args, args_write, results, other, c.cached_tokens,
            c.cache_write_tokens, c.fresh_tokens, invalidated, output, c.cost_usd,
        ))
        ctx.dirty = None
        env.prev_truth, prev_ts = truth, (ts_s if ts_s is not None else prev_ts)
        # 4. tiers that only check after sending: their cuts apply to the next request
        env.request, env.when = k + 1, "after"
        for i, tier in after:
            act(tier, i, ctx, env, impls.get(i))
    for name, schema, table_rows in (("requests", REQUESTS, rows),
                                     ("actions", ACTIONS, env.action_rows),
                                     ("evictions", EVICTIONS, env.eviction_rows)):
        if table_rows:
            cols[name] = dict(zip(schema.names, (list(c) for c in zip(*table_rows))))
    return Trace.from_columns(cols)


def _common_prefix(ctx: Context, env: Env, k: int, truth: int) -> int:
    """Tokens this request shares with the previous one, from the earliest change since."""
    if k == 0:
        return 0
    if ctx.dirty is None:
        common = env.prev_truth
    elif ctx.dirty == -1:
        common = env.fixed_truth
    else:
        common = env.fixed_truth + ctx.truth_before(ctx.dirty)
    return min(common, env.prev_truth, truth)
