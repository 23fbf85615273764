"""``bind``: a policy's tier as the replay loop calls it, one step and one state per replay."""

from __future__ import annotations

from typing import Any

from replay.engine.tiers import bind
from replay.engine.tiers.step import Step
from replay.policy import load_policy


def test_each_bind_is_a_step_of_its_tier_with_a_fresh_state() -> None:
    """Binding a tier twice (two replays) gives two steps of its kind, each acting for that tier
    with a state of its own: nothing one replay leaves is seen by the next."""
    tiers = load_policy("two-tier-corrected").tiers  # a trim, a summarise and a collapse tier
    kinds = set()
    for tier in tiers:
        a: Any = bind(tier)
        b: Any = bind(tier)
        assert isinstance(a, Step) and type(a) is type(b)
        assert a.tier is tier and b.tier is tier and a.state is not b.state
        assert type(a.state) is type(b.state)
        kinds.add(type(a).__name__)
    assert kinds == {"TrimStep", "SummariseStep", "CollapseStep"}
