"""Tiers: one module per kind of action (trim, summarise, collapse, custom).

``bind`` dispatches a policy tier to its module once per replay.  Each module's docstring lists
the guarantees it keeps; every change to the context goes through ``replay.engine.tiers.apply``
(``apply_trims``, ``apply_cut``), which enforces the engine's invariants for all of them.
"""

from __future__ import annotations

from typing import Any

from replay.engine.tiers import collapse, custom, summarise, trim
from replay.engine.tiers.base import Env
from replay.engine.tiers.step import Step
from replay.engine.tiers.trigger import gate as trigger_gate
from replay.policy import Collapse, Custom, Summarise, Trim


def bind(tier: Any, impl: Any = None) -> Step:
    """One tier's step, its module chosen once, with a fresh state of its own (typed per tier:
    ``TrimState``, ``SummariseState``, ...): a replay loop calls ``step.act(ctx, env)``
    (``replay.engine.tiers.step``)."""
    match tier:
        case Trim():
            return trim.TrimStep(tier)
        case Summarise():
            return summarise.SummariseStep(tier)
        case Collapse():
            return collapse.CollapseStep(tier)
        case Custom():
            return custom.CustomStep(tier, impl)
    raise TypeError(f"not a tier: {tier!r}")


def gated(tier: Any) -> Any:
    """What gates ``tier``, and keys its record in a ``replay.engine.probe.Probe`` (by its id): a
    collapse tier without trigger itself (its margin), else its trigger."""
    if isinstance(tier, Collapse) and tier.trigger is None:
        return tier
    return tier.trigger


def gate(tier: Any, env: Env) -> int:
    """The estimated tokens (``env.fixed_est + ctx.est()``) below which the tier's step does
    nothing, so the replay loop need not call it there: its trigger's token level
    (``trigger.gate``), a collapse tier's margin when it has no trigger; 0: none, the step is
    called at every check (as it is under a gate of 0 or less).  Below the level each step
    returns before changing anything but a probe's record, whose first act is to compare that
    estimate with the level: the loop records it in the step's place (``gated``)."""
    if gated(tier) is tier:  # a collapse tier without trigger: its margin
        return collapse.level_tokens(tier, env.usable)
    return trigger_gate(tier.trigger, env)
