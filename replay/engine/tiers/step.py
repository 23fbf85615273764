"""A policy's tier bound for one replay: the replay loop calls ``step.act(ctx, env)``.

Each tier module subclasses ``Step`` with the tier and its state of one replay
(``trim.TrimStep``, ``summarise.SummariseStep``, ...); ``replay.engine.tiers.bind`` makes one
per tier.  A class rather than a ``functools.partial`` of the module's ``act``: compiled, the
loop's call is a native method call, where a partial's went through the interpreter (the
arguments prepended, then parsed again by the compiled function: about 300 instructions a
call, at every request for a tier without a token gate).

Not here: what a tier does (its module), when the loop skips it (``replay.engine.tiers.gate``).
"""

from __future__ import annotations

from replay.engine.context import Context
from replay.engine.tiers.base import Env


class Step:
    """One tier with its state, for one replay."""

    def act(self, ctx: Context, env: Env) -> None:
        """Let the tier act on the context as it is (it checks its own trigger)."""
        raise NotImplementedError
