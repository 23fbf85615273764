"""Statistics over plain lists that reproduce pandas' arithmetic step for step (no pandas).

The fast per-run metrics (``analysis.per_run``) use them so that their values equal the
pandas roll-ups' to the last bits.
"""

from __future__ import annotations

import functools
import itertools
import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.per_run._build import BUILD
from replay.packed_values import packer


def mean(values: Sequence[float] | np.ndarray) -> float:
    """NumPy's mean (pairwise sum), as pandas takes it; NaN when empty.

    ``np.mean`` of a float64 array is its ``np.add.reduce`` divided by the count; calling the
    reduction directly gives the same bits for a fifth of ``np.mean``'s overhead.  A list of
    ints whose magnitudes sum below 2**53 (counts, tokens) is summed by Python, exactly, with no
    array: each partial sum of the float reduction is then a whole number below 2**53, exact
    too, so the two sums are the same number (a few µs less a call: a run's summaries)."""
    n = len(values)
    if not n:
        return math.nan
    if (isinstance(values, list) and set(map(type, values)) == _INT
            and sum(map(abs, values)) < _EXACT_INT):
        return float(sum(values)) / n
    return float(np.add.reduce(np.asarray(values, dtype="float64"))) / n


_INT = {int}
_EXACT_INT = 2**53
"""Whole numbers below this are exact as float64 (and so is every sum of them below it)."""


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
    signs.  Where most values are zero, the loop steps through the others and takes a run of
    zeros whole when a zero's step leaves the sum and its compensation as they are: the sum
    finite and unmoved by taking the compensation off (the step then takes exactly that off,
    and gives the compensation back: a zero one as +0.0, which no later step tells from -0.0);
    else step by step, until one does.  A list whose first and last values are not zero (a
    replay's request costs) is taken step by step without counting its zeros, and so is every
    list when this module is compiled (``_STEP_EVERY_VALUE``): the same sum either way, the
    shortcuts only skip steps that change nothing."""
    if isinstance(values, list) and (_STEP_EVERY_VALUE or values and values[0] and values[-1]):
        return _kahan_every(values)  # (compiled; or a replay's request costs: no zeros counted)
    if not any(values):
        return 0.0
    n_zero = values.count(0.0) if isinstance(values, list) else sum(1 for v in values if not v)
    if n_zero * 2 < len(values):
        return _kahan_every(list(values))
    total = comp = 0.0
    n = len(values)
    at = n  # the next value to take (none before the first nonzero one: zeros then are no-ops)
    for i in itertools.chain(itertools.compress(itertools.count(), values), (n,)):  # nonzero, NaN
        while at < i and not (total - comp == total and total - total == 0.0):
            total, comp = _kahan_step(total, comp, values[at])
            at += 1
        if i < n:
            total, comp = _kahan_step(total, comp, values[i])
            at = i + 1
    return total


_STEP_EVERY_VALUE = BUILD.compiled
"""This module runs compiled (``analysis.per_run._build``): a step of ``_kahan_every`` then
costs a few instructions, fewer than looking for the zeros (``any``, ``count``) would save."""


def _kahan_every(values: list[float]) -> float:
    """``kahan_sum`` step by step through every value: a list, typed (compiled, a few
    instructions on doubles a value; the same IEEE operations in the same order)."""
    total = comp = 0.0
    for v in values:
        y = v - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total


def _kahan_step(total: float, comp: float, v: float) -> tuple[float, float]:
    """``kahan_sum``'s step: the sum and the compensation after taking ``v``."""
    y = v - comp
    t = total + y
    return t, (t - total) - y


SAME_COLUMNS_MIN_VALUES = 1024
"""Values of a column of all replays (requests × replays) from which ``request_arrays`` looks
for the columns every replay holds equal.  Measured (5 int columns, 2 of them equal in every
replay, best of 5 x 200 calls, load ~5): requests x replays 5 x 2 87 -> 8 us without looking,
28 x 32 460 -> 411, 291 x 2 204 -> 183; 40 x 32 553 against 570, 291 x 4 321 against 380, 291 x
32 2,785 against 3,880 with looking."""


def request_arrays(requests: Sequence[Any], names: Sequence[str], dtype: Any) -> np.ndarray:
    """The request columns ``names`` of several replays of one run (as many requests each) as
    one array, replays × columns × requests, converted in one call (None → NaN as float64).
    Each replay's row of a column is contiguous, so a reduction along it (``axis=-1``) takes
    the same steps, and gives the same bits, as the reduction of that replay's column alone.

    The values are read by ``lists_array``, list by list (the same values as ``np.array`` of
    the nested lists gives, in under half its time); columns of different lengths are refused
    as ``np.array`` refuses them.  A column
    every replay holds equal (a run's recorded counts and output tokens: no setting changes
    them) is read once and copied to each replay's row: equal values give equal bits, save a
    0.0 for a -0.0, so a float column with a zero is read for each replay as the others are.
    Only for a column of ``SAME_COLUMNS_MIN_VALUES`` values or more: looking for the equal
    columns costs more than it saves below (the same array either way)."""
    cols = [rq[c] for rq in requests for c in names]
    n = len(cols[0]) if cols else 0
    if any(len(col) != n for col in cols):
        raise ValueError(f"request columns of different lengths: {sorted({len(c) for c in cols})}")
    if len(requests) > 1 and n * len(requests) >= SAME_COLUMNS_MIN_VALUES:
        same = _same_columns(requests, names, dtype, n)
        if same:
            return _with_same(requests, names, dtype, n, same)
    return lists_array(cols, dtype, n).reshape(len(requests), len(names), n)


def lists_array(cols: Sequence[list[Any]], dtype: Any, n: int) -> np.ndarray:
    """The lists ``cols`` (``n`` values each) one after the other as one flat array of
    ``dtype``: the values ``np.fromiter`` of their chain gives, to the bit.

    An int64 or float64 array of ``PACKED_MIN_VALUES`` values or more is written list by list
    by ``struct`` (``_packer``: a list
    packed in one call, ~7 ns a value where ``np.fromiter`` takes ~15, the same conversions:
    an int as itself, a float as its bits, an int as a float as ``float()`` rounds it); a list
    ``struct`` refuses (a None, a float in an int column, an int out of range) is read by
    ``np.fromiter``, as ever (or refused with its error)."""
    packer = _packer(dtype, n) if n * len(cols) >= PACKED_MIN_VALUES else None
    if packer is None:
        return np.fromiter(itertools.chain.from_iterable(cols), dtype=dtype, count=n * len(cols))
    out = np.empty(n * len(cols), dtype=dtype)
    pack_into, size, buf = packer.pack_into, packer.size, out.data
    for k, col in enumerate(cols):
        try:
            pack_into(buf, k * size, *col)
        except (struct.error, TypeError, OverflowError):
            out[k * n:(k + 1) * n] = np.fromiter(col, dtype=dtype, count=n)
    return out


PACKED_MIN_VALUES = 64
"""Values from which ``lists_array`` packs by ``struct``: below, one ``np.fromiter`` call costs
less than a call a list (a replay of a short run, alone)."""


@functools.lru_cache(maxsize=64)
def _packer(dtype: Any, n: int) -> struct.Struct | None:
    """What packs ``n`` values of the NumPy type ``dtype``, as the machine holds them; None for
    another type than int64 and float64 (``replay.packed_values.packer``, the ingest's too)."""
    code = {np.dtype(np.int64): "q", np.dtype(np.float64): "d"}.get(np.dtype(dtype))
    return None if code is None else packer(code, n)


def _same_columns(requests: Sequence[Any], names: Sequence[str], dtype: Any,
                  n: int) -> dict[int, np.ndarray]:
    """Column position → its values, for the columns every replay of ``requests`` holds equal
    (their last values compared first: a column a setting changes differs there, mostly), read
    once; a float column with a zero is left out (-0.0 == 0.0, their bits differ)."""
    out: dict[int, np.ndarray] = {}
    first, rest = requests[0], requests[1:]
    for k, c in enumerate(names):
        col = first[c]
        if n and any(rq[c][-1] != col[-1] for rq in rest):
            continue
        if all(rq[c] is col or rq[c] == col for rq in rest):
            values = lists_array((col,), dtype, n)
            if values.dtype.kind != "f" or values.all():
                out[k] = values
    return out


def _with_same(requests: Sequence[Any], names: Sequence[str], dtype: Any, n: int,
               same: dict[int, np.ndarray]) -> np.ndarray:
    """``request_arrays`` when the columns ``same`` are equal in every replay: those copied,
    the others read in one call as ever."""
    out = np.empty((len(requests), len(names), n), dtype=dtype)
    for k, values in same.items():
        out[:, k] = values
    rest = [k for k in range(len(names)) if k not in same]
    if rest:
        own = [names[k] for k in rest]
        flat = lists_array([rq[c] for rq in requests for c in own], dtype, n)
        out[:, rest] = flat.reshape(len(requests), len(own), n)
    return out
