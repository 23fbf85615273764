"""``analysis.per_run.stats.request_arrays``: several replays' request columns as one array, the
values ``np.array`` of the nested lists gives to the bit (read by ``np.fromiter``, a column
every replay holds equal read once), and columns of different lengths refused rather than cut
to fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.per_run import stats
from analysis.per_run.stats import request_arrays

NAMES = ("a", "b", "c")


_N = st.integers(0, 12)
_N_REPLAYS = st.integers(1, 4)
_BOOL = st.booleans()
_ZERO_SIGN = st.sampled_from([0.0, -0.0])
_INTS = st.integers(-(2**62), 2**62)
_VALUE = {False: _INTS,
          True: st.one_of(st.none(), _INTS, st.floats(allow_nan=True, allow_infinity=True))}
_ZERO_OFTEN = {False: _INTS, True: st.one_of(st.just(0.0), _VALUE[True])}
_LISTS: dict[tuple[st.SearchStrategy[Any], int], st.SearchStrategy[list[Any]]] = {}


def _lists(of: st.SearchStrategy[Any], n: int) -> st.SearchStrategy[list[Any]]:
    """``st.lists(of, min_size=n, max_size=n)``, made once."""
    got = _LISTS.get((of, n))
    if got is None:
        got = _LISTS[(of, n)] = st.lists(of, min_size=n, max_size=n)
    return got


@st.composite
def _replays(draw: st.DrawFn, floats: bool) -> list[dict[str, list[Any]]]:
    """Replays' columns, some of them equal in every replay (read once), the float zeros of
    such a column of either sign in each (equal, other bits).  Its strategies made once, not
    at each draw: the same draws in the same order, so the same examples."""
    n = draw(_N)
    value, zero_often = _VALUE[floats], _ZERO_OFTEN[floats]
    shared = {c: draw(_lists(zero_often, n)) for c in NAMES if draw(_BOOL)}

    def column(c: str) -> list[Any]:
        if c not in shared:
            return draw(_lists(value, n))
        return [draw(_ZERO_SIGN) if isinstance(v, float) and v == 0 else v for v in shared[c]]

    return [{c: column(c) for c in NAMES} for _ in range(draw(_N_REPLAYS))]


@settings(max_examples=100, deadline=None)
@given(_replays(floats=False), _replays(floats=True))
def test_the_values_are_those_of_np_array_to_the_bit(ints: list[dict[str, list[Any]]],
                                                     floats: list[dict[str, list[Any]]]) -> None:
    """With the equal columns looked for (from any size: these are small) and without; packed
    by struct from any size, and from its least."""
    for same_from, packed_from in ((0, 0), (stats.SAME_COLUMNS_MIN_VALUES, 0),
                                   (0, stats.PACKED_MIN_VALUES)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(stats, "SAME_COLUMNS_MIN_VALUES", same_from)
            mp.setattr(stats, "PACKED_MIN_VALUES", packed_from)
            for replays, dtype in ((ints, np.int64), (floats, np.float64)):
                got = request_arrays(replays, NAMES, dtype)
                want = np.array([[rq[c] for c in NAMES] for rq in replays], dtype=dtype)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert got.tobytes() == want.tobytes()  # NaN as NaN, -0.0 unlike 0.0


def test_columns_of_different_lengths_are_refused() -> None:
    # 3 + 2 + 4 values: as many as three columns of 3, which a read of that count would take
    # without a word, the second replay's values shifted into the first's
    replays = [{"a": [1, 2, 3], "b": [4, 5], "c": [6, 7, 8, 9]}]
    with pytest.raises(ValueError, match="different lengths"):
        request_arrays(replays, NAMES, np.int64)


def test_a_list_struct_refuses_is_read_as_np_fromiter_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a float in an int column (cut to an int), None in a float one (NaN), an int beyond int64
    # (refused with np.fromiter's error): each list read alone, the others packed
    monkeypatch.setattr(stats, "PACKED_MIN_VALUES", 0)
    assert stats.lists_array([[1, 2], [1.9, 3]], np.int64, 2).tolist() == [1, 2, 1, 3]
    got = stats.lists_array([[None, 0.5], [1, 2]], np.float64, 2)
    assert np.isnan(got[0]) and got[1:].tolist() == [0.5, 1.0, 2.0]
    with pytest.raises(OverflowError):
        stats.lists_array([[1, 2], [2**63, 0]], np.int64, 2)
