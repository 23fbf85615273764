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
    """``request_cache`` with the provider's constants bound once, for the replay loop:
    ``(input, common prefix, output, shortfall) -> (cached, cache write, fresh, cost)``.

    ``shortfall``: tokens the real cache read less than this model on the recorded request
    (``replay.engine.cache_anchor``; negative: more), taken off the model's read."""
    p = cache.prices
    none = cache.provider == "none"
    vllm = cache.provider == "vllm"
    min_prefix, g = cache.min_prefix_tokens, max(1, cache.granularity_tokens)
    premium = not none and p.cache_write_per_mtok is not None
    p_in, p_read = p.input_per_mtok, p.cache_read_per_mtok
    p_write, p_out = p.cache_write_per_mtok or 0.0, p.output_per_mtok

    def split(input_tokens: int, common_prefix_tokens: int, output_tokens: int,
              shortfall_tokens: int) -> tuple[int, int, int, float]:
        cached = 0
        if not none and common_prefix_tokens >= min_prefix:
            cached = (min(common_prefix_tokens, input_tokens) // g) * g
            if vllm and cached >= input_tokens:
                cached = max(0, input_tokens - g)  # the last block is always computed
        if shortfall_tokens and not none:
            cached = min(input_tokens, max(0, cached - shortfall_tokens))
        rest = input_tokens - cached
        write, fresh = (rest, 0) if premium else (0, rest)
        cost = (fresh * p_in + cached * p_read + write * p_write + output_tokens * p_out) / 1e6
        return cached, write, fresh, round(cost, 9)

    return split
