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
- or a trim tier differs only in its token protection (``protect.tokens`` / ``protect.frac``),
  on in both, and ``other``'s gives every pass of ``source``'s replay the start of the protected
  range it gave (``Probe.protect``): the one thing that protection decides is that start, so
  both passes do the same, and the next one starts from the same context.

A tier with a Python class, a policy following a harness's arithmetic (its tiers are rewritten
per run) and a gate that is not a level comparison never share.  Tiers that are equal may act
as much as they like.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from replay.engine.probe import Probe
from replay.engine.tiers import collapse, gated, trim
from replay.policy import Custom, Policy, Trim

Shape = tuple[int, tuple[int, ...]]
"""A policy's fields outside its tiers, and each of its tiers, as numbers (``Shapes``)."""


class Shapes:
    """Numbers for the parts of many policies: equal parts get one number (the first seen),
    so two policies' parts are equal exactly when their numbers are.  With each policy's shape
    it keeps what ``same_trace`` reads of its tiers (each one's gate and level), and for each
    pair of tiers (by number) whether one can stand for the other at all, each worked out once
    however many times a sweep asks."""

    __slots__ = ("_fields", "_lock", "_numbers", "_pairs", "_parts", "_protect_pairs", "_shapes")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers = Numbers()
        """Parts (a policy's fields outside its tiers, as the numbers of their values; a tier)
        → their number, an index of ``_parts``."""
        self._fields = Numbers()
        """The values of policies' fields outside their tiers → their number."""
        self._parts: list[Any] = []
        """Number → the part (the first seen of those equal to it)."""
        self._pairs: dict[tuple[int, int], bool] = {}
        """(tier number, tier number) → ``_may_stand``."""
        self._protect_pairs: dict[tuple[int, int], bool] = {}
        """(tier number, tier number) → ``_protect_only``."""
        self._shapes: dict[int, tuple[Policy, Shape | None, Gates]] = {}
        """id(policy) → the policy (kept, so that its id is not reused), its shape and gates."""

    def of(self, policy: Policy) -> Shape | None:
        """The policy's shape (None: a part that cannot be numbered, e.g. unhashable options)."""
        return self._entry(policy)[1]

    def gates(self, policy: Policy) -> Gates:
        """Per tier of the policy: the id of its gate (0: none), the level it opens at (None:
        not a level gate) and its token protection (``protect_tokens``), as ``same_trace``
        reads them."""
        return self._entry(policy)[2]

    def may_stand(self, a: int, b: int) -> bool:
        """Whether the tier numbered ``a`` can stand for the tier numbered ``b`` when its gate
        stays shut below ``b``'s level (``_may_stand``)."""
        got = self._pairs.get((a, b))
        if got is None:
            got = self._pairs[(a, b)] = _may_stand(self._parts[a], self._parts[b])
        return got

    def protect_only(self, a: int, b: int) -> bool:
        """Whether the tiers numbered ``a`` and ``b`` are trim tiers that differ only in their
        token protection (``_protect_only``)."""
        got = self._protect_pairs.get((a, b))
        if got is None:
            got = self._protect_pairs[(a, b)] = _protect_only(self._parts[a], self._parts[b])
        return got

    def _entry(self, policy: Policy) -> tuple[Policy, Shape | None, Gates]:
        got = self._shapes.get(id(policy))
        if got is None:
            with self._lock:  # threads of one process (a Dask worker's) number parts one at a time
                got = self._shapes.get(id(policy))
                if got is None:
                    try:
                        shape: Shape | None = (
                            self._number(("rest", *(self._fields.of(getattr(policy, f))
                                                    for f in _REST_FIELDS))),
                            tuple(self._number(t) for t in policy.tiers))
                    except TypeError:
                        shape = None
                    usable = policy.usable_tokens
                    gates = (tuple(_gate_id(t) for t in policy.tiers),
                             tuple(_level(t, usable) for t in policy.tiers),
                             tuple(_tokens(t, usable) for t in policy.tiers))
                    got = self._shapes[id(policy)] = (policy, shape, gates)
        return got

    def _number(self, part: Any) -> int:
        got = self._numbers.of(part)
        if got == len(self._parts):
            self._parts.append(part)
        return got


class Numbers:
    """Numbers for values: equal values get one number (the first seen's), looked up by the
    object's identity first, by its value (a hash, deep for a policy's part) the first time an
    object is seen: a grid's settings share most of their parts as objects
    (``analysis.sweep.grid``), so each distinct part is hashed once, not once per policy.
    Keeps every object it numbered (an identity is never reused while it lives)."""

    __slots__ = ("_by_id", "_by_value")

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, int]] = {}
        self._by_value: dict[Any, int] = {}

    def of(self, value: Any) -> int:
        """The value's number (TypeError: it cannot be hashed)."""
        got = self._by_id.get(id(value))
        if got is None:
            got = self._by_id[id(value)] = (
                value, self._by_value.setdefault(value, len(self._by_value)))
        return got[1]


