"""Providers: the prefix cache and the price list a policy is replayed under, as named profiles.

A policy says what the harness does; the provider says what the server caches and what it
charges.  They are separate so that two policies compare under one price list: a policy names a
profile (``provider: anthropic-sonnet-4``) and may override any of its fields under ``cache:``;
``--provider NAME`` replaces it for every policy of a command, and ``diff``, ``report`` and the
check's comparisons put several policies under one provider and say which
(``replay.policy.pricing``).

Every profile names its source: ``../shared/reference/harness-policies.md`` part B1 (cache
mechanics) and the providers' public price lists as of 2026 (anthropic.com/pricing,
docs.claude.com prompt-caching; openai.com/api/pricing).  ``vllm`` has no list price: its prices
are an assumed self-hosted cost, said in its source.

Not here: how a request is split into cached / written / fresh tokens and priced
(``replay.engine.cache``), the policy model (``replay.policy.model``), putting policies under
a provider (``replay.policy.pricing``).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

from replay.errors import PolicyError
from replay.policy.hashing import HashedOnce, hashed_once


@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """USD per million tokens."""

    input_per_mtok: float = 3.0
    cache_read_per_mtok: float = 0.3
    cache_write_per_mtok: float | None = 3.75
    """None: the provider charges no write premium (new tokens are plain input)."""
    output_per_mtok: float = 15.0


@hashed_once  # a memo key of the engine's (replay.policy.hashing)
@dataclass(frozen=True, slots=True, kw_only=True)
class Cache(HashedOnce):
    """Prefix-cache model of the provider (``provider`` here is the caching mechanism)."""

    provider: Literal["anthropic", "openai", "vllm", "none"] = "anthropic"
    granularity_tokens: int = 1
    """Cached prefixes are multiples of this (OpenAI 128, vLLM blocks 16)."""
    min_prefix_tokens: int = 1024
    ttl_s: float = 300.0
    """Cache lifetime between requests, checked against recorded timestamps."""
    prices: Prices = field(default_factory=Prices)


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """A named provider profile: its cache and prices, and where the figures come from."""

    name: str
    cache: Cache
    source: str


DEFAULT_PROVIDER = "anthropic-sonnet-4"
"""The profile a policy without ``provider:`` starts from (equal to ``Cache()``)."""

_B1 = "harness-policies.md B1"

PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider(name="anthropic-sonnet-4", cache=Cache(
        provider="anthropic", granularity_tokens=1, min_prefix_tokens=1024, ttl_s=300.0,
        prices=Prices(input_per_mtok=3.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75,
                      output_per_mtok=15.0)),
        source=f"{_B1} (Anthropic prompt caching: minimum 1,024 tokens for Sonnet 4, 5-minute "
               "TTL, write 1.25x, read 0.1x); anthropic.com/pricing 2026: Claude Sonnet 4 / "
               "4.5 $3 input, $3.75 5-minute cache write, $0.30 cache read, $15 output"),
    Provider(name="anthropic-sonnet-4-1h", cache=Cache(
        provider="anthropic", granularity_tokens=1, min_prefix_tokens=1024, ttl_s=3600.0,
        prices=Prices(input_per_mtok=3.0, cache_read_per_mtok=0.3, cache_write_per_mtok=6.0,
                      output_per_mtok=15.0)),
        source=f"{_B1} (1-hour TTL option, write 2x); anthropic.com/pricing 2026: Claude "
               "Sonnet 4 / 4.5 $6 1-hour cache write"),
    Provider(name="anthropic-opus-4-5", cache=Cache(
        provider="anthropic", granularity_tokens=1, min_prefix_tokens=4096, ttl_s=300.0,
        prices=Prices(input_per_mtok=5.0, cache_read_per_mtok=0.5, cache_write_per_mtok=6.25,
                      output_per_mtok=25.0)),
        source=f"{_B1} (minimum 4,096 tokens for Opus 4.5); anthropic.com/pricing 2026: "
               "Claude Opus 4.5 $5 input, $6.25 cache write, $0.50 cache read, $25 output"),
    Provider(name="anthropic-haiku-4-5", cache=Cache(
        provider="anthropic", granularity_tokens=1, min_prefix_tokens=4096, ttl_s=300.0,
        prices=Prices(input_per_mtok=1.0, cache_read_per_mtok=0.1, cache_write_per_mtok=1.25,
                      output_per_mtok=5.0)),
        source=f"{_B1} (minimum 4,096 tokens for Haiku 4.5); anthropic.com/pricing 2026: "
               "Claude Haiku 4.5 $1 input, $1.25 cache write, $0.10 cache read, $5 output"),
    Provider(name="openai", cache=Cache(
        provider="openai", granularity_tokens=128, min_prefix_tokens=1024, ttl_s=600.0,
        prices=Prices(input_per_mtok=1.25, cache_read_per_mtok=0.125, cache_write_per_mtok=None,
                      output_per_mtok=10.0)),
        source=f"{_B1} (OpenAI automatic caching: from 1,024 tokens in 128-token increments, "
               "kept 5-10 minutes, no write premium); openai.com/api/pricing 2026: GPT-5 $1.25 "
               "input, $0.125 cached input, $10 output"),
    Provider(name="openai-gpt-4-1", cache=Cache(
        provider="openai", granularity_tokens=128, min_prefix_tokens=1024, ttl_s=600.0,
        prices=Prices(input_per_mtok=2.0, cache_read_per_mtok=0.5, cache_write_per_mtok=None,
                      output_per_mtok=8.0)),
        source=f"{_B1} (75 % cached-input discount for gpt-4.1); openai.com/api/pricing "
               "2026: GPT-4.1 $2 input, $0.50 cached input, $8 output"),
    Provider(name="vllm", cache=Cache(
        provider="vllm", granularity_tokens=16, min_prefix_tokens=16, ttl_s=3600.0,
        prices=Prices(input_per_mtok=1.0, cache_read_per_mtok=0.1, cache_write_per_mtok=None,
                      output_per_mtok=4.0)),
        source=f"{_B1} (vLLM automatic prefix caching: only full 16-token blocks, the last "
               "block always recomputed); NO list price: $1 / $0.10 / $4 per Mtok is an assumed "
               "self-hosted cost, override cache.prices with your own"),
)}
"""Every named profile, by name (``replay providers`` lists them)."""


def provider(name: str, where: str = "<provider>", key: str = "provider") -> Provider:
    """The profile called ``name``; an unknown name raises ``PolicyError`` with a "did you mean"."""
    if not isinstance(name, str) or name not in PROVIDERS:
        close = difflib.get_close_matches(str(name), list(PROVIDERS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise PolicyError(where, key, f"unknown provider {name!r}; {hint}"
                                      f"profiles: {', '.join(PROVIDERS)}")
    return PROVIDERS[name]


def cache_doc(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """A policy document with its ``cache`` section filled in from its ``provider`` profile.

    The profile (``provider:``, default ``DEFAULT_PROVIDER``) gives every cache field; the keys
    under ``cache:`` override it, nested keys one by one (``cache: {prices: {output_per_mtok:
    12}}`` changes the output price only)."""
    name = doc.get("provider", DEFAULT_PROVIDER)
    base = dataclasses.asdict(provider(name, where).cache)
    over = doc.get("cache")
    if over is None:
        over = {}
    if not isinstance(over, dict):
        return {**doc, "provider": name}  # the policy validator names the wrong type
    return {**doc, "provider": name, "cache": deep_merge(base, over)}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s keys replacing its own, mapping into mapping recursively."""
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) \
            else v
    return out


def provider_label(name: str, cache: Cache) -> str:
    """``name``, or what differs from it when the policy overrides the profile's fields."""
    prof = PROVIDERS.get(name)
    if prof is not None and prof.cache == cache:
        return name
    for other in PROVIDERS.values():
        if other.cache == cache:
            return other.name
    if prof is None:
        return f"{name} (custom)"
    changed = _changed(dataclasses.asdict(prof.cache), dataclasses.asdict(cache))
    return f"{name} with {', '.join(changed)}"


def _changed(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, value in a.items():
        if isinstance(value, dict):
            out += _changed(value, b[k], f"{prefix}{k}.")
        elif value != b[k]:
            out.append(f"{prefix}{k}={b[k]}")
    return out
