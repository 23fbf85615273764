"""Statistics over plain lists that reproduce pandas' arithmetic step for step (no pandas).

The fast per-run metrics (``analysis.per_run``) use them so that their values equal the
pandas roll-ups' to the last bits.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def mean(values: Sequence[float] | np.ndarray) -> float:
    """NumPy's mean (pairwise sum), as pandas takes it; NaN when empty.

    ``np.mean`` of a float64 array is its ``np.add.reduce`` divided by the count; calling the
    reduction directly gives the same bits for a fifth of ``np.mean``'s overhead."""
    n = len(values)
    return float(np.add.reduce(np.asarray(values, dtype="float64"))) / n if n else math.nan


def quantile_sorted(s: Sequence[float] | np.ndarray, q: float) -> float:
    """pandas' ``Series.quantile`` of sorted values: NumPy's linear interpolation, step for step."""
    if len(s) == 0:
        return math.nan
    virtual = (len(s) - 1) * ((q * 100.0) / 100)
    if virtual >= len(s) - 1:
        return float(s[-1])
    lo = math.floor(virtual)
    t, a, b = virtual - lo, s[lo], s[lo + 1]
    diff = b - a
    return float(b - diff * (1 - t) if t >= 0.5 else a + diff * t)


def ratio(num: float, den: float) -> float:
    """``num / den`` as a float; NaN when ``den`` is 0."""
    return float(num) / float(den) if den else math.nan


def kahan_sum(values: Sequence[float]) -> float:
    """A compensated sum, as pandas' grouped ``sum`` takes it.  Values all zero (most requests'
    induced cost) sum to 0.0 without the loop: the loop gives 0.0 for them too, whatever their
    signs."""
    if not any(values):
        return 0.0
    total = comp = 0.0
    for v in values:
        y = v - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total


def request_arrays(requests: Sequence[Any], names: Sequence[str], dtype: Any) -> np.ndarray:
    """The request columns ``names`` of several replays of one run (as many requests each) as
    one array, replays × columns × requests, converted in one call (None → NaN as float64).
    Each replay's row of a column is contiguous, so a reduction along it (``axis=-1``) takes
    the same steps, and gives the same bits, as the reduction of that replay's column alone.

    The values are read by ``np.fromiter`` from one chain of the lists, its length known (the
    same values as ``np.array`` of the nested lists gives, ~15 % less time: no nesting to
    discover); columns of different lengths are refused as ``np.array`` refuses them."""
    cols = [rq[c] for rq in requests for c in names]
    n = len(cols[0]) if cols else 0
    if any(len(col) != n for col in cols):
        raise ValueError(f"request columns of different lengths: {sorted({len(c) for c in cols})}")
    flat = np.fromiter(itertools.chain.from_iterable(cols), dtype=dtype, count=n * len(cols))
    return flat.reshape(len(requests), len(names), n)
