"""``analysis.per_run.stats.mean``: a list of ints summed by Python (exactly, below 2**53)
gives the bits of NumPy's pairwise float sum, whatever the sizes; floats, arrays and ints too
large take the NumPy sum itself."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.per_run.stats import mean


def _numpy_mean(values: list[int] | list[float]) -> float:
    n = len(values)
    return float(np.add.reduce(np.asarray(values, dtype="float64"))) / n if n else math.nan


_LIMITS = st.sampled_from([3, 10**6, 2**40, 2**50, 2**52, 2**60])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_mean_of_ints_is_numpys_to_the_bit(data: st.DataObject) -> None:
    hi = data.draw(_LIMITS)
    values = data.draw(st.lists(st.integers(-hi, hi), max_size=300))
    got, want = mean(values), _numpy_mean(values)
    assert (math.isnan(got) and math.isnan(want)) or got.hex() == want.hex()


def test_a_mix_of_ints_and_floats_and_bools_and_a_huge_sum_take_numpys_sum() -> None:
    for values in ([1, 0.1, 2], [True, 2, 3], [2**53, 1, 1], [0.1] * 10):
        assert mean(values).hex() == _numpy_mean(values).hex()
