"""Placeholder lint: texts a policy puts in place of trimmed output that invite a re-call.

The seed harness's placeholder said "call the tool again to see the full
output", and the agent read one file 55 times in one turn (DESIGN §6).  A
placeholder should name what was cut and ask for nothing.  ``lint_placeholders``
flags every trim placeholder template, write note, collapse placeholder and
custom-tier string option that matches one of ``INVITES`` (``replay.policy.invites``, where
the phrasings are defined once: the replay acts on the same test, ``behaviour.invited_recall``).

Not here: counting the re-reads such a text causes (``analysis.rereads``).
"""

from __future__ import annotations

from replay.policy import Collapse, Custom, Policy, Tier, Trim
from replay.policy.invites import INVITES, invites_recall

__all__ = ["INVITES", "lint_placeholders"]

def lint_placeholders(policy: Policy) -> list[str]:
    """Placeholder texts of ``policy`` that invite the model to call the tool again.

    Checks every trim tier's placeholder template and write note, every collapse
    tier's placeholder template and the string options of custom tiers.

    Args:
        policy: the policy to check.

    Returns:
        One message per offending text (``tiers.<i>.<field>: <text> (invites re-calling:
        <match>)``); empty when none does.
    """
    found: list[str] = []
    for i, tier in enumerate(policy.tiers):
        for field, text in _texts(tier):
            phrase = invites_recall(text)
            if phrase is not None:
                found.append(f"tiers.{i}.{field}: {text!r} (invites re-calling: {phrase!r})")
    return found


def _texts(tier: Tier) -> list[tuple[str, str]]:
    """(field path, text) of every text the tier puts into the context."""
    match tier:
        case Trim():
            return [("placeholder.template", tier.placeholder.template),
                    ("write_note", tier.write_note)]
        case Collapse():
            return [("placeholder.template", tier.placeholder.template)]
        case Custom():
            return [(f"options.{k}", v) for k, v in tier.options if isinstance(v, str)]
        case _:
            return []
