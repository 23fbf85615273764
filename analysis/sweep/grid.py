"""Sweep specs: a base policy, the field paths to vary and their values, and a design.

A spec is YAML (or the same dict / keyword arguments in Python)::

    grid:
      tiers.0.min_reclaim_frac: [0, 0.0625, 0.125]                # a list of values
      tiers.1.trigger.at_tokens: {start: 40000, stop: 120000, num: 5}  # evenly, ends included
      tiers.2.margin_frac: {start: 0.1, stop: 0.3, step: 0.05}    # by step, stop included
    design: grid            # grid (every combination) | random | one_at_a_time
    samples: 200            # random: how many settings
    seed: 0                 # random: the seed (same seed, same settings)

A path is the dotted path of ``replay.policy.replace_path`` (tiers by name, as policy files
address them, or by index: ``tiers.tier2_summary.trigger.at_tokens``, ``tiers.1.keep_messages``).
Ranges whose bounds (and step) are whole numbers give whole numbers.  Designs:

- ``grid`` — the Cartesian product of every axis (refused above ``MAX_CELLS``,
  with the size in the message);
- ``random`` — ``samples`` settings, each axis drawn independently: uniformly
  between a range's bounds, or one of a list's values;
- ``one_at_a_time`` — the base, then each axis through its values with every
  other field at the base's value.

A *setting* is the base with the chosen values applied together (as one
``replace_path`` per value would, but validated once, so two fields that must
change together — a trigger's ``at_tokens`` to null and ``at_frac`` to a value —
can); its id is the policy's
``digest()``, so the same policy is one setting however it was reached
(duplicates are dropped, first kept).  Invalid values fail with the path and why.

Not here: running the settings (``analysis.sweep.core``).
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from replay.errors import PolicyError
from replay.policy import Policy, policy_from_dict, policy_to_dict, set_path
from replay.policy.doc import item_index, item_name
from replay.safe_yaml import YamlRefused, parse_yaml, read_yaml_file

Design = Literal["grid", "random", "one_at_a_time"]
DESIGNS: tuple[str, ...] = ("grid", "random", "one_at_a_time")
MAX_CELLS = 100_000
"""The largest number of settings a spec may produce."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Axis:
    """One swept field: its path, and a list of values or a range."""

    path: str
    values: tuple[Any, ...] = ()
    """Explicit values (empty for a range)."""
    start: float | None = None
    stop: float | None = None
    num: int | None = None
    """Range: this many evenly spaced points from start to stop, both included."""
    step: float | None = None
    """Range: start, start + step, … up to stop (included when hit)."""
    is_int: bool = False
    """Range bounds (and step) are whole numbers: points are rounded to whole numbers."""

    @property
    def count(self) -> int:
        """Values of the axis (before rounding merges any), without listing them."""
        if self.values:
            return len(self.values)
        if self.num is not None:
            return self.num
        assert self.start is not None and self.stop is not None and self.step is not None
        return math.floor((self.stop - self.start) / self.step + 1e-9) + 1

    def points(self) -> tuple[Any, ...]:
        """Every value of the axis, in order, duplicates removed."""
        if self.values:
            return self.values
        assert self.start is not None and self.stop is not None
        if self.num is not None:
            n = self.num
            pts = [self.start + (self.stop - self.start) * i / (n - 1) for i in range(n)] \
                if n > 1 else [self.start]
        else:
            assert self.step is not None
            pts = [self.start + self.step * i for i in range(self.count)]
        return tuple(dict.fromkeys(self._cast(p) for p in pts))

    def draw(self, rng: random.Random) -> Any:
        """One value drawn at random: uniform within a range, or one of the values."""
        if self.values:
            return self.values[rng.randrange(len(self.values))]
        assert self.start is not None and self.stop is not None
        return self._cast(rng.uniform(self.start, self.stop))

    def _cast(self, v: float) -> Any:
        return round(v) if self.is_int else round(v, 12)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    """The axes and the design of a sweep."""

    axes: tuple[Axis, ...]
    design: Design = "grid"
    samples: int = 100
    """Settings drawn by the random design."""
    seed: int = 0
    """Seed of the random design."""

    @property
    def size(self) -> int:
        """Settings the design asks for (before duplicates are dropped)."""
        if self.design == "random":
            return self.samples
        sizes = [a.count for a in self.axes]
        if self.design == "one_at_a_time":
            return 1 + sum(sizes)
        return math.prod(sizes)


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of a sweep: the policy, its id, and the swept values that made it."""

    id: str
    """The policy's ``digest()``."""
    params: tuple[tuple[str, Any], ...]
    """(path, value) for every axis, as the policy holds it after validation."""
    policy: Policy


