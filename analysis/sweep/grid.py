"""Sweep settings: a spec's values applied to a base policy, one ``Setting`` per distinct policy.

The spec (the field paths, their values and the design) is read by ``analysis.sweep.spec`` and
re-exported here (``load_spec``, ``make_spec``, ``SweepSpec``, ...).  A *setting* is the base
with the chosen values applied together (as one ``replace_path`` per value would, but validated
once, so two fields that must change together — a trigger's ``at_tokens`` to null and
``at_frac`` to a value — can); its id is the policy's ``digest()``, so the same policy is one
setting however it was reached (duplicates are dropped, first kept).  Invalid values fail with
the path and why.  A spec asking for more than ``MAX_CELLS`` settings is refused, with its size.

Not here: running the settings (``analysis.sweep.core``).
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analysis.sweep.spec import (
    DESIGNS,
    Axis,
    Design,
    SweepSpec,
    load_grid,
    load_spec,
    make_spec,
    spec_from_dict,
)
from replay.errors import PolicyError
from replay.policy import Policy, policy_from_dict, policy_to_dict, set_path
from replay.policy.doc import item_index, item_name

__all__ = ["DESIGNS", "MAX_CELLS", "Axis", "Design", "Setting", "SweepSpec", "apply", "load_grid",
           "load_spec", "make_spec", "settings", "spec_from_dict"]

MAX_CELLS = 100_000
"""The largest number of settings a spec may produce."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of a sweep: the policy, its id, and the swept values that made it."""

    id: str
    """The policy's ``digest()``."""
    params: tuple[tuple[str, Any], ...]
    """(path, value) for every axis, as the policy holds it after validation."""
    policy: Policy


def settings(base: Policy, spec: SweepSpec, *, max_cells: int = MAX_CELLS) -> list[Setting]:
    """The settings of a spec applied to a base policy, in design order, duplicates dropped.

    Args:
        base: the policy every setting starts from.
        spec: the axes and design.
        max_cells: refuse specs asking for more settings than this.

    Returns:
        One ``Setting`` per distinct policy.

    Raises:
        PolicyError: the spec is too large, or a value is invalid at its path.
    """
    size = spec.size
    if size > max_cells:
        dims = " × ".join(str(a.count) for a in spec.axes)
        shape = f" ({dims})" if spec.design == "grid" and len(dims) <= 80 else ""
        remedy = {"grid": "use design: random or one_at_a_time, or fewer values",
                  "random": "draw fewer (samples, --samples)",
                  "one_at_a_time": "give the axes fewer values"}.get(spec.design, "fewer values")
        said = f"{size:,}" if size < 10**15 else f"{size:.3g}"
        raise PolicyError(spec.source, "", f"{said} settings{shape} is more than the "
                                        f"{max_cells:,} a sweep may have; {remedy}")
    fields: dict[str, str] = {}
    for axis in spec.axes:
        field = _check_path(base, axis.path)
        if field in fields:  # a tier by name and by index: one axis's values would be lost
            raise PolicyError(spec.source, axis.path, f"sets the same field as {fields[field]}; "
                                                   "give each field one axis")
        fields[field] = axis.path
    out: dict[str, Setting] = {}
    paths = [a.path for a in spec.axes]
    parts: dict[tuple[Any, str], Any] = {}
    for combo in _combinations(spec):
        setting = apply(base, combo, report=paths)
        if setting.id not in out:
            out[setting.id] = _sharing_parts(setting, parts)
    return list(out.values())


_REST_FIELDS = tuple(f.name for f in dataclasses.fields(Policy) if f.name != "tiers")
"""The policy's fields outside its tiers."""


def _sharing_parts(setting: Setting, parts: dict[tuple[Any, str], Any]) -> Setting:
    """The setting with each part of its policy (each field outside the tiers, and each tier
    by its place) the very object an earlier setting of the grid holds when equal, as written
    (``parts``: (field or tier index, its repr) → the first seen; 1 and 1.0 stay apart): an
    equal policy, sharing most of its parts with the others.  A sweep pickles a shared object
    once and its workers rebuild it once (``analysis.sweep.unit.settings_blob``: the policies
    of 100 settings of ``benchmarks/sweep_speed.py``'s grid hold ~1,600 objects, ~200 of them
    distinct).  The parts of one policy stay distinct objects (a probe tells gates apart by
    identity: ``replay.engine.probe``)."""
    policy = setting.policy
    rest = {f: _first(parts, f, getattr(policy, f)) for f in _REST_FIELDS}
    tiers = tuple(_first(parts, k, t) for k, t in enumerate(policy.tiers))
    if (all(a is b for a, b in zip(tiers, policy.tiers))
            and all(v is getattr(policy, f) for f, v in rest.items())):
        return setting
    return dataclasses.replace(setting, policy=dataclasses.replace(policy, tiers=tiers, **rest))


