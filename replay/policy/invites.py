"""Placeholder texts that invite the model to call a tool again: the phrasings, defined once.

The seed harness's placeholder said "call the tool again to see the full output", and the agent
read one file 55 times in one turn (DESIGN §6).  ``invites_recall`` says whether a text a policy
puts in place of removed output asks for a re-call; the lint (``analysis.placeholders``) reports
it and the replay acts on it (``behaviour.invited_recall``, ``replay.engine.induced``).
"""

from __future__ import annotations

import functools
import re

INVITES: tuple[str, ...] = (
    r"\bcall\b[^.\]]{0,40}\bagain\b",
    r"\b(read|run|open|fetch|execute|invoke|use|request)\b[^.\]]{0,40}\bagain\b",
    r"\bre-?(run|call|read|fetch|issue|execute|request)\b",
    r"\b(retry|repeat)\b",
    r"\bto (see|get|view|read|retrieve) the (full|complete|whole|entire|rest)\b",
)
"""Regular expressions of phrasings that invite the model to call a tool again
(case-insensitive): "call … again", "read/run/open … again", "re-run", "re-read", "retry",
"repeat", "to see the full …"."""


@functools.cache
def invites_recall(text: str) -> str | None:
    """The phrase of ``text`` that invites a re-call (None: it asks for nothing)."""
    for pattern in INVITES:
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m:
            return m.group(0)
    return None