def load_grid(path: str | Path) -> SweepSpec:
    """Read a sweep spec from a YAML file.

    Args:
        path: the YAML file (see the module docstring for the format).

    Returns:
        The validated spec.

    Raises:
        PolicyError: unreadable YAML, an unknown key, or an axis without values.
    """
    p = Path(path)
    try:
        doc = read_yaml_file(p)
    except FileNotFoundError:
        raise PolicyError(str(p), "", "no such grid file") from None
    except IsADirectoryError:
        raise PolicyError(str(p), "", "a folder, not a grid file") from None
    except YamlRefused as exc:
        raise PolicyError(str(p), "", f"not read as a grid: {exc}") from None
    except OSError as exc:
        raise PolicyError(str(p), "", f"cannot read: {exc.strerror or exc}") from None
    return spec_from_dict(doc, str(p))


def spec_from_dict(doc: Any, where: str = "<grid>") -> SweepSpec:
    """Build a spec from plain data (``{grid: {path: values}, design, samples, seed}``).

    Args:
        doc: the spec as read from YAML.
        where: the file name used in error messages.

    Returns:
        The validated spec.

    Raises:
        PolicyError: naming the key that is wrong and why.
    """
    if not isinstance(doc, dict):
        raise PolicyError(where, "", "a grid file is a mapping with a 'grid' key")
    unknown = set(doc) - {"grid", "design", "samples", "seed"}
    if unknown:
        raise PolicyError(where, min(unknown), "unknown key; allowed: grid, design, "
                                                     "samples, seed")
    grid = doc.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise PolicyError(where, "grid", "expected a mapping of field paths to values")
    design = doc.get("design", "grid")
    if design not in DESIGNS:
        raise PolicyError(where, "design", f"{design!r} is not one of {', '.join(DESIGNS)}")
    samples, seed = doc.get("samples", 100), doc.get("seed", 0)
    for key, v in (("samples", samples), ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "samples" else 0):
            raise PolicyError(where, key, f"expected a whole number ≥ {int(key == 'samples')}, "
                                          f"got {v!r}")
    axes = tuple(_axis(str(k), v, where) for k, v in grid.items())
    return SweepSpec(axes=axes, design=design, samples=samples, seed=seed)


def load_spec(grid_file: str | Path | None, axes: Sequence[str] = (), *,
              design: str | None = None, samples: int | None = None,
              seed: int | None = None) -> SweepSpec:
    """A spec from a grid file and/or inline axes, as the CLI takes them.

    Args:
        grid_file: a grid YAML file (None: only ``axes``).
        axes: ``"PATH=V1,V2,..."`` (values read as YAML scalars: ``null``, ``0.5``, ``true``)
            or ``"PATH=START:STOP:NUM"``; added to (or replacing) the file's axes.
        design: overrides the file's design.
        samples: overrides the file's samples.
        seed: overrides the file's seed.

    Returns:
        The validated spec.

    Raises:
        PolicyError: a malformed axis or file.
    """
    doc: dict[str, Any] = {"grid": {}}
    where = "<--axis>"
    if grid_file is not None:
        spec = load_grid(grid_file)
        where = str(grid_file)
        doc = {"grid": {a.path: _axis_doc(a) for a in spec.axes}, "design": spec.design,
               "samples": spec.samples, "seed": spec.seed}
    for text in axes:
        path, sep, values = text.partition("=")
        if not sep or not path.strip() or not values.strip():
            raise PolicyError("<--axis>", text, "expected PATH=V1,V2,... or PATH=START:STOP:NUM")
        parts = values.split(":")
        try:
            if len(parts) == 3:
                start, stop, num = (parse_yaml(p) for p in parts)
                doc["grid"][path.strip()] = {"start": start, "stop": stop, "num": num}
            else:
                doc["grid"][path.strip()] = [parse_yaml(v) for v in values.split(",")]
        except YamlRefused as exc:
            raise PolicyError("<--axis>", text, f"a value is not read: {exc}") from None
    for key, value in (("design", design), ("samples", samples), ("seed", seed)):
        if value is not None:
            doc[key] = value
    return spec_from_dict(doc, where)


