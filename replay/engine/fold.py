"""The replay engine: ``replay(run, policy) -> Trace``, a pure, deterministic fold.

For each recorded request, in order:

1. append the messages that arrived since the previous request;
2. apply a compaction the user asked for there (``replay.engine.tiers.recorded``), insert
   the re-reads the agent makes of what the policy removed and this request needs
   (``replay.engine.induced``), then let the ``before`` tiers act, lightest first (each checks
   its own trigger);
3. build the request and record it: tokens by estimate and by truth, the
   overshoot against window − reserve, the bytes of call arguments / results,
   the prefix the cache can reuse (from the earliest position changed since
   the previous request; under anchored truth corrected by the recorded cache's shortfall,
   ``replay.engine.cache_anchor``), tokens invalidated, cost;
4. let the ``after`` tiers act (they see the context as sent, not what comes next).

No clock, no I/O, no randomness: the same run and policy give the same trace.  The one
process-wide effect is performance only: the cyclic garbage collector is paused while a replay
runs and restored after (the replay makes no reference cycles).
Token counts come from ingest; running totals are incremental, so one replay
costs O(messages + requests + actions).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from replay.engine.cache import Prices, prices
from replay.engine.cache_anchor import cache_shortfalls
from replay.engine.context import Context
from replay.engine.hidden_reasoning import has_hidden_reasoning
from replay.engine.induced import induce
from replay.engine.induced_state import induce_state
from replay.engine.measured import Measured, measure
from replay.engine.prepared import Calibration, PreparedRun
from replay.engine.probe import Probe
from replay.engine.tiers import bind, gate, gated
from replay.engine.tiers import custom as custom_tier
from replay.engine.tiers.actions import action_columns
from replay.engine.tiers.base import Env, Evictions
from replay.engine.tiers.recorded import manual_at, replay_manual, start_after_recorded
from replay.engine.tiers.step import Step
from replay.engine.trace import Trace
from replay.engine.truth import TruthPlan, floored, truth_plan
from replay.errors import ReplayInputError
from replay.memory import collector_paused
from replay.policy import Custom, Policy, TokenCounter
from replay.policy.harness import largest_prompt, resolve


def replay(run: PreparedRun, policy: Policy, *, calibration: Calibration | None = None,
           allow_python: bool = False, probe: Probe | None = None) -> Trace:
    """Replay ``policy`` over ``run``.

    Args:
        run: the prepared run (``replay.engine.prepared.prepare``).
        policy: the policy to simulate.
        calibration: the run's fit of truth to recorded usage (for ``truth.method: calibrated``).
        allow_python: allow ``module:Class`` tiers to be loaded.
        probe: where the tiers' gates record what they compared (``replay.engine.probe``, for
            ``replay.engine.share``); the trace is the same with or without.

    Returns:
        The trace: one row per request, per action and per evicted block.
    """
    if run.n_requests == 0:
        raise ReplayInputError(f"run {run.run_id}: no requests to replay")
    # A replay makes many small objects and no reference cycles: the cyclic collector's
    # periodic scans would only re-walk the run's and the context's arrays, making a long run
    # pay per request for its own size.  Paused for the replay and restored once its working
    # state is gone (so the deferred collection has nothing big left to walk).
    with collector_paused():
        return _replay(run, policy, calibration, allow_python, probe)


def _replay(run: PreparedRun, policy: Policy, calibration: Calibration | None,
            allow_python: bool, probe: Probe | None = None) -> Trace:
    if policy.harness is not None:  # the harness's arithmetic for this run's version and model
        policy = resolve(policy, run.harness, run.model, largest_prompt(run.recorded_input),
                         window_tokens=run.window_tokens,
                         compact_limit_tokens=run.compact_limit_tokens).policy
    s, cache = policy.server, policy.cache
    plan = truth_plan(run, policy, calibration)
    fit = calibration.overhead_tokens if calibration is not None else 0.0
    estimator, anchored_est = policy.estimator, policy.estimator.method == "anchored"
    if anchored_est:  # the first request, with no usage reported yet, is estimated as calibrated
        estimator = _as_calibrated(run, estimator)
    fixed_est = s.fixed_overhead_tokens + (round(fit) if estimator.method == "calibrated" else 0)
    offsets, heads = plan.offsets, run.recorded_summary
    reattached = plan.reattached or [0] * len(run.harness_first_request)
    env = Env(policy=policy, calibration=calibration, action_rows=[], evictions=Evictions(),
              fixed_est=fixed_est, fixed_truth=offsets[0], truth_counter=plan.counter,
              reattached=reattached, probe=probe)
    env.hidden_reasoning = env.hidden_reasoning and has_hidden_reasoning(run)
    env.truth_floor = plan.floor_ratio
    truth_of = run.counts(plan.counter, calibration)
    ctx = Context(run, run.counts(estimator, calibration), truth_of,
                  s.message_overhead_tokens)
    # each step with its gate: below that estimate it would do nothing, and is not called (a
    # call and the step's own check saved at most requests: replay.engine.tiers.gate)
    steps = [(t, bind(t, custom_tier.load(t, allow_python=allow_python,
                                          where=f"policy {policy.name}")
                      if isinstance(t, Custom) else None), gate(t, env))
             for t in policy.tiers]
    before = [(step, level) for t, step, level in steps if t.when == "before"]
    after = [(step, level) for t, step, level in steps if t.when == "after"]
    # under a probe, the id each step's gate is recorded by: a step skipped under its gate is
    # recorded there as its own check would have (``_probed``): the estimate, not opened
    keys = {step: id(gated(t)) for t, step, _ in steps} if probe is not None else {}
    skipped: dict[Step, int] = {}
    """Under a probe, the highest estimate each step was skipped at: its first skip is recorded
    at once (the probe's gates in the order first checked, as ever), the highest once the loop
    ends (``_record_skipped``; a probe keeps the highest level a gate compared), not a record
    (a call) a skip."""
    expired = run.expired(cache.ttl_s)
    rows = Measured()
    """The requests' measured values, a list each (``_columns`` prices every request from them
    in one call)."""
    n = run.n_requests
    env.induce = st = induce_state(run, policy)
    start_after_recorded(ctx, env)
    manual = (manual_at(run.harness_first_request, run.harness_trigger)
              if policy.manual_compactions == "keep" else {})
    # (min/max of ints as conditional expressions in this loop and the helpers it calls at every
    # request, FURB136 off: a builtin min/max of two ints costs about 1,000 instructions — an
    # argument tuple, keyword parsing — ten times the comparison)
    for k, hi in enumerate(run.req_blocks):
        # 1. what arrived since the previous request
        if hi > ctx.hi:  # noqa: PLR1730
            ctx.hi = hi
        env.fixed_truth = offsets[k]
        if env.reused and heads[k] in env.reused:  # the harness's own restoration is sent too
            env.fixed_truth += reattached[heads[k]]
        # 2. the user's recorded /compact, then tiers that check before sending (reusing a
        # recorded compaction moves fixed_truth)
        env.request, env.when = k, "before"
        if manual and k in manual:
            replay_manual(ctx, env, manual[k])
        # re-reads the agent makes before this request (``replay.engine.induced``): the
        # harness checks what they add before sending, as it checks what arrived
        if st is not None:
            if k in st.due or st.queue:
                calls = induce(st, ctx, env, k)
                if calls:
                    _pay_induced(ctx, env, k, calls, expired[k])
            st.now = k + 1
        for step, level in before:
            # under its gate (Context.est, inlined) the step would return at once (0: no gate,
            # one test for a step without one)
            if level:
                est = (env.fixed_est + ctx.head_est + ctx.pre_est[ctx.hi] - ctx.pre_est[ctx.lo]
                       - ctx.live_cut_est + ctx.induced.live_est)
                if est < level:
                    if probe is not None:
                        _skip(probe, keys, skipped, step, est)
                    continue
            step.act(ctx, env)
        # 3. the request as sent
        # the request's measured values (a module function called by name, not one kept in a
        # local: compiled, that is a native call rather than a Python-level one)
        truth = measure(ctx, rows, env.fixed_est, env.fixed_truth, env.truth_floor)
        # the prefix shared with the previous request and what it invalidated: _common_prefix,
        # inlined (a call a request)
        if k:
            prev, dirty = env.prev_truth, ctx.dirty
            if dirty is None:
                common = prev if prev < truth else truth  # noqa: FURB136
                invalidated = 0
            else:
                common = env.fixed_truth + (0 if dirty == -1 else ctx.dirty_truth_before)
                if env.truth_floor:
                    common = floored(env.fixed_truth, common - env.fixed_truth, env.truth_floor)
                common = common if common < prev else prev  # noqa: FURB136
                common = common if common < truth else truth  # noqa: FURB136
                invalidated = prev - common
        else:
            common = invalidated = 0
        # the rest of the loop's values (the cache's read, the cost and the overshoot follow in
        # _columns, for all requests at once)
        rows.common.append(0 if expired[k] else common)
        rows.invalidated_tokens.append(invalidated)
        ctx.dirty = None
        env.prev_truth = truth
        if anchored_est:  # the harness now knows this request's usage: later estimates add to it
            env.fixed_est = truth - (rows.est_tokens[-1] - env.fixed_est)  # (est + fixed)
        # 4. tiers that only check after sending: their cuts apply to the next request
        if after:
            env.request, env.when = k + 1, "after"
            if k + 1 < n:  # the cut applies to the next request: judged by its truth
                env.fixed_truth = offsets[k + 1]
                if env.reused and heads[k + 1] in env.reused:
                    env.fixed_truth += reattached[heads[k + 1]]
            for step, level in after:  # (gated as the before steps are)
                if level:
                    est = (env.fixed_est + ctx.head_est + ctx.pre_est[ctx.hi]
                           - ctx.pre_est[ctx.lo] - ctx.live_cut_est + ctx.induced.live_est)
                    if est < level:
                        if probe is not None:
                            _skip(probe, keys, skipped, step, est)
                        continue
                step.act(ctx, env)
    if probe is not None:
        _record_skipped(probe, keys, skipped)
    return Trace(columns=_columns(run, policy, plan, ctx, rows, env, n))


def _skip(probe: Probe, keys: dict[Step, int], skipped: dict[Step, int], step: Step,
          est: int) -> None:
    """Note a step skipped under its gate at estimate ``est`` (the before and the after loop's
    one rule): its first skip recorded in ``probe`` at once (the probe's gates in the order
    first checked), the highest kept for ``_record_skipped``."""
    high = skipped.get(step)
    if high is None:
        probe.saw(keys[step], est, False)
    if high is None or est > high:
        skipped[step] = est


def _record_skipped(probe: Probe, keys: dict[Step, int], skipped: dict[Step, int]) -> None:
    """Record in ``probe`` the highest estimate each step was skipped at under its gate (by its
    gate's key), not opened: with its first skip, recorded when it happened, what a record of
    each skip would leave (``Probe.saw`` keeps the highest level; a skip opens nothing)."""
    for step, est in skipped.items():
        probe.saw(keys[step], est, False)


def _pay_induced(ctx: Context, env: Env, k: int, calls: list[tuple[int, int]],
                 expired: bool) -> None:
    """Record the calls inserted before request ``k``: each sends the context as it was (its
    cache reads the prefix shared with the call before it), and leaves the cache holding it.
    They are priced with the requests, in one batch (``_induced_columns``)."""
    st = env.induce
    assert st is not None
    invalidated = 0
    sents, commons, outputs = st.call_sent, st.call_common, st.call_output
    for i, (sent, output) in enumerate(calls):
        if i == 0:
            common = _common_prefix(ctx, env, k, sent)
            if ctx.dirty is not None and k > 0:
                invalidated = max(0, env.prev_truth - common)
            if expired:
                common = 0
        else:
            common = min(env.prev_truth, sent)
        sents.append(sent)
        commons.append(common)
        outputs.append(output)
        env.prev_truth = sent
    ctx.dirty = None
    st.requests.append(k)
    st.n_calls.append(len(calls))
    st.tokens.append(floored(env.fixed_truth, ctx.truth(), env.truth_floor) - calls[0][0])
    st.invalidated.append(invalidated)


def _columns(run: PreparedRun, policy: Policy, plan: TruthPlan, ctx: Context,
             rows: Measured, env: Env, n: int) -> dict[str, dict[str, list[Any]]]:
    """The trace's column lists: per-request values from the loop, the rest filled in."""
    s, cache = policy.server, policy.cache
    truths, commons, invalidated = rows.truth_tokens, rows.common, rows.invalidated_tokens
    outputs = run.outputs(plan.counter, env.calibration)
    shortfalls = (cache_shortfalls(run, plan, cache, s.message_overhead_tokens)
                  or [0] * n)
    price_all = prices(cache)
    cached, write, fresh, cost = price_all(truths, commons, outputs, shortfalls)
    over = (s.reserve_tokens if s.reserve_counts else 0) - s.window_tokens
    # max(0, …) without the builtin's call (see _replay)
    overshoot = [t + over if t + over > 0 else 0 for t in truths]  # noqa: FURB136
    pre_truth = ctx.pre_truth
    raw = [off + pre_truth[hi] for off, hi in zip(plan.offsets, _request_ends(run))]
    rereads, induced_tokens, induced_cost = _induced_columns(env, n, cost, invalidated, price_all)
    # RequestRow's columns in its order, as one display (a dict made and popped into that order
    # cost ~300 bytecodes a replay, more than a short run's requests; the order is checked by
    # tests/replay/engine/test_trace_rows.py, not at every replay: a tuple of the keys cost ~3 k
    # instructions)
    requests: dict[str, list[Any]] = {
        "run_id": [run.run_id] * n, "policy": [policy.name] * n, "request": list(range(n)),
        "ts": list(run.ts), "est_tokens": rows.est_tokens, "truth_tokens": truths, "raw_tokens": raw,
        "recorded_input_tokens": list(run.recorded_input),
        "recorded_cache_read_tokens": list(run.recorded_cache_read),
        "window_tokens": [s.window_tokens] * n, "reserve_tokens": [s.reserve_tokens] * n,
        "usable_tokens": [policy.usable_tokens] * n, "overshoot_tokens": overshoot,
        "n_messages": rows.n_messages, "n_blocks": rows.n_blocks, "bytes_args": rows.bytes_args,
        "bytes_args_write": rows.bytes_args_write, "bytes_results": rows.bytes_results,
        "bytes_other": rows.bytes_other,
        "cached_tokens": cached, "cache_write_tokens": write, "fresh_tokens": fresh,
        "invalidated_tokens": invalidated, "output_tokens": list(outputs), "cost_usd": cost,
        "truth_source": [plan.source] * n, "truth_floored": _flags(n, rows.floored),
        "induced_rereads": rereads,
        "induced_tokens": induced_tokens, "induced_cost_usd": induced_cost}
    # (the other two tables' builders give empty columns for no rows: here, compiled, rather
    # than trace.empty_columns, interpreted)
    m = env.evictions.n
    msgs, blocks, evicted_at, tiers, fates, induced = env.evictions.columns(run)
    return {"requests": requests, "actions": action_columns(env, run.run_id),
            "evictions": {  # EvictionRow's columns in its order (checked as the requests' are)
                "run_id": [run.run_id] * m, "policy": [policy.name] * m, "msg": msgs,
                "block": blocks, "request": evicted_at, "tier": tiers, "fate": fates,
                "induced": induced}}


def _induced_columns(env: Env, n: int, own_cost: list[float], inval: list[int],
                     price_all: Prices) -> tuple[list[int], list[int], list[float]]:
    """The requests' ``induced_*`` columns (re-reads, tokens, cost); the inserted calls' cost
    added to the requests' ``own_cost`` and what their first call invalidated to ``inval`` (the
    row's own saw none).  The calls are priced in one batch, each request's summed in call
    order, as they are made."""
    calls, tokens, cost = [0] * n, [0] * n, [0.0] * n
    st = env.induce
    if st is not None and st.requests:
        n_all = len(st.call_sent)
        each = price_all(st.call_sent, st.call_common, st.call_output, [0] * n_all)[3]
        at = 0
        for k, c, t, inv in zip(st.requests, st.n_calls, st.tokens, st.invalidated):
            usd = 0.0
            for x in each[at:at + c]:
                usd += x  # in call order, as the calls are made
            at += c
            calls[k], tokens[k], cost[k] = c, t, usd
            own_cost[k] += usd
            inval[k] += inv
    return calls, tokens, cost


def _as_calibrated(run: PreparedRun, estimator: TokenCounter) -> TokenCounter:
    """``estimator`` as a calibrated count, one object per run and estimator (memoised: a new
    one each replay cost a ``dataclasses.replace``, and the run's memos keyed by it an
    interpreted ``__eq__`` each)."""
    memo = run.memo("as_calibrated")
    got: TokenCounter | None = memo.get(estimator)
    if got is None:
        got = memo[estimator] = dataclasses.replace(estimator, method="calibrated")
    return got


def _request_ends(run: PreparedRun) -> list[int]:
    """One past the last block sent at each request: the running max of ``req_blocks``
    (memoised per run: a builtin max per request costs more than the rest of the column)."""
    memo = run.memo("request_ends")
    got = memo.get(None)
    if got is None:
        got = memo[None] = list(itertools.accumulate(run.req_blocks, max))
    return got


def _flags(n: int, at: list[int]) -> list[bool]:
    """``n`` flags, set at the indices ``at`` (the floored requests: usually none)."""
    flags = [False] * n
    for i in at:
        flags[i] = True
    return flags


def _common_prefix(ctx: Context, env: Env, k: int, truth: int) -> int:
    """Tokens this request shares with the previous one, from the earliest change since.
    (The replay loop inlines this for the request itself, one call a request saved: a change
    of the rule here is made there too.)"""
    if k == 0:
        return 0
    if ctx.dirty is None:
        common = env.prev_truth
    elif ctx.dirty == -1:
        common = floored(env.fixed_truth, 0, env.truth_floor)
    else:
        common = floored(env.fixed_truth, ctx.dirty_truth_before, env.truth_floor)
    # min(common, env.prev_truth, truth) without the builtin's call (see _replay)
    common = common if common < env.prev_truth else env.prev_truth  # noqa: FURB136
    return common if common < truth else truth  # noqa: FURB136
