"""Sweep specs: the field paths to vary, their values, and a design.

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

- ``grid`` — the Cartesian product of every axis (refused above
  ``analysis.sweep.grid.MAX_CELLS``, with the size in the message);
- ``random`` — ``samples`` settings, each axis drawn independently: uniformly
  between a range's bounds, or one of a list's values;
- ``one_at_a_time`` — the base, then each axis through its values with every
  other field at the base's value.

Not here: the settings a spec makes of a base policy (``analysis.sweep.grid``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from replay.errors import PolicyError
from replay.policy.check import MAX_INT
from replay.safe_yaml import YamlRefused, named_by_mistake, parse_yaml, read_yaml_file

Design = Literal["grid", "random", "one_at_a_time"]
DESIGNS: tuple[str, ...] = ("grid", "random", "one_at_a_time")


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
    n_given: int = 0
    """Values as written, a value given twice counted twice (0: as many as ``values``):
    ``count`` and the spec's ``size`` say what the grid asked for."""

    @property
    def count(self) -> int:
        """Values of the axis as given (before a value given twice, or rounding, merges any),
        without listing them."""
        if self.values:
            return self.n_given or len(self.values)
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
    source: str = "<grid>"
    """Where the axes came from (the grid file, ``<--axis>``), named in errors."""

    @property
    def size(self) -> int:
        """Settings the design asks for (before duplicates are dropped)."""
        if self.design == "random":
            return self.samples
        sizes = [a.count for a in self.axes]
        if self.design == "one_at_a_time":
            return 1 + sum(sizes)
        return math.prod(sizes)


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
    keys = ("grid", "design", "samples", "seed")
    unknown = set(doc) - set(keys)
    if named_by_mistake(doc, keys):  # its keys not quoted: maybe no grid file at all
        raise PolicyError(where, "", "not a grid file: none of its top-level keys is grid, "
                                     "design, samples or seed")
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
    return SweepSpec(axes=axes, design=design, samples=samples, seed=seed, source=where)


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
        PolicyError: a malformed axis or file; no axis at all; ``samples`` or ``seed`` given
            for a design that draws nothing.
    """
    if grid_file is None and not axes:
        raise PolicyError("<sweep>", "", "no axes: give --axis PATH=V1,V2,... (repeatable) or "
                                         "--grid FILE")
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
        if path.strip() in doc["grid"]:  # the later values would replace the earlier unseen
            raise PolicyError("<--axis>", text, f"{path.strip()} is given twice (in --axis or "
                                                "the grid file); give each field one axis")
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
    drawn = doc.get("design", "grid")
    for key, value in (("samples", samples), ("seed", seed)):
        if value is not None and drawn in DESIGNS and drawn != "random":  # (else never used)
            raise PolicyError(f"<--{key}>", "", f"only the random design draws settings; the "
                                               f"design is {drawn!r} (add --design random)")
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


def _axis_doc(axis: Axis) -> Any:
    """An axis back as the YAML value it came from."""
    if axis.values:
        return list(axis.values)
    rng = {"start": axis.start, "stop": axis.stop}
    return {**rng, "num": axis.num} if axis.num is not None else {**rng, "step": axis.step}


def _plain(x: Any) -> str:
    """What keeps ``x`` from being a value a policy field takes ('' when nothing does): text,
    a number, true/false, null, or a list or mapping (text keys) of them.  A YAML date, time,
    binary or set, or a mapping with another key, is none (its setting could not even be named:
    each ended the sweep in a TypeError traceback)."""
    if x is None or isinstance(x, (str, int, float)):  # (bool is an int)
        return ""
    if isinstance(x, list):
        return next((why for y in x if (why := _plain(y))), "")
    if isinstance(x, dict):
        if any(not isinstance(k, str) for k in x):
            key = next(k for k in x if not isinstance(k, str))
            return f"a mapping with a key that is not text ({key!r})"
        return next((why for y in x.values() if (why := _plain(y))), "")
    return f"a YAML {type(x).__name__} ({x!r}; quote it to give text)"


def _axis(path: str, v: Any, where: str) -> Axis:
    """One axis from its YAML value: a list, a single value, or a range mapping."""
    is_range = isinstance(v, dict) and not set(v) - {"start", "stop", "num", "step"}
    if not is_range and (why := _plain(v)):  # (a range's bounds are checked as numbers below)
        raise PolicyError(where, f"grid.{path}", f"not a value a policy field takes: {why}")
    if isinstance(v, list):
        if not v:
            raise PolicyError(where, f"grid.{path}", "no values")
        unique: dict[str, Any] = {}
        for x in v:
            unique.setdefault(json.dumps(x, sort_keys=True), x)
        return Axis(path=path, values=tuple(unique.values()), n_given=len(v))
    if not isinstance(v, dict):
        return Axis(path=path, values=(v,))
    unknown = set(v) - {"start", "stop", "num", "step"}
    if unknown or "start" not in v or "stop" not in v or ("num" in v) == ("step" in v):
        raise PolicyError(where, f"grid.{path}", "a range is {start, stop, num} or "
                                                 "{start, stop, step}")
    nums = [v[k] for k in ("start", "stop", "num", "step") if k in v]
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in nums):
        raise PolicyError(where, f"grid.{path}", f"range bounds must be numbers, got {v}")
    if any(not abs(x) <= MAX_INT for x in nums):  # (nan, inf or a whole number no float
        # holds made points or a count that ended the sweep in a traceback)
        raise PolicyError(where, f"grid.{path}", f"range bounds must be finite numbers of at "
                                                 f"most {MAX_INT:,} (2^53), got {v}")
    if "num" in v and (not isinstance(v["num"], int) or v["num"] < 1):
        raise PolicyError(where, f"grid.{path}.num", "expected a whole number ≥ 1")
    if "step" in v and (v["step"] <= 0 or v["stop"] < v["start"]):
        raise PolicyError(where, f"grid.{path}.step", "needs step > 0 and stop ≥ start")
    if "step" in v and not math.isfinite((v["stop"] - v["start"]) / v["step"]):
        raise PolicyError(where, f"grid.{path}.step", f"{v['step']} is too small a step for "
                                                      "its range: its points cannot be counted")
    is_int = all(isinstance(v[k], int) for k in ("start", "stop", "step") if k in v)
    return Axis(path=path, start=v["start"], stop=v["stop"], num=v.get("num"),
                step=v.get("step"), is_int=is_int)
