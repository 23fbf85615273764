"""Tiers: one module per kind of action (trim, summarise, collapse, custom).

``bind`` dispatches a policy tier to its module once per replay.  Each module's docstring lists
the guarantees it keeps; all cuts go through ``Context.cut_before`` (safe split).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from replay.context import Context
from replay.policy import Collapse, Custom, Summarise, Trim
from replay.tiers import collapse, custom, summarise, trim
from replay.tiers.base import Env


def bind(tier: Any, index: int, impl: Any = None) -> Callable[[Context, Env], None]:
    """One tier's ``act`` with its module chosen once: a replay loop calls ``step(ctx, env)``."""
    match tier:
        case Trim():
            return partial(trim.act, tier, index)
        case Summarise():
            return partial(summarise.act, tier, index)
        case Collapse():
            return partial(collapse.act, tier, index)
        case Custom():
            return partial(custom.act, tier, impl)
    raise TypeError(f"not a tier: {tier!r}")