def _first(parts: dict[tuple[Any, str], Any], where: Any, value: Any) -> Any:
    """The part ``parts`` holds at ``where`` written as ``value`` is, when equal to it (else
    ``value``, which is kept when none is held)."""
    got = parts.setdefault((where, repr(value)), value)
    return got if got is value or got == value else value


def apply(base: Policy, values: Mapping[str, Any] | tuple[tuple[str, Any], ...], *,
          report: list[str] | None = None) -> Setting:
    """The setting made by applying ``values`` (path → value) to ``base``, in order.

    Args:
        base: the policy to start from.
        values: the field values to set.
        report: the paths whose values the setting's ``params`` list (default: those set).

    Returns:
        The setting (id = the new policy's digest; params read back from the policy).
    """
    items = tuple(values.items()) if isinstance(values, Mapping) else tuple(values)
    doc = policy_to_dict(base)
    for path, value in items:
        set_path(doc, path, value)
    policy = base
    if items:
        where = ", ".join(f"{path}={value!r}" for path, value in items)
        try:
            policy = policy_from_dict(doc, f"<{base.name} with {where}>")
        except PolicyError as exc:  # said with the tier as the paths name it
            raise PolicyError(exc.path, _as_written(exc.key, [p for p, _ in items], doc),
                              exc.reason) from None
    paths = report if report is not None else [path for path, _ in items]
    held = policy_to_dict(policy)
    params = tuple((path, _plain(_get(held, path))) for path in paths)
    return Setting(policy.digest(), params, policy)


def _combinations(spec: SweepSpec) -> list[tuple[tuple[str, Any], ...]]:
    """The (path, value) tuples the design asks for, in order."""
    paths = [a.path for a in spec.axes]
    if spec.design == "grid":
        return [tuple(zip(paths, vals)) for vals in
                itertools.product(*(a.points() for a in spec.axes))]
    if spec.design == "random":
        rng = random.Random(spec.seed)
        return [tuple((a.path, a.draw(rng)) for a in spec.axes) for _ in range(spec.samples)]
    combos: list[tuple[tuple[str, Any], ...]] = [()]
    for a in spec.axes:
        combos += [((a.path, v),) for v in a.points()]
    return combos


def _check_path(base: Policy, path: str) -> str:
    """The field ``path`` leads to, as a path with every item by its index; fail early, naming
    the path as written (a tier by its name or index, ``item_index``), when it does not lead
    to a field of the base policy."""
    node: Any = policy_to_dict(base)
    keys = path.split(".")
    field = []
    for i, k in enumerate(keys):
        here = ".".join(keys[:i + 1])
        if isinstance(node, list):
            at = item_index(node, k)
            if at is None:
                names = [str(item_name(t)) for t in node]
                close = difflib.get_close_matches(k, names, n=1)
                raise PolicyError(f"<{base.name}>", here, f"no item {k!r}"
                                  + (f"; did you mean {close[0]!r}?" if close else "")
                                  + f" (by name: {', '.join(names)}; or an index "
                                    f"0–{len(node) - 1})")
            node = node[at]
            field.append(str(at))
        elif isinstance(node, dict):
            if k not in node:
                close = difflib.get_close_matches(k, list(node), n=1)
                raise PolicyError(f"<{base.name}>", here, "no such field"
                                  + (f"; did you mean {close[0]!r}?" if close else "")
                                  + f" (fields: {', '.join(node)})")
            node = node.get(k)
            field.append(k)
        else:
            raise PolicyError(f"<{base.name}>", here, "is not a mapping or a list")
    return ".".join(field)


def _as_written(key: str, paths: list[str], doc: Any) -> str:
    """``key`` (a validation error's ``tiers.1.trigger…``) with the tier's index replaced by its
    name when the swept paths address that tier by name."""
    parts = key.split(".")
    if len(parts) < 2 or parts[0] != "tiers" or not parts[1].isdigit():
        return key
    tiers = doc.get("tiers") or []
    i = int(parts[1])
    name = item_name(tiers[i]) if i < len(tiers) else None
    if name is not None and any(p.split(".")[1:2] == [str(name)] for p in paths):
        return ".".join(["tiers", str(name), *parts[2:]])
    return key


def _get(doc: Any, path: str) -> Any:
    for k in path.split("."):
        if isinstance(doc, list):
            at = item_index(doc, k)
            doc = None if at is None else doc[at]
        else:
            doc = doc.get(k)
    return doc


def _plain(v: Any) -> Any:
    """A parameter value as a table cell: scalars as they are, anything else as JSON."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return json.dumps(v, sort_keys=True)
