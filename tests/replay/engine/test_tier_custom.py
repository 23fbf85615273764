"""Custom tiers, directly: their decisions go through the engine's one way of changing the
context (``replay.engine.tiers.apply``), which keeps its invariants whatever a class asks for."""

from __future__ import annotations

import pytest

from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.tiers.actions import action_rows
from replay.engine.tiers.apply import TierInvariantError, apply_cut, apply_pass, apply_trims
from replay.engine.tiers.base import Env, Evictions
from replay.engine.tiers.custom import CutBefore, TrimBlocks, View
from tests.replay.engine.tier_runs import evicted, newest_message, policy, results_of, session


class TrimEverything:
    """Asks to trim every block, the newest output and blocks outside the context included."""

    def decide(self, view: View) -> TrimBlocks:
        return TrimBlocks(tuple(range(-3, 10_000)))


class CutEverything:
    """Asks to drop every message, behind a stub summary."""

    def __init__(self, summary_tokens: int = 0) -> None:
        self.summary_tokens = summary_tokens

    def decide(self, view: View) -> CutBefore:
        return CutBefore(10**9, summary_tokens=self.summary_tokens)


def _custom(cls: str, **options: int) -> list[dict[str, object]]:
    return [{"type": "custom", "class": f"tests.replay.engine.test_tier_custom:{cls}",
             "options": options}]


def test_a_custom_trim_of_everything_leaves_the_newest_output() -> None:
    run = session([40] * 5, every_step=False)
    trace = replay(run, policy(_custom("TrimEverything")), allow_python=True)
    newest = newest_message(run, 0)
    assert evicted(run, trace, "trimmed") == [b for b in range(run.req_blocks[-1])
                                              if b not in newest]


def test_a_custom_cut_of_everything_keeps_the_newest_output_with_its_call() -> None:
    run = session([40] * 5, every_step=False)
    trace = replay(run, policy(_custom("CutEverything", summary_tokens=50)), allow_python=True)
    newest = newest_message(run, 0)[0]
    assert evicted(run, trace, "dropped") == list(range(newest - 1))
    (action,) = trace.actions.to_pylist()
    assert action["kind"] == "custom_cut"
    assert action["summary_tokens"] > 0  # the stub summary it put in front is counted


def _context(run) -> tuple[Context, Env]:  # type: ignore[no-untyped-def]
    p = policy([])
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, 0)
    ctx.hi = run.req_blocks[-1]
    return ctx, Env(policy=p, calibration=None, action_rows=[], evictions=Evictions(),
                    fixed_est=0, fixed_truth=0, truth_counter=p.truth)


def test_apply_refuses_changes_inside_the_protected_range_or_the_newest_output() -> None:
    run = session([40] * 4, every_step=False)
    ctx, env = _context(run)
    newest = newest_message(run, 0)[0]
    first, second = results_of(run)[:2]
    common = {"tier": "t", "kind": "trim", "trigger_tokens": 0, "threshold_tokens": 0}
    with pytest.raises(TierInvariantError):  # the newest output
        apply_trims(ctx, env, [(newest, 1, 1, 1)], protect_from=ctx.hi, **common)
    with pytest.raises(TierInvariantError):  # inside the tier's protected range
        apply_trims(ctx, env, [(second, 1, 1, 1)], protect_from=second, **common)
    cut = {"tier": "t", "kind": "collapse", "fate": "dropped", "trigger_tokens": 0,
           "threshold_tokens": 0}
    with pytest.raises(TierInvariantError):  # would orphan a result (cut between call and it)
        apply_cut(ctx, env, first, [], protect_from=ctx.hi, **cut)
    with pytest.raises(TierInvariantError):  # takes the newest output
        apply_cut(ctx, env, ctx.hi, [], protect_from=ctx.hi, **cut)
    assert not env.action_rows and env.evictions.n == 0 and ctx.lo == 0  # nothing changed
    assert not any(ctx.trimmed)
    assert apply_trims(ctx, env, [(first, 1, 1, 1)], protect_from=ctx.hi, **common).n_blocks == 1
    assert apply_cut(ctx, env, newest - 1, [], protect_from=ctx.hi, **cut) == newest - 1


def test_apply_refuses_trims_out_of_block_order() -> None:
    run = session([40] * 4, every_step=False)
    ctx, env = _context(run)
    first, second = results_of(run)[:2]
    with pytest.raises(TierInvariantError):
        apply_trims(ctx, env, [(second, 1, 1, 1), (first, 1, 1, 1)], tier="t", kind="trim",
                    protect_from=ctx.hi, trigger_tokens=0, threshold_tokens=0)


def test_a_pass_refuses_what_apply_trims_refuses_before_changing_anything() -> None:
    """``apply_pass`` (a trim tier's pass) keeps ``apply_trims``'s invariants: the newest output,
    the protected range, blocks before ``lo`` and out of order are refused."""
    run = session([40] * 4, every_step=False)
    ctx, env = _context(run)
    newest = newest_message(run, 0)[0]
    first, second = results_of(run)[:2]
    for sized, protect_from in (([(newest, 1, 1, 1)], ctx.hi),
                                ([(first, 1, 1, 1), (second, 1, 1, 1)], second),
                                ([(second, 1, 1, 1), (first, 1, 1, 1)], ctx.hi)):
        with pytest.raises(TierInvariantError):
            apply_pass(ctx, env, sized, "t", "trim", protect_from, 0, 0, False, 0)
    ctx.cut_before(next(b for b in range(first + 1, ctx.hi) if ctx.is_safe_split(b)), [])
    with pytest.raises(TierInvariantError):  # before lo
        apply_pass(ctx, env, [(first, 1, 1, 1)], "t", "trim", ctx.hi, 0, 0, False, 0)
    assert not env.action_rows and env.evictions.n == 0 and not any(ctx.trimmed)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_pass_changes_and_records_what_apply_trims_does(n: int) -> None:
    """The same blocks through ``apply_pass`` and ``apply_trims`` (with an earlier request
    sent, so the action counts what it invalidated): the same context, evictions and action row
    (``apply_pass`` writes its row itself)."""
    run = session([40] * 5, every_step=False)
    sized = [(b, 1, 2, 3) for b in results_of(run)[:n]]
    got = []
    for apply in ("pass", "trims"):
        ctx, env = _context(run)
        env.prev_truth, env.fixed_truth, env.request = ctx.truth() + 7, 5, 3
        if apply == "pass":
            apply_pass(ctx, env, sized, "t", "trim", ctx.hi, 11, 12, False, 13)
        else:
            apply_trims(ctx, env, sized, "t", "trim", ctx.hi, 11, 12, False, None, 13)
        got.append((ctx.cur_est, ctx.cur_truth, ctx.cur_bytes, ctx.est(), ctx.truth(),
                    ctx.dirty, ctx.dirty_truth_before, env.evictions.columns(run),
                    action_rows(env, run.run_id)))
    assert got[0] == got[1]
    assert got[0][-1][0].n_blocks == n and got[0][-1][0].invalidated_tokens > 0
