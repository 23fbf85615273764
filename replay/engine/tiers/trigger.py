"""Triggers: whether a tier's trigger fires on the context as it is, and the level it fires at.

``fires`` is the one definition of the rule; ``trigger_check`` reads a trigger's fields once into
native values for a tier that checks it at every request (``fires_check``); ``gate`` is the level
below which the replay loop need not call a tier's step at all (``replay.engine.tiers.gate``);
``harness_estimate`` is what the harness compares with a token level.

Not here: the replay environment (``replay.engine.tiers.base.Env``), the tiers themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from replay.engine.context import Context
from replay.engine.hidden_reasoning import earlier_reasoning_tokens
from replay.engine.probe import Probe
from replay.engine.tiers.base import Env
from replay.policy import Trigger


def harness_estimate(ctx: Context, env: Env) -> int:
    """What the harness compares with a token trigger: the estimate of the context, plus for
    Codex the earlier turns' reasoning it counts (``replay.engine.hidden_reasoning``)."""
    est = env.fixed_est + ctx.est()
    return est + earlier_reasoning_tokens(ctx) if env.hidden_reasoning else est


def threshold(trigger: Trigger, env: Env) -> int:
    """The estimated-token level a trigger fires at (0 for every-request / message triggers)."""
    return trigger.level_tokens(env.usable) or 0


def gate(trigger: Trigger, env: Env) -> int:
    """The harness estimate below which ``trigger`` cannot fire, as the replay loop tests it
    before calling a tier's step (``replay.engine.tiers.gate``): its token level; 0 (the loop
    calls the step at every check) when it has none, or when the harness also counts hidden
    reasoning (the loop compares ``env.fixed_est + ctx.est()`` alone).  Under a probe the loop
    records what ``_probed`` would have for a step it skips (the estimate, not opened)."""
    level = trigger.level_tokens(env.usable)
    return 0 if level is None or env.hidden_reasoning else level


@dataclass(slots=True, init=False)
class TriggerCheck:
    """A trigger read once into native values (``trigger_check``), for a tier that checks it at
    every request: ``fires_check`` then reads no attribute of the policy's (uncompiled) objects,
    a lookup each where this class's fields are reads.  (Its own ``__init__``: compiled, a
    dataclass's generated one runs as Python; tests/replay/engine/test_own_inits.py checks the
    defaults agree.)"""

    trigger: Trigger
    kind: int
    """The field set, as ``fires_check`` tests them in order (``_AT_TOKENS`` ... ``_LEVEL``)."""
    at: int = 0
    """``at_tokens``, ``after_messages`` or ``after_events``."""
    idle_s: float = 0.0
    """``idle_minutes`` in seconds."""
    every_request: bool = False

    def __init__(self, trigger: Trigger, kind: int, at: int = 0, idle_s: float = 0.0,
                 every_request: bool = False) -> None:
        self.trigger, self.kind, self.at = trigger, kind, at
        self.idle_s, self.every_request = idle_s, every_request


_AT_TOKENS: Final = 0
_EVERY: Final = 1
_NEVER: Final = 2
_MESSAGES: Final = 3
_EVENTS: Final = 4
_IDLE: Final = 5
_LEVEL: Final = 6


def trigger_check(trigger: Trigger) -> TriggerCheck:
    """``trigger``'s fields for ``fires_check``, in its order of tests."""
    if trigger.at_tokens is not None:  # the usual level, first
        return TriggerCheck(trigger, _AT_TOKENS, trigger.at_tokens)
    if trigger.every_request:
        return TriggerCheck(trigger, _EVERY, every_request=True)
    if trigger.never:
        return TriggerCheck(trigger, _NEVER)
    if trigger.after_messages is not None:
        return TriggerCheck(trigger, _MESSAGES, trigger.after_messages)
    if trigger.after_events is not None:
        return TriggerCheck(trigger, _EVENTS, trigger.after_events)
    if trigger.idle_minutes is not None:
        return TriggerCheck(trigger, _IDLE, idle_s=60.0 * trigger.idle_minutes)
    return TriggerCheck(trigger, _LEVEL)


def fires(trigger: Trigger, ctx: Context, env: Env) -> bool:
    """Whether the trigger fires on the context as it is now."""
    return fires_check(trigger_check(trigger), ctx, env)


def fires_check(check: TriggerCheck, ctx: Context, env: Env) -> bool:
    """``fires`` of the trigger ``check`` was made from."""
    if env.probe is not None:
        return _probed(check.trigger, ctx, env, env.probe)
    kind = check.kind
    if kind == _AT_TOKENS:  # (``threshold``: the level itself)
        est = env.fixed_est + ctx.est()  # harness_estimate, inlined (a tier's check a request)
        if env.hidden_reasoning:
            est += earlier_reasoning_tokens(ctx)
        return est >= check.at
    if kind == _EVERY:
        return True
    if kind == _NEVER:
        return False
    if kind == _MESSAGES:
        return ctx.n_messages >= check.at
    if kind == _EVENTS:
        return ctx.n_events >= check.at
    if kind == _IDLE:
        gaps = ctx.run.gaps_s()
        gap = gaps[env.request] if env.request < len(gaps) else None
        return gap is not None and gap >= check.idle_s
    return harness_estimate(ctx, env) >= threshold(check.trigger, env)


def _probed(trigger: Trigger, ctx: Context, env: Env, probe: Probe) -> bool:
    """``fires``, recording the comparison in ``probe`` (``replay.engine.probe``)."""
    if trigger.at_tokens is not None:  # the usual level first, as in ``fires`` (no calls)
        est = env.fixed_est + ctx.est()  # harness_estimate, inlined
        if env.hidden_reasoning:
            est += earlier_reasoning_tokens(ctx)
        opened = est >= trigger.at_tokens
        probe.saw(id(trigger), est, opened)
        return opened
    if trigger.level_tokens(env.usable) is None:  # not a level: opened whenever checked
        probe.saw(id(trigger), 0, True)
        env.probe = None
        try:
            return fires(trigger, ctx, env)
        finally:
            env.probe = probe
    level = harness_estimate(ctx, env)
    opened = level >= threshold(trigger, env)
    probe.saw(id(trigger), level, opened)
    return opened
