"""What a replay's tier gates compared, for telling which other settings replay the same.

A tier acts only when its gate opens: its trigger fires (``replay.engine.tiers.trigger.fires``), or
for a collapse tier without a trigger, the estimate reaches its level.  While the gate stays shut
the tier's ``act`` returns at once, changing nothing (no context change, no state, no row), so a
replay in which a tier's gate never opened is the replay of the same policy without that tier's
other settings mattering at all.  A ``Probe`` passed to ``replay.engine.fold.replay`` records,
per gate, the highest level it compared and whether it ever opened; ``replay.engine.share``
decides from it which other settings give the same trace.

Gates are keyed by the identity of the trigger (or of the collapse tier) of the replayed policy:
two tiers sharing one trigger object share a record, which can only make it say "opened" or a
higher level, never less.  Gates that are not a level comparison (every request, a message or
event count, an idle gap, never) are recorded as opened whenever checked.

A trim tier with a token protection also records, keyed by the tier's identity, the token
protections that would have given each of its passes the protected range's start it gave
(``replay.engine.reach.same_stop_tokens``), all passes' at once: the one setting it reads
(``protect.tokens`` / ``protect.frac``) only moves that start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

NO_LIMIT: Final = 1 << 60
"""An upper bound of token protections that bounds nothing (``Probe.protect``; compiled, a
short int: one of 2**62 or more is a boxed object, each comparison a call)."""


@dataclass(slots=True)
class Probe:
    """Per gate of one replay: the highest level compared, and the gates that ever opened."""

    levels: dict[int, int] = field(default_factory=dict)
    """id(trigger or tier) → the highest estimated-token level its gate compared."""
    opened: set[int] = field(default_factory=set)
    """Gates that opened at least once, or that are not a level comparison."""
    protect: dict[int, list[int]] = field(default_factory=dict)
    """id(trim tier) → [low, high]: the token protections (``low <= t <= high``) giving every
    pass of it that measured one the start it gave (no entry: no pass measured one)."""

    def saw(self, key: int, level: int, opened: bool) -> None:
        """The gate ``key`` compared ``level`` and opened or not."""
        if level > self.levels.get(key, level - 1):
            self.levels[key] = level
        if opened:
            self.opened.add(key)

    def shut(self, key: int) -> int | None:
        """The highest level the gate ``key`` compared if it never opened (None: it opened, or
        was never checked)."""
        return None if key in self.opened else self.levels.get(key)

    def tokens_range(self, key: int) -> list[int]:
        """The record of the token protections that give the trim tier ``key``'s passes their
        starts (``protect``), made at its first pass: [0, NO_LIMIT] narrowed by each pass."""
        got = self.protect.get(key)
        if got is None:
            got = self.protect[key] = [0, NO_LIMIT]
        return got

    def same_tokens(self, key: int, tokens: int) -> bool:
        """Whether the token protection ``tokens`` gives every pass of the trim tier ``key`` that
        measured one the start it gave."""
        got = self.protect.get(key)
        return got is None or got[0] <= tokens <= got[1]
