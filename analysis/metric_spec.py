"""How a metric is declared: once, next to the analysis that defines it.

Each analysis module declares its per-run metrics as ``MetricPart``\\ s: a few
``MetricSpec``\\ s (name, unit, dtype, better direction, description, how runs
combine) and the one fast function that computes them from a replay's trace
columns (``PartInput``).  ``analysis.metrics`` collects every module's parts
(``PARTS``) and builds everything that lists metrics from them:
``METRIC_COLUMNS``, ``FLOAT_COLUMNS``, ``METRIC_DIRECTIONS``, the ratio and weight
rules of totals, the ``replay run`` summary columns.  The analysis modules' pandas
``*_summary`` functions compute the same columns independently (the readable
definition, and the tests' oracle for the fast functions).

``RunFacts`` is the type of a run's policy-independent facts (computed by
``analysis.run_facts``), which ``PartInput`` carries.

``AnalysisParams`` holds the analyses' tunable constants (thrash spacing, small
trim, re-read loop) with their defaults; the pandas and the fast paths both read
them from here.

Not here: the computations (the analysis modules), the registry (``analysis.metrics``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from replay.policy import Policy

Better = Literal["lower", "higher"]
Dtype = Literal["int64", "float64"]
Bounds = tuple[float | None, float | None]
"""(least, most) a metric's value can be; None: no bound that way."""


@dataclass(frozen=True, slots=True)
class AnalysisParams:
    """The analyses' constants, one place for the pandas and the fast path."""

    thrash_requests: int = 20
    """A summary fewer than this many requests after the previous one is thrash."""
    small_reclaim_frac: float = 0.125
    """A trim reclaiming less than this fraction of the usable window is small (1/8: the
    corrected seed harness's rule)."""
    loop_k: int = 3
    """Reads of one path that make a re-read loop."""
    loop_window_requests: int = 10
    """A loop's reads lie within this many consecutive requests."""


DEFAULT_PARAMS = AnalysisParams()
"""The defaults every metric is computed with (baselines and sweep caches assume them)."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One per-run metric column: what it is, in which unit, and which way is better."""

    name: str
    unit: str
    """What one unit is: ``count``, ``tokens``, ``requests``, ``request index``, ``bytes``,
    ``fraction``, ``per 100 requests``, ``USD``."""
    description: str
    dtype: Dtype = "int64"
    better: Better | None = None
    """Which way is better (``check`` and ``diff`` judge it); None: neither."""
    ratio: tuple[str, str, float] | None = None
    """(numerator, denominator, scale) when the metric is a ratio of two summable metrics:
    its total over runs is recomputed from their sums."""
    weight: str | None = None
    """The metric a cross-run mean of this one is weighted by (default ``n_requests``)."""
    label: str = ""
    """A short header for tables (default: the name)."""
    bounds: Bounds | None = None
    """The values a run's value can take, when not its unit's (``UNIT_BOUNDS``): a signed
    error, a ratio of counts that may exceed 1."""

    @property
    def header(self) -> str:
        return self.label or self.name

    @property
    def value_bounds(self) -> Bounds:
        """(least, most) a run's value can be: ``bounds``, else its unit's."""
        return self.bounds if self.bounds is not None else UNIT_BOUNDS.get(self.unit, (None, None))

    def refuses(self, v: float) -> str | None:
        """Why the finite number ``v`` cannot be a run's value of this metric (a stored one
        read back: a baseline), None when it can: not whole for an ``int64`` metric, or beyond
        ``value_bounds``."""
        if self.dtype == "int64" and not float(v).is_integer():
            return f"{v!r} is not a whole number, and {self.name} is one ({self.unit})"
        least, most = self.value_bounds
        if least is not None and v < least:
            return f"{v!r} is below {least:g}, the least {self.name} can be ({self.unit})"
        if most is not None and v > most:
            return f"{v!r} is above {most:g}, the most {self.name} can be ({self.unit})"
        return None

    def format(self, v: Any) -> str:
        """A value of this metric for people (``format_value`` of its unit)."""
        return format_value(self.unit, v)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the metrics need from one recorded run, whatever the policy."""

    run_id: str
    static_rereads: dict[str, int]
    """The ``rereads_*`` counts no eviction can change (reads, loops, refreshes, retries, …)."""
    candidates: tuple[tuple[int, int, int, int], ...]
    """Re-reads that are redundant unless the policy evicted the previous result first:
    (request of the re-read, previous result's msg, its block, the re-read's result tokens)."""
    n_compactions: int
    """Compactions the original harness recorded."""
    first_compaction_request: float
    """The first request after a recorded compaction (``inf`` when none)."""


@dataclass(frozen=True, slots=True)
class PartInput:
    """What a fast function reads: one replay's trace columns, its policy and run facts."""

    requests: Mapping[str, list[Any]]
    actions: Mapping[str, list[Any]]
    evictions: Mapping[str, list[Any]]
    applied: list[bool]
    """Per action: not undone."""
    policy: Policy
    facts: RunFacts | None
    """The run's policy-independent facts (``analysis.run_facts``); None when not read (only
    parts with ``needs_facts=False`` can be computed then)."""
    params: AnalysisParams = DEFAULT_PARAMS
    arrays: Any = None
    """The request columns of the replays computed together with this one as NumPy arrays,
    each converted once for every part: an ``analysis.per_run.columns.BatchArrays`` (typed
    there: that module is a layer above this one); None: none shared."""


