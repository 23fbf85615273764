"""Cache reads anchored on the ones the log recorded.

The replay's cache model (``replay.engine.cache``) serves the prefix a request shares with the
previous one.  A real cache does not quite do that: it falls short (a miss, a breakpoint the
harness placed before the end of the shared prefix, an entry gone before its lifetime) or goes
beyond it (a prefix still warm from an earlier session or the parent agent: the first request
of a run often reads the system prompt and tools from the cache).  Measured on the samples
(``benchmarks/fidelity.py`` before this anchoring), the model alone was off by a per-run median
of 4–99 % of the input on 9 runs (mini-swe-agent, OpenHands, short Claude Code and Codex runs).

Under anchored truth (``replay.engine.truth``) the replay carries the recorded difference over.
Per request with a recorded cache read, the *shortfall* is what the model reads on the
requests the harness really sent minus what the log recorded; the replay then reads its
model's figure minus the shortfall, within [0, input].  So a request whose context and
predecessor are the recorded ones reads exactly what the log recorded, and a policy's change
lowers the read by what the change costs in the model.  Without a recorded cache read, with
a truth that is not anchored (the replay's sizes are not the recorded ones), or with no cache
(provider ``none``), the model alone decides (shortfall 0); ``TRUTH_SOURCES`` says which.

The recorded side is modelled as the replay models its own requests: the prefix shared with
the previous request (0 on the first request and after the cache lifetime), up to the latest
harness compaction, after which only the fixed part (the anchor offset, and what the harness
re-attached) is shared.
"""

from __future__ import annotations

from replay.engine.cache import pricer
from replay.engine.prepared import PreparedRun
from replay.engine.truth import TruthPlan, recorded_truths
from replay.policy.providers import Cache

ANCHORED_SOURCES = frozenset({"anchored", "anchored-unscaled", "anchored-scaled-down"})
"""Truth sources whose replays anchor cache reads on the recorded ones."""


def cache_shortfalls(run: PreparedRun, plan: TruthPlan, cache: Cache,
                     msg_overhead: int) -> list[int] | None:
    """Per request: model read − recorded read on the recorded requests (negative: the real
    cache read more), or None when the replay uses the model alone (memoised)."""
    if plan.source not in ANCHORED_SOURCES or cache.provider == "none" \
            or not any(r for r in run.recorded_cache_read):
        return None
    key = ("shortfall", plan.counter, msg_overhead, cache, tuple(plan.reattached))
    got = run._counts.get(key)
    if got is not None:
        return got  # type: ignore[no-any-return]
    sizes = recorded_truths(run, plan.counter, msg_overhead)
    expired, split = run.expired(cache.ttl_s), pricer(cache)
    heads, offsets, reattached = run.recorded_summary, plan.offsets, plan.reattached
    out: list[int] = []
    for k, read in enumerate(run.recorded_cache_read):
        if read is None or not run.recorded_input[k]:
            out.append(0)
            continue
        if k == 0 or expired[k]:
            common = 0
        elif heads[k] == heads[k - 1]:
            common = min(sizes[k - 1], sizes[k])
        else:  # the harness compacted in between: the fixed part is all it shares
            h = heads[k]
            common = offsets[k] + (reattached[h] if h >= 0 and reattached else 0)
        out.append(split(sizes[k], common, 0, 0)[0] - read)
    run._counts[key] = out
    return out
