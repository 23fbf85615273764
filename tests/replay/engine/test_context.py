"""The context's incremental queries against a plain recount, under random trims and cuts."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.measured import Measured, measure
from replay.engine.prepared import CAT_RESULTS, PreparedRun
from replay.engine.reach import block_reaching_est
from tests.strategies import runs


@given(runs(), st.data())
def test_queries_equal_a_recount_after_random_trims_and_cuts(run: PreparedRun, data: Any) -> None:
    """block_reaching_est, est_from, truth_before, measure and the kept cache prefix agree with sums over the blocks,
    whatever was trimmed (before, inside or after the answer) and wherever the cut is."""
    _check_against_recount(run, data)


@given(runs(), st.data(), st.sampled_from([0, 1, 4]))
def test_queries_equal_a_recount_with_short_ranges_cut_down(run: PreparedRun, data: Any,
                                                          short: int) -> None:
    """The same, with the direct sums limited to a few blocks: the trim tree's paths (what long
    contexts take) answer the same."""
    with (patch("replay.engine.context._SHORT_RANGE", short),
          patch("replay.engine.reach._SHORT_RANGE", short),
          patch("replay.engine.context._SHORT_TRUTH_RANGE", short)):
        _check_against_recount(run, data)


def _check_against_recount(run: PreparedRun, data: Any) -> None:
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, data.draw(st.integers(0, 5)))
    ctx.hi = run.n_blocks
    for _ in range(data.draw(st.integers(0, 3))):
        if ctx.lo >= ctx.hi:
            break
        ctx.dirty = None  # as the engine does after each request
        for b in data.draw(st.lists(st.integers(ctx.lo, ctx.hi - 1), max_size=6)):
            if not ctx.trimmed[b]:
                ctx.set_block(b, tokens[b] // 3, tokens[b] // 3, run.n_bytes[b] // 3)
        safe = [b for b in range(ctx.lo, ctx.hi + 1) if ctx.is_safe_split(b)]
        if data.draw(st.booleans()) and safe:
            ctx.cut_before(data.draw(st.sampled_from(safe)), [])
        if ctx.dirty is not None and ctx.dirty >= 0:  # the cache prefix kept since the change
            assert ctx.dirty_truth_before == sum(ctx.cur_truth[x] for x in range(ctx.lo, ctx.dirty))
        live = range(ctx.lo, ctx.hi)
        est_total = sum(ctx.cur_est[b] for b in live)
        assert ctx.est() == est_total
        measured = Measured()
        assert measure(ctx, measured, 0, 0, 0.0) == measured.truth_tokens[0]
        assert measured.est_tokens == [est_total]
        assert measured.truth_tokens == [sum(ctx.cur_truth[b] for b in live)]
        assert measured.n_blocks == [len(live)]
        assert measured.bytes_results == [sum(ctx.cur_bytes[b] for b in live
                                              if run.category[b] == CAT_RESULTS)]
        for b in live:
            assert ctx.est_from(b) == sum(ctx.cur_est[x] for x in range(b, ctx.hi))
            assert ctx.truth_before(b) == sum(ctx.cur_truth[x] for x in range(ctx.lo, b))
        for back in data.draw(st.lists(st.integers(0, est_total + 10), min_size=1, max_size=5)):
            got = block_reaching_est(ctx, back)
            # the earliest block whose suffix holds at most `back` tokens (never before lo)
            want = next((b for b in live if ctx.est_from(b) <= back), ctx.hi)
            assert got == want, (back, got, want)


@given(runs())
def test_a_new_context_holds_its_declared_defaults(run: PreparedRun) -> None:
    """``Context.__init__`` (its own, not the dataclass's) sets every field that declares a
    default to that default, but those it takes from the run (current sizes and bytes, trim
    flags, the sums at ``lo``)."""
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, 2)
    from_run = {"cur_est", "cur_truth", "cur_bytes", "trimmed", "at_lo"}
    declared = {f.name: f.default if f.default is not MISSING else f.default_factory()
                for f in fields(Context) if f.name not in from_run
                and (f.default is not MISSING or f.default_factory is not MISSING)}
    assert {name: getattr(ctx, name) for name in declared} == declared
    assert (ctx.run, ctx.est_of, ctx.truth_of, ctx.msg_overhead) == (run, tokens, tokens, 2)
    assert ctx.cur_bytes == run.n_bytes and ctx.trimmed == [False] * run.n_blocks
