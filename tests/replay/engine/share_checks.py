"""Shared by the engine's sharing and protected-range tests: a trace's tables, random trims and
cuts of a context, and the check that a replay standing for another setting is that setting's."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.probe import Probe
from replay.engine.share import same_trace
from replay.engine.trace import TRACE_SCHEMAS, Trace
from replay.policy import Policy


def columns(trace: Trace) -> dict[str, Any]:
    """Every table of a trace, as columns (what two replays are compared by)."""
    return {t: trace.columns(t) for t in TRACE_SCHEMAS}


def trim_and_cut(data: Any, ctx: Context, tokens: list[int], max_trims: int) -> None:
    """Trim up to ``max_trims`` drawn blocks of the context to a third of their size, then
    sometimes cut it before a drawn safe split (the context's two kinds of change)."""
    for b in data.draw(st.lists(st.integers(ctx.lo, ctx.hi - 1), max_size=max_trims)):
        if not ctx.trimmed[b]:
            ctx.set_block(b, tokens[b] // 3, tokens[b] // 3, ctx.run.n_bytes[b] // 3)
    safe = [b for b in range(ctx.lo + 1, ctx.hi) if ctx.is_safe_split(b)]
    if data.draw(st.booleans()) and safe:
        ctx.cut_before(data.draw(st.sampled_from(safe)), [])


def sharing_on_samples(corpus: Any, run_ids: list[str], grid: list[Policy], *,
                       keep_every_replay: bool) -> tuple[int, int]:
    """Each setting of ``grid`` replayed over each run, and every earlier replay that stands for
    it (``same_trace``) asserted to give its tables.  Kept to stand for later settings: every
    replay (``keep_every_replay``), or those no earlier one stood for (as a sweep does).
    Returns (settings some replay stood for, replays kept)."""
    shared = kept = 0
    for rid in run_ids:
        run, calibration = corpus.prepared(rid), corpus.calibration(rid)
        sources: list[tuple[Policy, Probe, Trace]] = []
        for policy in grid:
            fresh = replay(run, policy, calibration=calibration)
            stands = [tr for src, probe, tr in sources if same_trace(src, probe, policy)]
            for trace in stands:
                assert columns(trace) == columns(fresh), (rid, policy.tiers)
            shared += bool(stands)
            if keep_every_replay or not stands:
                kept += 1
                probe = Probe()
                sources.append((policy, probe,
                                replay(run, policy, calibration=calibration, probe=probe)))
    return shared, kept
