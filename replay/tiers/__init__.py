"""Tiers: one module per kind of action (trim, summarise, collapse, custom).

``act`` dispatches a policy tier to its module.  Each module's docstring lists
the guarantees it keeps; all cuts go through ``Context.cut_before`` (safe split).
"""

from __future__ import annotations

from typing import Any

from replay.context import Context
from replay.policy import Collapse, Custom, Summarise, Trim
from replay.tiers import collapse, custom, summarise, trim
from replay.tiers.base import Env


def act(tier: Any, index: int, ctx: Context, env: Env, impl: Any = None) -> None:
    """Let one tier act on the context (it checks its own trigger)."""
    match tier:
        case Trim():
            trim.act(tier, index, ctx, env)
        case Summarise():
            summarise.act(tier, index, ctx, env)
        case Collapse():
            collapse.act(tier, index, ctx, env)
        case Custom():
            custom.act(tier, impl, ctx, env)
