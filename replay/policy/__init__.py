"""Policies: what a harness does to keep its context inside the window, as frozen data.

A policy is the server it talks to, how it counts tokens (the *estimator*) and
how the replay judges the truth, an ordered list of tiers (trim, summarise,
collapse, or a Python class), and the provider whose cache and prices it is replayed
under (a named profile of ``replay.policy.providers``, fields overridable).  Every field's unit is in
its name.  ``load_policy`` reads YAML safely and validates it: an unknown key, a
wrong type, a fraction outside 0–1 or contradicting fields raise ``PolicyError``
naming the file, the key path and why, with a "did you mean" for misspellings
(``replay.policy.check``).

The dataclasses are declared in ``replay.policy.model`` (the policy) and
``replay.policy.tier_model`` (its tiers) and re-exported here, where users
import them.

Not here: what tiers do (``replay.engine.tiers``), the replay loop (``replay.engine.fold``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from replay.errors import PolicyError, ReplayInputError
from replay.policy.check import build, check
from replay.policy.doc import (
    item_index,
    item_name,
    preset_names,
    read_policy_doc,
    refuse_non_policy,
)
from replay.policy.model import (
    Behaviour,
    Harness,
    Policy,
    Server,
    TokenCounter,
    Tokenizer,
    policy_to_dict,
)
from replay.policy.providers import Cache, Prices, cache_doc
from replay.policy.tier_model import (
    TRIGGER_KINDS,
    Collapse,
    Custom,
    OlderReads,
    Placeholder,
    Protect,
    Restore,
    Summarise,
    Tier,
    Trigger,
    Trim,
)

__all__ = [
    "TRIGGER_KINDS",
    "Behaviour",
    "Cache",
    "Collapse",
    "Custom",
    "Harness",
    "OlderReads",
    "Placeholder",
    "Policy",
    "Prices",
    "Protect",
    "Restore",
    "Server",
    "Summarise",
    "Tier",
    "TokenCounter",
    "Tokenizer",
    "Trigger",
    "Trim",
    "load_policy",
    "policy_from_dict",
    "policy_to_dict",
    "presets",
    "refuse_shared_names",
    "replace_path",
    "replace_paths",
    "set_path",
]


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy YAML file, or a preset by name (``replay policies``); a file
    may ``extends:`` a preset or another file (``replay.policy.doc``)."""
    doc, where = read_policy_doc(path)
    return policy_from_dict(doc, where)


def refuse_shared_names(policies: Sequence[Policy]) -> None:
    """Refuse the policies of one command (``--policy``, repeated: ``replay check``, ``report``,
    ``diff``) when two share a name: every output tells policies apart by name (a baseline's
    keys, a report's legend, a diff's sides), and a name made up by their order (``name #2``)
    would change with the order given.  The same policy given twice is refused too: compared
    with itself it says nothing.

    Raises:
        ReplayInputError: the first name given twice (a usage error: exit 2).
    """
    seen: set[str] = set()
    for policy in policies:
        if policy.name in seen:
            raise ReplayInputError(f"two policies are named {policy.name!r}; name each once "
                                   "(a policy file's `name:` tells two apart)")
        seen.add(policy.name)


def presets() -> list[str]:
    """Names of the shipped presets."""
    return preset_names()


def policy_from_dict(doc: Any, where: str = "<policy>") -> Policy:
    """Build a validated ``Policy`` from plain data (as read from YAML)."""
    if not isinstance(doc, dict):
        raise PolicyError(where, "", "a policy is a mapping of keys to values")
    refuse_non_policy(doc, where)  # its keys never echoed: maybe not a policy at all
    policy = build(Policy, cache_doc(doc, where), where, "")
    check(policy, where)
    return policy


def replace_path(policy: Policy, path: str, value: Any) -> Policy:
    """A copy of ``policy`` with one field set by dotted path (``tiers.0.trigger.at_frac``)."""
    return replace_paths(policy, ((path, value),))


def replace_paths(policy: Policy, settings: Iterable[tuple[str, Any]]) -> Policy:
    """A copy of ``policy`` with several fields set, validated once with all of them (two
    fields that must change together — a smaller window and a trigger — can)."""
    doc = policy_to_dict(policy)
    shown = []
    for path, value in settings:
        set_path(doc, path, value)
        shown.append(f"{path}={value!r}")
    return policy_from_dict(doc, f"<{policy.name} with {', '.join(shown)}>")


def set_path(doc: Any, path: str, value: Any) -> None:
    """Set one field of a policy's plain data (``policy_to_dict``) by dotted path, tiers by
    name or index (``tiers.tier2_summary.trigger.at_tokens``, ``tiers.1.keep_messages``:
    ``replay.policy.doc.item_index``, as policy files address them); missing mappings on the
    way are created.

    Raises:
        PolicyError: a list item the path names does not exist, or the path goes on under a
            value that is neither a mapping nor a list (``tiers.0=''`` set before it).
    """
    node: Any = doc
    keys = path.split(".")
    for n, k in enumerate(keys):
        if not isinstance(node, (dict, list)):
            raise PolicyError("<path>", ".".join(keys[:n]), f"is a {type(node).__name__}, not "
                              "a mapping or a list: nothing under it to set")
        if isinstance(node, list):
            i = item_index(node, k)
            if i is None:
                raise PolicyError("<path>", ".".join(keys[:n + 1]), f"no item {k!r} (names: "
                                  f"{', '.join(map(str, map(item_name, node)))}; or an index "
                                  f"0–{len(node) - 1})")
            if n == len(keys) - 1:
                node[i] = value
            node = node[i]
        elif n == len(keys) - 1:
            node[k] = value
        else:
            node = node.setdefault(k, {})
