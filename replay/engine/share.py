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
import threading
from typing import Any

from replay.engine.probe import Probe
from replay.engine.tiers import collapse, gated
from replay.policy import Custom, Policy

Shape = tuple[int, tuple[int, ...]]
"""A policy's fields outside its tiers, and each of its tiers, as numbers (``Shapes``)."""


class Shapes:
    """Numbers for the parts of many policies: equal parts get one number (the first seen),
    so two policies' parts are equal exactly when their numbers are.  With each policy's shape
    it keeps what ``same_trace`` reads of its tiers (each one's gate and level), and for each
    pair of tiers (by number) whether one can stand for the other at all, each worked out once
    however many times a sweep asks."""

    __slots__ = ("_lock", "_numbers", "_pairs", "_parts", "_shapes")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[Any, int] = {}
        self._parts: list[Any] = []
        """Number → the part (the first seen of those equal to it)."""
        self._pairs: dict[tuple[int, int], bool] = {}
        """(tier number, tier number) → ``_may_stand``."""
        self._shapes: dict[int, tuple[Policy, Shape | None, Gates]] = {}
        """id(policy) → the policy (kept, so that its id is not reused), its shape and gates."""

    def of(self, policy: Policy) -> Shape | None:
        """The policy's shape (None: a part that cannot be numbered, e.g. unhashable options)."""
        return self._entry(policy)[1]

    def gates(self, policy: Policy) -> Gates:
        """Per tier of the policy: the id of its gate (0: none) and the level it opens at
        (None: not a level gate), as ``same_trace`` reads them."""
        return self._entry(policy)[2]

    def may_stand(self, a: int, b: int) -> bool:
        """Whether the tier numbered ``a`` can stand for the tier numbered ``b`` when its gate
        stays shut below ``b``'s level (``_may_stand``)."""
        got = self._pairs.get((a, b))
        if got is None:
            got = self._pairs[(a, b)] = _may_stand(self._parts[a], self._parts[b])
        return got

    def _entry(self, policy: Policy) -> tuple[Policy, Shape | None, Gates]:
        got = self._shapes.get(id(policy))
        if got is None:
            with self._lock:  # threads of one process (a Dask worker's) number parts one at a time
                got = self._shapes.get(id(policy))
                if got is None:
                    try:
                        shape: Shape | None = (
                            self._number(("rest", *(getattr(policy, f) for f in _REST_FIELDS))),
                            tuple(self._number(t) for t in policy.tiers))
                    except TypeError:
                        shape = None
                    usable = policy.usable_tokens
                    gates = (tuple(_gate_id(t) for t in policy.tiers),
                             tuple(_level(t, usable) for t in policy.tiers))
                    got = self._shapes[id(policy)] = (policy, shape, gates)
        return got

    def _number(self, part: Any) -> int:
        got = self._numbers.setdefault(part, len(self._numbers))
        if got == len(self._parts):
            self._parts.append(part)
        return got


Gates = tuple[tuple[int, ...], tuple[int | None, ...]]
"""Per tier of a policy: its gate's id (0: none) and the level it opens at (None: not a level)."""


_REST_FIELDS = tuple(f.name for f in dataclasses.fields(Policy) if f.name != "tiers")
"""The policy's fields outside its tiers."""


def same_trace(source: Policy, probe: Probe, other: Policy, shapes: Shapes | None = None) -> bool:
    """Whether replaying ``other`` gives the trace ``source``'s replay gave (``probe``: what
    that replay's gates compared).  False whenever it cannot be told for certain.  ``shapes``:
    where the two policies' parts are numbered (the same answer, faster when asked often)."""
    if source.harness is not None or other.harness is not None:
        return False
    a_tiers, b_tiers = source.tiers, other.tiers
    if len(a_tiers) != len(b_tiers):
        return False
    if shapes is not None:
        a_shape, b_shape = shapes.of(source), shapes.of(other)
        if a_shape is not None and b_shape is not None:
            return _same_numbered(source, probe, other, shapes, a_shape, b_shape)
    differ = [(a, b) for a, b in zip(a_tiers, b_tiers) if a != b]
    if not differ or dataclasses.replace(other, tiers=a_tiers) != source:
        return not differ and other == source
    usable = source.usable_tokens
    level: int | None
    for a, b in differ:
        if not _may_stand(a, b):
            return False
        seen, level = probe.shut(id(_gate(a))), _level(b, usable)
        if seen is None or level is None or seen >= level:
            return False
    return True


