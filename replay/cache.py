"""The provider's prefix cache and prices for one request.

Given the request's size, the prefix it shares with the previous request and
its output, ``request_cache`` applies the provider model: cached prefixes come
in multiples of ``granularity_tokens`` and only from ``min_prefix_tokens``; with
a write premium (Anthropic) the uncached part is written to the cache and
priced as a write, without one (OpenAI, vLLM) it is plain input.  Each token is
priced once: fresh + cache write + cache read = the request's input.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.policy import Cache


@dataclass(frozen=True, slots=True)
class RequestCache:
    """Where one request's input tokens came from, and its cost."""

    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    cost_usd: float


def request_cache(cache: Cache, input_tokens: int, common_prefix_tokens: int,
                  output_tokens: int) -> RequestCache:
    """Cache read / write / fresh split and cost of one request."""
    cached = 0
    if cache.provider != "none" and common_prefix_tokens >= cache.min_prefix_tokens:
        g = max(1, cache.granularity_tokens)
        cached = (min(common_prefix_tokens, input_tokens) // g) * g
        if cache.provider == "vllm" and cached >= input_tokens:
            cached = max(0, input_tokens - g)  # the last block is always computed
    rest = input_tokens - cached
    p = cache.prices
    if cache.provider == "none" or p.cache_write_per_mtok is None:
        write, fresh = 0, rest
    else:
        write, fresh = rest, 0
    cost = (fresh * p.input_per_mtok + cached * p.cache_read_per_mtok
            + write * (p.cache_write_per_mtok or 0.0) + output_tokens * p.output_per_mtok) / 1e6
    return RequestCache(cached, write, fresh, round(cost, 9))
