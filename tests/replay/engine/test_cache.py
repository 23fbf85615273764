"""The prices' cost column: the float arithmetic that stands for ``round(usd, 9)`` gives the same
float as ``round`` itself, on any cost and on the ones next to a half of the ninth decimal.

The expected cost is computed here the way the engine computed it before (``round`` of the
summed prices), not with the engine's own rounding.
"""

from __future__ import annotations

import math
import struct

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.cache import prices
from replay.policy.providers import Cache, Prices


def _costs(per_mtok: list[float]) -> tuple[list[float], list[float]]:
    """The engine's costs of one output token at each price, and ``round``'s (a provider
    with no cache, no input: the cost is the output's alone)."""
    got: list[float] = []
    for p in per_mtok:  # one Cache per price: the price is a constant of the batch
        batch = prices(Cache(provider="none", prices=Prices(output_per_mtok=p)))
        got += batch([0], [0], [1], [0])[3]
    return got, [round((0 * 3.0 + 0 * 0.3 + 0 * 3.75 + 1 * p) / 1e6, 9) for p in per_mtok]


def _bits(xs: list[float]) -> list[bytes]:
    """Each float's bytes: a signed zero or a nan compares as itself, not as equal."""
    return [struct.pack("<d", x) for x in xs]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20))
def test_cost_is_round_to_nine_decimals_on_any_float(per_mtok: list[float]) -> None:
    got, want = _costs(per_mtok)
    assert _bits(got) == _bits(want)


@given(st.one_of(st.integers(0, 2 ** 20), st.integers(2 ** 48, 2 ** 56)),
       st.sampled_from([0.5, 0.4995, 0.5005, 0.0, 0.999999, 1e-9]), st.integers(-3, 3))
def test_cost_is_round_to_nine_decimals_next_to_a_half(whole: int, frac: float,
                                                        ulps: int) -> None:
    """Costs a few floats either side of ``whole + frac`` billionths of a dollar: the halves
    ``round`` takes to even, small and large, on both sides of the fast path's bound (2**50)."""
    nano = (whole + frac) / 1e9
    for _ in range(abs(ulps)):
        nano = math.nextafter(nano, math.inf if ulps > 0 else -math.inf)
    got, want = _costs([nano * 1e6])
    assert _bits(got) == _bits(want)


def test_cost_at_the_samples_scale() -> None:
    """Every cost of up to 2,000,000 tokens at a list price, against ``round``."""
    tokens = list(range(0, 2_000_000, 7919))
    for p in (3.0, 0.3, 3.75, 15.0, 1.25, 0.125, 1.0, 0.1, 5.0, 0.5, 6.25, 25.0):
        batch = prices(Cache(provider="anthropic", min_prefix_tokens=1024,
                             prices=Prices(input_per_mtok=p, cache_read_per_mtok=p / 10,
                                           cache_write_per_mtok=p * 1.25,
                                           output_per_mtok=p * 5)))
        commons = [t // 3 for t in tokens]
        cached, write, _fresh, cost = batch(tokens, commons, [t // 50 for t in tokens],
                                            [0] * len(tokens))
        want = [round((0 * p + c * (p / 10) + w * (p * 1.25) + (t // 50) * (p * 5)) / 1e6, 9)
                for c, w, t in zip(cached, write, tokens)]
        assert _bits(cost) == _bits(want)


def test_cost_past_the_bound_is_rounds() -> None:
    """Costs of 2**53 billionths and more, where the float product has no fraction left and
    the arithmetic would be off by one in the ninth decimal (each found against ``round``):
    ``round`` is used there."""
    got, want = _costs([14291132401891.756, 20637568399577.83, 266611779656992.06,
                        1833201842734923.0, 3.2336419288121336e+16])
    assert _bits(got) == _bits(want)