def _same_numbered(source: Policy, probe: Probe, other: Policy, shapes: Shapes, a_shape: Shape,
                   b_shape: Shape) -> bool:
    """``same_trace`` of two policies whose parts ``shapes`` numbers: the same answer, from what
    it keeps of each policy and pair of tiers (the policies' harnesses and tier counts are
    checked already)."""
    if a_shape[0] != b_shape[0]:
        return False
    a_gates, b_levels = shapes.gates(source)[0], shapes.gates(other)[1]
    for k, (i, j) in enumerate(zip(a_shape[1], b_shape[1])):
        if i == j:
            continue
        if not shapes.may_stand(i, j):
            return False
        seen, level = probe.shut(a_gates[k]), b_levels[k]
        if seen is None or level is None or seen >= level:
            return False
    return True


def _may_stand(a: Any, b: Any) -> bool:
    """Whether tier ``a``, its gate shut, can stand for tier ``b`` (``same_trace``): the same
    kind and phase, both gated by a level of the same sort (a trigger, or a collapse tier's own
    margin), ``b`` never every request."""
    if type(a) is not type(b) or isinstance(a, Custom) or a.when != b.when:
        return False
    gate_a, gate_b = _gate(a), _gate(b)
    if gate_a is None or gate_b is None or (gate_a is a) != (gate_b is b):
        return False
    return not (b.trigger is not None and b.trigger.every_request)


def share_rank(policies: list[Policy]) -> list[int]:
    """Each policy's place in an order where those that differ only in their gates' levels are
    next to each other, each group by its levels ascending (groups in the order they first
    appear): replayed in that order, the settings one replay stands for (``same_trace``: levels
    its gates never reached) come right after it, while it is still among the replays a sweep
    keeps to compare with.  Any order gives the same rows."""
    groups: dict[Any, int] = {}
    bare: dict[tuple[Any, int], tuple[Any, int]] = {}
    """(tier, usable window) → the tier without its level, and the level (0: none): worked out
    once per distinct tier, a grid's settings sharing most of theirs."""
    keys = []
    for i, policy in enumerate(policies):
        usable = policy.usable_tokens
        levels: list[int] = []
        tiers = []
        try:
            for t in policy.tiers:
                got = bare.get((t, usable))
                if got is None:
                    got = bare[(t, usable)] = _without_level(t, usable)
                tiers.append(got[0])
                levels.append(got[1])
            group = groups.setdefault(dataclasses.replace(policy, tiers=tuple(tiers)), len(groups))
        except TypeError:  # a part that cannot be hashed: keep the order given
            return list(range(len(policies)))
        keys.append((group, levels, i))
    rank = [0] * len(policies)
    for r, (_, _, i) in enumerate(sorted(keys)):
        rank[i] = r
    return rank


def _without_level(tier: Any, usable_tokens: int) -> tuple[Any, int]:
    """``tier`` with its gate's level taken out (a collapse tier's margin, a trigger's
    at_tokens / at_frac), and that level (0: not a level gate; the tier as it is)."""
    level = _level(tier, usable_tokens)
    if level is None:
        return tier, 0
    gate = _gate(tier)
    return ((dataclasses.replace(tier, margin_frac=0.0) if gate is tier else
             dataclasses.replace(tier, trigger=dataclasses.replace(gate, at_tokens=None,
                                                                   at_frac=None))), level)


def _gate(tier: Any) -> Any:
    """What gates ``tier`` and is probed (``Probe.shut`` by its id): a collapse tier without
    trigger itself (its margin), else its trigger; None for a Python class or no trigger."""
    return None if isinstance(tier, Custom) else gated(tier)


def _gate_id(tier: Any) -> int:
    """The id of ``tier``'s gate (``Probe``'s key for it); 0 when it has none."""
    gate = _gate(tier)
    return 0 if gate is None else id(gate)


def _level(tier: Any, usable_tokens: int) -> int | None:
    """The level ``tier``'s gate opens at (None: not a level gate)."""
    gate = _gate(tier)
    if gate is None:
        return None
    if gate is tier:
        return collapse.level_tokens(tier, usable_tokens)
    level: int | None = gate.level_tokens(usable_tokens)
    return level