Compute = Callable[[PartInput], dict[str, Any]]
"""A fast function: one replay's values of a part's metrics."""
ComputeMany = Callable[[Sequence[PartInput]], list[dict[str, Any]]]
"""A fast function of several replays of one run at once (as many requests each), in order."""


@dataclass(frozen=True, slots=True)
class MetricPart:
    """Metrics computed together by one fast function over a replay's columns."""

    name: str
    metrics: tuple[MetricSpec, ...]
    compute: Compute
    """Returns a value for each of ``metrics`` (and nothing else)."""
    needs_facts: bool = True
    many: ComputeMany | None = None
    """The same for several replays of one run at once (their request columns converted to
    NumPy in one call, each operation made once for all of them: a sweep's unit); None:
    ``compute`` of each.  A part that has it defines ``compute`` with it (``one_of``)."""
    names: tuple[str, ...] = field(init=False)
    """The metrics' names, in order (made once: a fast function orders its row by them)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(m.name for m in self.metrics))

    def compute_many(self, inps: Sequence[PartInput]) -> list[dict[str, Any]]:
        """``compute`` of each of several replays of one run (as many requests each)."""
        return self.many(inps) if self.many is not None else [self.compute(i) for i in inps]


def one_of(many: ComputeMany) -> Compute:
    """The fast function of one replay, from the part's function of several (one definition)."""

    def one(inp: PartInput) -> dict[str, Any]:
        return many((inp,))[0]

    return one


UNIT_BOUNDS: dict[str, Bounds] = {
    "count": (0, None), "tokens": (0, None), "requests": (0, None), "bytes": (0, None),
    "seconds": (0, None), "per 100 requests": (0, None), "USD": (0, None),
    "request index": (-1, None), "fraction": (0, 1)}
"""(least, most) a value in each unit can be: counts, sizes and costs (prices are never
negative: ``replay.policy.check``) are not negative, a request index is -1 when there is none,
a fraction is a share of a whole (a metric that is not says so: ``MetricSpec.bounds``)."""
WHOLE_UNITS = frozenset({"count", "tokens", "requests", "request index", "bytes", "seconds"})
"""Units shown as whole numbers (``1,234``): a mean of them too."""
PRICE_UNIT = "USD/Mtok"
"""A price, USD a million tokens: shown with two decimals, three when it has them (0.125)."""
UNKNOWN_TEXT = "–"
"""A value that cannot be computed, in a table or a report."""


def format_value(unit: str, v: Any) -> str:
    """``v`` for people, one rule per unit: counts, tokens, requests and bytes as whole numbers
    with separators (``133,847,218``), fractions as a percentage (``12.3%``; two significant
    digits below 0.1 %), USD with two decimals (``16.10``), anything else with up to two
    decimals (a whole number whole); ``UNKNOWN_TEXT`` for None or NaN.  JSON and CSV keep the raw value.
    A cost under half a cent has two significant digits (``0.0026``: two decimals would read as
    no cost); a ``PRICE_UNIT`` value three decimals when it has them (``0.125``)."""
    if v is None or isinstance(v, numbers.Real) and math.isnan(v):
        return UNKNOWN_TEXT
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return str(v)
    if isinstance(v, numbers.Integral) and unit not in ("fraction", "USD", PRICE_UNIT):
        return f"{int(v):,}"
    x = float(v)
    if unit in WHOLE_UNITS:
        return f"{round(x):,}"
    if unit == "fraction":
        p = x * 100
        return f"{p:,.1f}%" if abs(p) >= 0.1 or p == 0 else f"{p:.2g}%"
    if unit == "USD" and 0 < abs(x) < 0.005:  # (two decimals would print a cost as 0.00)
        return f"{x:.2g}" if abs(x) >= 1e-6 else f"{x:.1e}"  # (not 0.0000000000000…22)
    if unit == PRICE_UNIT:  # a price a million tokens: $0.125 is not $0.12
        return f"{x:,.3f}".removesuffix("0")
    return f"{x:,.2f}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` things in words: ``1 change``, ``2 changes``, ``1,204 policies`` (``plural``
    when adding an s will not do)."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def run_facts_of(inp: PartInput) -> RunFacts:
    """The run facts of ``inp``; ValueError when they were not read."""
    if inp.facts is None:
        raise ValueError("this metric needs the run's facts (analysis.run_facts)")
    return inp.facts
