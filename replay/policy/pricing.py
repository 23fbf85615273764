"""Putting policies under a provider: ``--provider NAME`` for one policy (``with_provider``),
and one price list for a comparison of several, with the sentence that says which
(``one_provider``, ``pricing_note``; what ``diff``, ``report`` and the check's comparisons use).

Not here: the provider profiles (``replay.policy.providers``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from replay.policy.model import Policy
from replay.policy.providers import provider, provider_label


def with_provider(policy: Policy, name: str) -> Policy:
    """``policy`` replayed under the profile ``name`` (its own cache overrides dropped)."""
    return dataclasses.replace(policy, provider=name, cache=provider(name, "--provider").cache)


@dataclass(frozen=True, slots=True)
class Pricing:
    """The policies a comparison replays, and the sentence that says what they are priced under."""

    policies: tuple[Policy, ...]
    note: str
    """Printed with the comparison (and written into reports)."""
    one_provider: bool
    """Whether every policy is priced under the same cache and prices."""


def one_provider(policies: list[Policy], name: str | None = None, *,
                 own: bool = False) -> Pricing:
    """Put the policies of a comparison under one provider, and say which.

    ``name`` (``--provider``): every policy under that profile.  Otherwise, when the policies
    name different providers, every policy is priced under the first one's (its cache with its
    overrides) unless ``own`` (``--own-providers``), which keeps each policy's own and says that
    cost differences then include the price difference."""
    if name is not None:
        pols = tuple(with_provider(p, name) for p in policies)
        return Pricing(pols, f"priced under provider {name} (--provider)", True)
    first = policies[0]
    if own or all(p.cache == first.cache for p in policies):
        return Pricing(tuple(policies), pricing_note(policies),
                       all(p.cache == first.cache for p in policies))
    label = provider_label(first.provider, first.cache)
    others = ", ".join(f"{p.name}: {provider_label(p.provider, p.cache)}" for p in policies[1:]
                       if p.cache != first.cache)
    pols = tuple(dataclasses.replace(p, provider=first.provider, cache=first.cache)
                 for p in policies)
    return Pricing(pols, f"priced under one provider, {label} ({first.name}'s; the policies "
                         f"name others: {others}; --pricing own prices each under its own)",
                   True)


def pricing_note(policies: list[Policy]) -> str:
    """What a comparison of these (already replayed) policies is priced under, in a sentence."""
    if not policies:
        return "no policy"
    first = policies[0]
    if all(p.cache == first.cache for p in policies):
        return f"priced under provider {provider_label(first.provider, first.cache)}"
    every = ", ".join(f"{p.name}: {provider_label(p.provider, p.cache)}" for p in policies)
    return (f"each policy priced under its own provider ({every}): cost differences include "
            "the price difference")