def make_spec(axes: Mapping[str, Any], *, design: Design = "grid", samples: int = 100,
              seed: int = 0) -> SweepSpec:
    """A spec from Python values: ``make_spec({"tiers.1.trigger.at_tokens": [40000, 80000]})``.

    Args:
        axes: field path → a list of values or a range dict (``start``/``stop``/``num``|``step``).
        design: grid, random or one_at_a_time.
        samples: settings drawn by the random design.
        seed: seed of the random design.

    Returns:
        The validated spec.
    """
    return spec_from_dict({"grid": dict(axes), "design": design, "samples": samples,
                           "seed": seed}, "<arguments>")


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
        shape = f" ({dims})" if spec.design == "grid" else ""
        raise PolicyError("<grid>", "", f"{size:,} settings{shape} is more than the "
                                        f"{max_cells:,} a sweep may have; use design: random or "
                                        f"one_at_a_time, or fewer values")
    for axis in spec.axes:
        _check_path(base, axis.path)
    out: dict[str, Setting] = {}
    paths = [a.path for a in spec.axes]
    for combo in _combinations(spec):
        setting = apply(base, combo, report=paths)
        out.setdefault(setting.id, setting)
    return list(out.values())


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


def _axis_doc(axis: Axis) -> Any:
    """An axis back as the YAML value it came from."""
    if axis.values:
        return list(axis.values)
    rng = {"start": axis.start, "stop": axis.stop}
    return {**rng, "num": axis.num} if axis.num is not None else {**rng, "step": axis.step}


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


def _axis(path: str, v: Any, where: str) -> Axis:
    """One axis from its YAML value: a list, a single value, or a range mapping."""
    if isinstance(v, list):
        if not v:
            raise PolicyError(where, f"grid.{path}", "no values")
        unique: dict[str, Any] = {}
        for x in v:
            unique.setdefault(json.dumps(x, sort_keys=True), x)
        return Axis(path=path, values=tuple(unique.values()))
    if not isinstance(v, dict):
        return Axis(path=path, values=(v,))
    unknown = set(v) - {"start", "stop", "num", "step"}
    if unknown or "start" not in v or "stop" not in v or ("num" in v) == ("step" in v):
        raise PolicyError(where, f"grid.{path}", "a range is {start, stop, num} or "
                                                 "{start, stop, step}")
    nums = [v[k] for k in ("start", "stop", "num", "step") if k in v]
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in nums):
        raise PolicyError(where, f"grid.{path}", f"range bounds must be numbers, got {v}")
    if "num" in v and (not isinstance(v["num"], int) or v["num"] < 1):
        raise PolicyError(where, f"grid.{path}.num", "expected a whole number ≥ 1")
    if "step" in v and (v["step"] <= 0 or v["stop"] < v["start"]):
        raise PolicyError(where, f"grid.{path}.step", "needs step > 0 and stop ≥ start")
    is_int = all(isinstance(v[k], int) for k in ("start", "stop", "step") if k in v)
    return Axis(path=path, start=v["start"], stop=v["stop"], num=v.get("num"),
                step=v.get("step"), is_int=is_int)


def _check_path(base: Policy, path: str) -> None:
    """Fail early, naming the path as written (a tier by its name or index, ``item_index``),
    when it does not lead to a field of the base policy."""
    node: Any = policy_to_dict(base)
    keys = path.split(".")
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
        elif isinstance(node, dict):
            if k not in node:
                close = difflib.get_close_matches(k, list(node), n=1)
                raise PolicyError(f"<{base.name}>", here, "no such field"
                                  + (f"; did you mean {close[0]!r}?" if close else "")
                                  + f" (fields: {', '.join(node)})")
            node = node.get(k)
        else:
            raise PolicyError(f"<{base.name}>", here, "is not a mapping or a list")


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
