"""Tolerances of ``replay check``: how far each metric may move the bad way.

``load_tolerances`` reads them from YAML: ``+0`` exact, ``+3`` absolute, ``+5%`` relative to
the baseline value; ``+`` marks lower-is-better, ``-`` higher-is-better, ``±`` either way (then
an improvement beyond it fails too), no sign the metric's known direction
(``METRIC_DIRECTIONS``; either way if none); ``any`` never fails.  ``Tolerances.for_metric``
gives the one that applies to a metric.

Not here: judging values with them (``analysis.check.gate``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from analysis.check.baseline import MAX_VALUE, CheckError
from analysis.metrics import METRIC_COLUMNS, METRIC_DIRECTIONS
from replay.safe_yaml import YamlRefused, named_by_mistake, read_yaml_file

Direction = Literal["lower", "higher", "either"]
_TOL = re.compile(r"^\s*(?P<sign>\+/-|\+-|±|\+|-)?\s*"
                  r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<pct>%)?\s*$", re.ASCII)
"""A tolerance as written: ASCII digits only (``\\d`` took any script's: ``+٥%``, an
Arabic-Indic five that reads as ``+o%`` or ``+0%`` in a review, allowed 5 %)."""
_DIRECTIONS: dict[str, Direction] = {"lower": "lower", "higher": "higher", "either": "either"}
_SIGNS: dict[str, Direction] = {"+": "lower", "-": "higher", "±": "either", "+-": "either",
                                "+/-": "either"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tolerance:
    """How far one metric may move the bad way before it is a regression."""

    amount: float
    """Absolute, in the metric's unit, or a fraction of the baseline value when ``relative``."""
    relative: bool = False
    direction: Direction = "either"
    checked: bool = True
    """False for ``any``: moves are reported, never failed."""

    def allowed(self, base: float) -> float:
        """The largest move allowed from ``base``."""
        return self.amount * abs(base) if self.relative else self.amount

    def __str__(self) -> str:
        if not self.checked:
            return "any"
        sign = {"lower": "+", "higher": "-", "either": "±"}[self.direction]
        return f"{sign}{self.amount * 100:g}%" if self.relative else f"{sign}{self.amount:g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tolerances:
    """Tolerances by metric, a default for the rest, and direction overrides."""

    default: Tolerance = Tolerance(amount=0.0)
    """Applies to metrics not listed (its sign is ignored: directions come from the metric)."""
    metrics: tuple[tuple[str, Tolerance], ...] = ()
    directions: tuple[tuple[str, Direction], ...] = ()
    source: str = "every metric exact"

    def for_metric(self, name: str) -> Tolerance:
        """The tolerance that applies to ``name``, with its direction resolved."""
        listed = dict(self.metrics)
        if name in listed:
            return listed[name]
        direction = dict(self.directions).get(name) or _known_direction(name) or "either"
        return Tolerance(amount=self.default.amount, relative=self.default.relative,
                         direction=direction, checked=self.default.checked)

    def validate(self, known: Iterable[str]) -> None:
        """Raise ``CheckError`` naming any tolerance for a metric not in ``known``."""
        known = set(known)
        for key, name in [*(("", n) for n, _ in self.metrics), *(("direction.", n) for n, _ in
                                                                 self.directions)]:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise CheckError(f"{self.source}: {key}{name}: unknown metric{hint}")


