"""One replay standing for settings of another token protection (``replay.engine.share``,
``replay.engine.reach.same_stop_tokens``): only when every trim pass starts its protected range
where it did."""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.engine.probe import NO_LIMIT, Probe
from replay.engine.reach import block_reaching_est, same_stop_tokens
from replay.engine.share import Shapes, same_trace
from replay.policy import Policy, Protect, Trigger, Trim, load_policy, replace_path
from tests.replay.engine.share_checks import columns, sharing_on_samples, trim_and_cut
from tests.strategies import policies, runs


def _stop(ctx: Context, other: int, tokens: int) -> int:
    """A trim pass's start of its protected range (``trim.act``): the token protection's
    message start, the other protections' start ``other``, never before ``lo``."""
    reach = ctx.message_start_at_or_after(block_reaching_est(ctx, tokens))
    return max(ctx.lo, min(other, reach))


@given(runs(), st.data())
def test_the_tokens_giving_the_same_start_are_exactly_the_range(run: PreparedRun,
                                                                 data: Any) -> None:
    """After random trims and cuts, for a token protection and another protection's start
    (before ``lo`` too, or ``hi``: none), ``same_stop_tokens`` is the range of token
    protections giving that start: checked at every size where the start can change (the
    tokens from each block on, one less, one more) and at the range's ends and past them.
    The tokens from each block on (``Context.blocks_est_from``) are the blocks' current sizes
    summed."""
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, data.draw(st.integers(0, 5)))
    ctx.hi = data.draw(st.integers(1, run.n_blocks))
    for _ in range(data.draw(st.integers(0, 2))):
        trim_and_cut(data, ctx, tokens, 6)
    if ctx.hi <= ctx.lo:
        return
    sizes = [sum(ctx.cur_est[b:ctx.hi]) for b in range(ctx.lo, ctx.hi + 1)]
    assert [ctx.blocks_est_from(b) for b in range(ctx.lo, ctx.hi + 1)] == sizes
    with patch("replay.engine.context._SHORT_RANGE", 2):  # the trim tree's path
        assert [ctx.blocks_est_from(b) for b in range(ctx.lo, ctx.hi + 1)] == sizes
    other = data.draw(st.sampled_from([ctx.hi, data.draw(st.integers(0, ctx.hi))]))
    given_tokens = data.draw(st.integers(1, sizes[0] + 10))
    stop = _stop(ctx, other, given_tokens)
    start = ctx.message_start_at_or_after(block_reaching_est(ctx, given_tokens))
    low, high = same_stop_tokens(ctx, other, start)
    assert low <= given_tokens <= high
    probes = {t for s in sizes for t in (s - 1, s, s + 1)} | {low - 1, low, high, high + 1}
    for t in sorted(p for p in probes if 0 < p < NO_LIMIT):
        assert (low <= t <= high) == (_stop(ctx, other, t) == stop), (t, low, high, other)


@st.composite
def protected_policies(draw: Any) -> Policy:
    """A random policy whose first tier trims with a token protection (by tokens or by a
    fraction of the window), and sometimes other protections besides."""
    policy = draw(policies())
    trim = next((t for t in policy.tiers if isinstance(t, Trim)), None)
    rest = tuple(t for t in policy.tiers if t is not trim)
    if trim is None:
        trim = Trim(name="t1", trigger=Trigger(every_request=True))
    protect = Protect(tokens=draw(st.sampled_from([0, 200, 500, 2000])),
                      frac=draw(st.sampled_from([0.0, 0.05, 0.3])),
                      messages=draw(st.sampled_from([0, 0, 4])),
                      tool_results=draw(st.sampled_from([0, 0, 2])),
                      tool_result_tokens=draw(st.sampled_from([0, 0, 800])),
                      newest=draw(st.booleans()))
    if not protect.tokens and not protect.frac:
        protect = dataclasses.replace(protect, tokens=300)
    return dataclasses.replace(policy, tiers=(dataclasses.replace(trim, protect=protect), *rest))


def _with_tokens(policy: Policy, tokens: int, frac: float) -> Policy:
    trim = policy.tiers[0]
    assert isinstance(trim, Trim)
    protect = dataclasses.replace(trim.protect, tokens=tokens, frac=frac)
    return dataclasses.replace(policy, tiers=(dataclasses.replace(trim, protect=protect),
                                              *policy.tiers[1:]))


@given(runs(), protected_policies(), st.data())
def test_a_replay_standing_for_another_token_protection_is_its_replay(
        run: PreparedRun, policy: Policy, data: st.DataObject) -> None:
    """Whenever ``same_trace`` says the replay of another token protection (by tokens or by a
    fraction, drawn at the recorded range's ends and just past them too) repeats this one,
    replaying it gives the same tables, every column; the probe changes nothing."""
    probe = Probe()
    trace = replay(run, policy, probe=probe)
    assert columns(trace) == columns(replay(run, policy))
    got = probe.protect.get(id(policy.tiers[0]), [0, NO_LIMIT])
    ends = [t for t in (got[0] - 1, got[0], got[1], got[1] + 1) if 0 < t < 100_000]
    tokens = data.draw(st.sampled_from([*ends, data.draw(st.integers(0, 20_000))]))
    frac = data.draw(st.sampled_from([0.0, 0.0, data.draw(st.floats(0.0, 0.6))]))
    other = _with_tokens(policy, tokens, frac)
    same = same_trace(policy, probe, other)
    assert same_trace(policy, probe, other, Shapes()) == same
    if same:
        assert columns(replay(run, other)) == columns(trace)


def test_only_the_token_protection_may_differ_and_both_must_be_on() -> None:
    """A token protection inside the recorded range shares; one outside, none on either side,
    or any other field of the trim tier changed does not."""
    base = load_policy("two-tier-corrected")
    usable = base.usable_tokens
    probe = Probe()
    probe.protect[id(base.tiers[0])] = [30000, 40000]
    inside = replace_path(base, "tiers.0.protect.frac", 35000 / usable)
    assert same_trace(base, probe, inside)
    assert same_trace(base, probe, _with_tokens(base, 40000, 0.0), Shapes())
    assert not same_trace(base, probe, _with_tokens(base, 40001, 0.0))
    assert not same_trace(base, probe, _with_tokens(base, 29999, 0.0), Shapes())
    assert not same_trace(base, probe, _with_tokens(base, 0, 0.0))
    assert not same_trace(base, probe, replace_path(inside, "tiers.0.min_chars", 2001))
    assert not same_trace(base, probe, replace_path(inside, "tiers.0.protect.messages", 3))
    none = _with_tokens(base, 0, 0.0)
    assert not same_trace(none, Probe(), _with_tokens(base, 35000, 0.0))
    assert same_trace(base, Probe(), _with_tokens(base, 7, 0.0))  # no pass measured one


def test_sharing_protected_fractions_on_the_samples_is_exact_and_happens(
        sample_corpus: Any) -> None:
    """Over some real samples, protected fractions of the corrected two-tier preset: every
    setting another's replay stands for replays to the same tables, and some share."""
    base = load_policy("two-tier-corrected")
    grid = [replace_path(base, "tiers.0.protect.frac", f) for f in (0.05, 0.1, 0.15, 0.3, 0.5)]
    shared, _ = sharing_on_samples(sample_corpus, sample_corpus.replayable()[:8], grid,
                                   keep_every_replay=True)
    assert shared > 0
