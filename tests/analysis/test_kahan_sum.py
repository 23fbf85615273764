"""``analysis.per_run.stats.kahan_sum``: the compensated sum step by step, to the bit, also
where it takes a run of zeros whole (most values zero: a replay's induced costs)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from analysis.per_run import stats
from analysis.per_run.stats import kahan_sum


def _every_step(values: list[float]) -> float:
    """The compensated sum, every value stepped through (the definition)."""
    total = comp = 0.0
    for v in values:
        y = v - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


_ROUNDING = st.sampled_from([1e16, 1.0, 0.1, 3.0, 1e-16, 2.0**53, 1e308, -1e308, 0.3])
"""Values whose sums round: the compensation is then nonzero, and a zero after them moves the
sum when the sum is zero or the compensation is not below its last bit."""


@given(st.lists(st.one_of(st.sampled_from([0.0, -0.0]), _ROUNDING,
                          st.floats(allow_nan=True, allow_infinity=True)), max_size=40),
       st.integers(0, 4))
@example([1.0, 1e-16, 0.0, 1e16, 0.0, -1e16, 0.0, 0.0, 0.0], 0)
@example([1e308, 1e308, 0.0, 0.0, 0.0], 0)
@example([0.1, -0.1, 1e-20, 0.0, 0.0, 0.0, 0.0, 0.0], 0)
def test_the_sum_is_every_steps_to_the_bit(values: list[float], pad: int) -> None:
    """Mostly zeros (padded with zeros of either sign) or not, the bits of the sum taking each
    value in turn, NaN as NaN; with the zeros' shortcuts and without (the compiled module
    takes every step: ``stats._STEP_EVERY_VALUE``), a list and a tuple."""
    values = [v for x in values for v in [x] + [0.0, -0.0] * pad]
    want = _every_step(values)
    for every in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(stats, "_STEP_EVERY_VALUE", every)
            for got in (kahan_sum(values), kahan_sum(tuple(values))):
                assert (math.isnan(got) and math.isnan(want)) or _bits(got) == _bits(want), (
                    every, got, want)


def test_a_zero_after_an_infinite_sum_still_steps() -> None:
    """Infinity minus itself is NaN: a zero after an infinite sum makes the compensation NaN,
    which the sum then takes (the step is not a no-op there)."""
    values = [0.0] * 3 + [1e308, 1e308] + [0.0] * 5 + [1.0]
    assert math.isnan(_every_step(values)) and math.isnan(kahan_sum(values))
