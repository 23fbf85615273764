"""Which settings replay to the same trace: sharing one replay between settings, exactly.

``same_trace(source, probe, other)`` is true when replaying ``other`` over a run is certain to
give the trace that replaying ``source`` over it gave, ``probe`` being what that replay's tier
gates compared (``replay.engine.probe``).  The reasoning, request by request:

- every field outside the tiers is equal (name, server, estimator, truth, cache, prices, ...),
  and the tiers are as many, of the same kinds, in the same order;
- a tier whose settings differ never opened its gate in ``source``'s replay, and its gate in
  ``other`` stays shut at every level ``source``'s compared: both are level gates (a trigger's
  ``at_tokens`` / ``at_frac``, or a collapse tier's margin) and the highest level compared is
  below ``other``'s threshold;
- a tier whose gate stays shut acts not at all (its ``act`` returns before changing anything),
  so up to any request both replays hold the same context, the same tier states and the same
  rows; the shut tier's next comparison is then of the same level, and stays shut.

A tier with a Python class, a policy following a harness's arithmetic (its tiers are rewritten
per run) and a gate that is not a level comparison never share.  Tiers that are equal may act
as much as they like.
"""

from __future__ import annotations

import dataclasses

from replay.engine.probe import Probe
from replay.engine.tiers import collapse
from replay.policy import Collapse, Custom, Policy


def same_trace(source: Policy, probe: Probe, other: Policy) -> bool:
    """Whether replaying ``other`` gives the trace ``source``'s replay gave (``probe``: what
    that replay's gates compared).  False whenever it cannot be told for certain."""
    if source.harness is not None or other.harness is not None:
        return False
    a_tiers, b_tiers = source.tiers, other.tiers
    if len(a_tiers) != len(b_tiers):
        return False
    differ = [(a, b) for a, b in zip(a_tiers, b_tiers) if a != b]
    if not differ or dataclasses.replace(other, tiers=a_tiers) != source:
        return not differ and other == source
    usable = source.usable_tokens
    level: int | None
    for a, b in differ:
        if type(a) is not type(b) or isinstance(a, Custom) or a.when != b.when:
            return False
        if isinstance(a, Collapse) and isinstance(b, Collapse) and a.trigger is None:
            if b.trigger is not None:
                return False
            seen, level = probe.shut(id(a)), collapse.level_tokens(b, usable)
        else:
            if b.trigger is None or a.trigger is None:
                return False
            seen, level = probe.shut(id(a.trigger)), b.trigger.level_tokens(usable)
        if seen is None or level is None or b.trigger is not None and b.trigger.every_request:
            return False
        if seen >= level:
            return False
    return True
