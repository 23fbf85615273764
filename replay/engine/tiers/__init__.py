"""Tiers: one module per kind of action (trim, summarise, collapse, custom).

``bind`` dispatches a policy tier to its module once per replay.  Each module's docstring lists
the guarantees it keeps; every change to the context goes through ``replay.engine.tiers.apply``
(``apply_trims``, ``apply_cut``), which enforces the engine's invariants for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from replay.engine.context import Context
from replay.engine.tiers import collapse, custom, summarise, trim
from replay.engine.tiers.base import Env
from replay.policy import Collapse, Custom, Summarise, Trim


def bind(tier: Any, impl: Any = None) -> Callable[[Context, Env], None]:
    """One tier's ``act`` with its module chosen once and a fresh state of its own (typed per
    tier: ``TrimState``, ``SummariseState``, ...): a replay loop calls ``step(ctx, env)``."""
    match tier:
        case Trim():
            return partial(trim.act, tier, trim.TrimState())
        case Summarise():
            return partial(summarise.act, tier, summarise.SummariseState())
        case Collapse():
            return partial(collapse.act, tier, collapse.CollapseState())
        case Custom():
            return partial(custom.act, tier, custom.CustomState(impl))
    raise TypeError(f"not a tier: {tier!r}")
