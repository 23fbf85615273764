"""A trim pass and the induced re-reads it trims are one action (#22, ``replay.engine.tiers.trim``).

Before, a pass that went through recorded its recorded blocks as one action and the re-reads it
trimmed with it as a second action at the same request, with no minimum and with what it
invalidated counted again from its own first change: under ``two-tier-corrected`` that second
action was counted as a small cache-invalidating trim (3-6 on two sample runs) although the
pass reclaimed its eighth of the window.
"""

from __future__ import annotations

from collections import Counter

from replay.engine.fold import replay
from replay.engine.trace import TRIM
from replay.policy import Trim, load_policy, presets


def test_one_applied_trim_action_per_tier_and_request(sample_corpus) -> None:  # type: ignore[no-untyped-def]
    seen_induced = 0
    for name in presets():
        policy = load_policy(name)
        minimum = {t.name: t.min_reclaim_tokens or int(t.min_reclaim_frac * policy.usable_tokens)
                   for t in policy.tiers if isinstance(t, Trim)}
        if not minimum:
            continue
        for rid in sample_corpus.replayable():
            trace = replay(sample_corpus.prepared(rid), policy,
                           calibration=sample_corpus.calibration(rid))
            applied = [a for a in trace.actions.to_pylist()
                       if a["kind"] == TRIM and not a["undone"] and a["tier"] in minimum]
            per = Counter((a["request"], a["tier"]) for a in applied)
            assert max(per.values(), default=0) <= 1, (name, rid)
            for a in applied:
                seen_induced += a["induced"]
                # a pass's re-reads do not make it a pass of its own below the tier's minimum
                assert a["reclaimed_est_tokens"] >= minimum[a["tier"]], (name, rid, a)
    assert seen_induced  # some pass did trim induced re-reads with its recorded blocks
