"""The provider's prefix cache and prices for one request.

Given the request's size, the prefix it shares with the previous request and
its output, ``request_cache`` applies the provider model: cached prefixes come
in multiples of ``granularity_tokens`` and only from ``min_prefix_tokens``; with
a write premium (Anthropic) the uncached part is written to the cache and
priced as a write, without one (OpenAI, vLLM) it is plain input.  Each token is
priced once: fresh + cache write + cache read = the request's input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from replay.policy.providers import Cache


@dataclass(frozen=True, slots=True)
class RequestCache:
    """Where one request's input tokens came from, and its cost."""

    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    cost_usd: float


def request_cache(cache: Cache, input_tokens: int, common_prefix_tokens: int,
                  output_tokens: int, shortfall_tokens: int = 0) -> RequestCache:
    """Cache read / write / fresh split and cost of one request."""
    return RequestCache(*pricer(cache)(input_tokens, common_prefix_tokens, output_tokens,
                                       shortfall_tokens))


def pricer(cache: Cache) -> Callable[[int, int, int, int], tuple[int, int, int, float]]:
    """``request_cache`` with the provider's constants bound once:
    ``(input, common prefix, output, shortfall) -> (cached, cache write, fresh, cost)``
    (``prices`` for one request)."""
    batch = prices(cache)

    def split(input_tokens: int, common_prefix_tokens: int, output_tokens: int,
              shortfall_tokens: int) -> tuple[int, int, int, float]:
        cached, write, fresh, cost = batch([input_tokens], [common_prefix_tokens],
                                           [output_tokens], [shortfall_tokens])
        return cached[0], write[0], fresh[0], cost[0]

    return split


_ROUND_EXACT_BELOW: Final = 2.0 ** 50
"""Below it (and above 0), ``round(usd, 9)`` equals ``(n + (frac > 0.5)) / 1e9`` for the float
``usd * 1e9 = n + frac`` (n whole), unless ``frac`` is 0.5.  ``round`` rounds the exact value
of ``usd`` to nine decimals, half to even, and returns the float nearest that decimal, N × 10**-9.
The float product is within half its ulp of the exact one, and a float of this size other than
n + 0.5 is at least an ulp away from n + 0.5 (ulps are at most 2**-3 here, so n + 0.5 is a
float): the exact product is on the same side of the half and rounds to the same N.  ``n`` and
``frac`` are exact (``n``, the product truncated, is a float here; ``frac`` = product − n is
exact by Sterbenz's lemma for a product of at least 1, and is the product below 1: what
``% 1.0`` gives), and ``N / 1e9`` of two exact floats is the float nearest N × 10**-9, as
``round``'s parse of its decimal string is.  At a half, at 0 (signed
zeros), past the bound, or for nan and infinities: ``round`` itself
(tests/replay/engine/test_cache.py checks the two against each other)."""


Prices = Callable[[list[int], list[int], list[int], list[int]],
                  tuple[list[int], list[int], list[int], list[float]]]
"""Columns of (input, common prefix, output, shortfall) -> columns of (cached, cache write,
fresh, cost)."""


def prices(cache: Cache) -> Prices:
    """The provider's cache model and prices with its constants bound once, over columns of
    requests (the replay prices all its requests in one call, after its loop).

    ``shortfall``: tokens the real cache read less than this model on the recorded request
    (``replay.engine.cache_anchor``; negative: more), taken off the model's read."""
    p = cache.prices
    none = cache.provider == "none"
    vllm = cache.provider == "vllm"
    min_prefix, g = cache.min_prefix_tokens, max(1, cache.granularity_tokens)
    premium = not none and p.cache_write_per_mtok is not None
    p_in, p_read = p.input_per_mtok, p.cache_read_per_mtok
    p_write, p_out = p.cache_write_per_mtok or 0.0, p.output_per_mtok

    def batch(inputs: list[int], commons: list[int], outputs: list[int],
              shortfalls: list[int]) -> tuple[list[int], list[int], list[int], list[float]]:
        # one typed loop over lists made at their length (compiled: a bound ``append`` kept
        # in a local, or an untyped ``map`` result, made every operation below a generic call
        # on boxed values — about 4,500 instructions a request, where the arithmetic is a few
        # dozen; an append is a call, a store by index a few instructions)
        n = len(inputs)
        cached_all, rest, cost = [0] * n, [0] * n, [0.0] * n
        for i in range(n):
            input_tokens, output = inputs[i], outputs[i]
            cached = 0
            if not none:
                common, shortfall = commons[i], shortfalls[i]
                # min/max of two ints as conditional expressions (FURB136 off): a request
                # each, and a builtin min/max costs about ten times the comparison
                if common >= min_prefix:
                    cached = ((common if common < input_tokens else input_tokens)  # noqa: FURB136
                              // g) * g
                    if vllm and cached >= input_tokens:
                        # the last block is always computed
                        cached = input_tokens - g if input_tokens > g else 0
                if shortfall:
                    cached = cached - shortfall if cached > shortfall else 0
                    cached = cached if cached < input_tokens else input_tokens  # noqa: FURB136
            cached_all[i] = cached
            new = rest[i] = input_tokens - cached
            # (the terms in the order of (fresh, cached, write, output) × their prices: the
            # same float sum, zeros included)
            f, w = (0, new) if premium else (new, 0)
            usd = (f * p_in + cached * p_read + w * p_write + output * p_out) / 1e6
            # round(usd, 9) — about 2,900 instructions: a decimal string made and parsed —
            # as float arithmetic where that is provably the same float (see _ROUND_EXACT_BELOW)
            nano = usd * 1e9
            if 0.0 < nano < _ROUND_EXACT_BELOW:
                frac = nano - float(int(nano))  # nano % 1.0, without libm's fmod
                if frac != 0.5:
                    cost[i] = (nano - frac + 1.0 if frac > 0.5 else nano - frac) / 1e9
                    continue
            cost[i] = round(usd, 9)
        zeros = [0] * len(inputs)
        write, fresh = (rest, zeros) if premium else (zeros, rest)
        return cached_all, write, fresh, cost

    return batch
