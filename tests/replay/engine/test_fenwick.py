"""The engine's own search over sorted ints against the standard library's."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.fenwick import bisect_left


@given(st.lists(st.integers(-5, 5)).map(sorted), st.integers(-6, 6), st.data())
def test_bisect_left_equals_the_standard_librarys(a: list[int], x: int, data: st.DataObject) -> None:
    """Any sorted list (runs of equal values included), any value, any bounds inside it."""
    lo = data.draw(st.integers(0, len(a)))
    hi = data.draw(st.integers(lo, len(a)))
    assert bisect_left(a, x, lo, hi) == bisect.bisect_left(a, x, lo, hi)