Gates = tuple[tuple[int, ...], tuple[int | None, ...], tuple[int, ...]]
"""Per tier of a policy: its gate's id (0: none), the level it opens at (None: not a level) and
its token protection (0: none, or not a trim tier)."""


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
        if _may_stand(a, b):
            seen, level = probe.shut(id(_gate(a))), _level(b, usable)
            if seen is not None and level is not None and seen < level:
                continue
        if not (_protect_only(a, b) and _same_stops(probe, a, _tokens(a, usable),
                                                    _tokens(b, usable))):
            return False
    return True


def _same_numbered(source: Policy, probe: Probe, other: Policy, shapes: Shapes, a_shape: Shape,
                   b_shape: Shape) -> bool:
    """``same_trace`` of two policies whose parts ``shapes`` numbers: the same answer, from what
    it keeps of each policy and pair of tiers (the policies' harnesses and tier counts are
    checked already)."""
    if a_shape[0] != b_shape[0]:
        return False
    a_gates, b_gates = shapes.gates(source), shapes.gates(other)
    for k, (i, j) in enumerate(zip(a_shape[1], b_shape[1])):
        if i == j:
            continue
        if shapes.may_stand(i, j):
            seen, level = probe.shut(a_gates[0][k]), b_gates[1][k]
            if seen is not None and level is not None and seen < level:
                continue
        if not (shapes.protect_only(i, j)
                and _same_stops(probe, source.tiers[k], a_gates[2][k], b_gates[2][k])):
            return False
    return True


def _same_stops(probe: Probe, tier: Any, tokens: int, other_tokens: int) -> bool:
    """Whether the trim tier ``tier`` of the probed replay, with token protection ``tokens``,
    gives every pass the start it gave with ``other_tokens`` instead (both on: > 0)."""
    return tokens > 0 and other_tokens > 0 and probe.same_tokens(id(tier), other_tokens)


def _protect_only(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are trim tiers equal but for their token protection
    (``protect.tokens``, ``protect.frac``)."""
    return (type(a) is Trim and type(b) is Trim
            and _without_tokens(a) == _without_tokens(b))


def _without_tokens(tier: Trim) -> Trim:
    """The trim tier with no token protection."""
    return dataclasses.replace(tier, protect=dataclasses.replace(tier.protect, tokens=0,
                                                                 frac=0.0))


def _tokens(tier: Any, usable_tokens: int) -> int:
    """A trim tier's token protection (``trim.protect_tokens``; 0: none, or not a trim tier)."""
    return trim.protect_tokens(tier, usable_tokens) if type(tier) is Trim else 0


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
    """Each policy's place in an order where those that differ only in their gates' levels and
    their trim tiers' token protections are next to each other, each group by its token
    protections, then by its levels, ascending (groups in the order they first appear):
    replayed in that order, the settings one replay stands for (``same_trace``: levels its
    gates never reached, token protections that give its trim passes the same starts) come
    soon after it, while it is still among the replays a sweep keeps to compare with.  (Token
    protections first: at 1,000 settings of ``benchmarks/sweep_speed.py`` 416 replays, levels
    first 731.)  Any order gives the same rows."""
    groups: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    """(the numbers of the policy's fields outside its tiers, of its tiers without their
    levels and token protections) → the group's number: equal exactly when the policies are
    equal but for those levels and protections."""
    numbers = Numbers()
    bare: dict[tuple[int, int], tuple[int, int, int]] = {}
    """(id(tier), usable window) → the number of the tier without its level and token
    protection, the level (0: none) and the token protection (0: none): worked out once per
    tier object and window (the policies hold their tiers while this runs)."""
    keys = []
    for i, policy in enumerate(policies):
        usable = policy.usable_tokens
        levels: list[int] = []
        tokens: list[int] = []
        tiers = []
        try:
            for t in policy.tiers:
                got = bare.get((id(t), usable))
                if got is None:
                    without, level, protect = _without_level(t, usable)
                    got = bare[(id(t), usable)] = (numbers.of(without), level, protect)
                tiers.append(got[0])
                levels.append(got[1])
                tokens.append(got[2])
            rest = tuple([numbers.of(getattr(policy, f)) for f in _REST_FIELDS])
        except TypeError:  # a part that cannot be hashed: keep the order given
            return list(range(len(policies)))
        group = groups.setdefault((rest, tuple(tiers)), len(groups))
        keys.append((group, tokens, levels, i))
    rank = [0] * len(policies)
    for r, key in enumerate(sorted(keys)):
        rank[key[3]] = r
    return rank


def _without_level(tier: Any, usable_tokens: int) -> tuple[Any, int, int]:
    """``tier`` with its gate's level (a collapse tier's margin, a trigger's at_tokens /
    at_frac) and its token protection (a trim tier's, when on) taken out, that level (0: not a
    level gate) and that token protection (0: none)."""
    tokens = _tokens(tier, usable_tokens)
    if tokens:
        tier = _without_tokens(tier)
    level = _level(tier, usable_tokens)
    if level is None:
        return tier, 0, tokens
    gate = _gate(tier)
    return ((dataclasses.replace(tier, margin_frac=0.0) if gate is tier else
             dataclasses.replace(tier, trigger=dataclasses.replace(gate, at_tokens=None,
                                                                   at_frac=None))), level, tokens)


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
