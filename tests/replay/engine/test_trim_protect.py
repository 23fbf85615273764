"""A trim tier's protected range by tokens, carried from pass to pass, against the search."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.prepared import PreparedRun
from replay.engine.reach import block_reaching_est
from replay.engine.tiers.trim import _reaching_est
from replay.engine.tiers.trim_state import TrimState
from tests.replay.engine.share_checks import trim_and_cut
from tests.strategies import runs


@given(runs(), st.data())
def test_the_carried_range_start_is_the_search_s_as_blocks_arrive_and_are_trimmed_or_cut(
        run: PreparedRun, data: Any) -> None:
    """At every request (blocks arriving a few at a time, with trims — inside the range or
    before it — and cuts between some of them), ``_reaching_est`` answers what
    ``block_reaching_est`` answers, for the tier's fixed token budget."""
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, tokens, data.draw(st.integers(0, 5)))
    budget = data.draw(st.integers(0, max(1, sum(tokens) // 2)))
    state = TrimState()
    while ctx.hi < run.n_blocks:
        ctx.hi = min(run.n_blocks, ctx.hi + data.draw(st.integers(1, 4)))
        if data.draw(st.integers(0, 3)) == 0:  # a change: the epoch moves on
            trim_and_cut(data, ctx, tokens, 3)
        assert _reaching_est(ctx, budget, state) == block_reaching_est(ctx, budget)
