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
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Probe:
    """Per gate of one replay: the highest level compared, and the gates that ever opened."""

    levels: dict[int, int] = field(default_factory=dict)
    """id(trigger or tier) → the highest estimated-token level its gate compared."""
    opened: set[int] = field(default_factory=set)
    """Gates that opened at least once, or that are not a level comparison."""

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