def load_tolerances(path: Path) -> Tolerances:
    """Read a tolerances YAML file.

    The file maps ``default`` and metric names to tolerances (``+0``, ``+3``, ``+5%``,
    ``-0.5%``, ``±1%``, ``any``) and ``direction`` to a mapping of metric → ``lower`` /
    ``higher`` / ``either``.  Metric names are checked against the metrics later
    (``Tolerances.validate``).

    Raises:
        CheckError: the file is missing, not YAML, or a value is malformed (naming the key).
    """
    where = str(path)
    try:
        doc = read_yaml_file(path, strings_only=True)
    except FileNotFoundError:
        raise CheckError(f"{where}: no such tolerances file") from None
    except IsADirectoryError:
        raise CheckError(f"{where}: a folder, not a tolerances file") from None
    except YamlRefused as exc:
        raise CheckError(f"{where}: not read as tolerances: {exc}") from None
    except OSError as exc:
        raise CheckError(f"{where}: cannot read: {exc.strerror or exc}") from None
    doc = {} if doc in (None, "") else doc
    if not isinstance(doc, dict):
        raise CheckError(f"{where}: expected a mapping of metric names to tolerances")
    if named_by_mistake(doc, _KEYS, close=True):  # neither its keys nor its values quoted: a file named
        # by mistake (--tolerances /etc/shadow, a secrets file) was echoed back
        raise CheckError(f"{where}: not a tolerances file: none of its top-level keys is "
                         f"default, direction or a metric name")
    directions = doc.pop("direction", {})
    if not isinstance(directions, dict):
        raise CheckError(f"{where}: direction: expected a mapping of metric names to "
                         f"lower / higher / either")
    overrides: dict[str, Direction] = {}
    for name, d in directions.items():
        if not isinstance(d, str) or d not in _DIRECTIONS:  # a list or mapping: no hash
            raise CheckError(f"{where}: direction.{name}: {d!r} is not lower, higher or either")
        overrides[name] = _DIRECTIONS[d]
    default = _parse(doc.pop("default", "+0"), where, "default", "either")
    listed = tuple((name, _parse(text, where, name, overrides.get(name) or _known_direction(name)))
                   for name, text in doc.items())
    return Tolerances(default=default, metrics=listed, directions=tuple(overrides.items()),
                      source=where)


_KEYS = frozenset(("default", "direction", *METRIC_COLUMNS, *METRIC_DIRECTIONS))
"""A tolerances file's top-level keys (``named_by_mistake``: a file with none of them, nor one
close to them, is refused unquoted)."""


def _parse(text: object, where: str, key: str, known: Direction | None) -> Tolerance:
    """``+5%`` and friends → Tolerance; ``known`` is the metric's direction if it has one."""
    if not isinstance(text, str):
        raise CheckError(f"{where}: {key}: expected a tolerance such as +0, +3, +5%, -0.5% or "
                         f"any, got a {type(text).__name__}")
    if text.strip() == "any":
        return Tolerance(amount=0.0, direction=known or "either", checked=False)
    m = _TOL.match(text)
    if m is None:
        raise CheckError(f"{where}: {key}: {text!r} is not a tolerance (write +0, +3, +5%, "
                         f"-0.5%, ±1% or any)")
    amount = float(m["num"]) / (100.0 if m["pct"] else 1.0)
    if not amount <= MAX_VALUE:  # 1e309 digits read as inf: every move passed, "+inf" shown
        shown = text.strip() if len(text.strip()) <= 24 else \
            f"{text.strip()[:12]}… ({len(text.strip())} characters)"
        raise CheckError(f"{where}: {key}: {shown} is beyond the largest tolerance, "
                         f"{MAX_VALUE:.0e} (write any to accept every move)")
    stated = _SIGNS.get(m["sign"] or "")
    if key == "default":
        stated = None
    elif stated in ("lower", "higher") and known not in (None, "either", stated):
        fixed = ("+" if known == "lower" else "-") + text.strip().lstrip("+-")
        raise CheckError(f"{where}: {key}: {text!r} allows the metric to "
                         f"{'rise' if stated == 'lower' else 'fall'}, but {known} is better for "
                         f"{key}; write {fixed} or set direction.{key}")
    return Tolerance(amount=amount, relative=bool(m["pct"]), direction=stated or known or "either")


def _known_direction(name: str) -> Direction | None:
    d = METRIC_DIRECTIONS.get(name)
    return "lower" if d == "lower" else "higher" if d == "higher" else None
