"""A Claude Code tool result too large to keep inline: its ``<persisted-output>`` preview and the
size it declares (``persisted_output``), which the run records as a ``persisted_output`` event
(``claude_code_emit``) and the redactor keeps readable (``replay.redact.leaves``).

Not here: the records the result is in (``replay.ingest.parsers.claude_code_records``).
"""

from __future__ import annotations

import re

PERSISTED_TAG = "<persisted-output>"
_PERSISTED_SIZE = re.compile(r"Output too large \((\d+(?:\.\d+)?)\s*(B|KB|MB)\)")
_PERSISTED_WINDOW = 1000
"""Characters after the tag searched for the size line (it follows the tag directly)."""
_UNITS = {"B": 1, "KB": 1024, "MB": 1024 * 1024}


def persisted_output(text: str) -> tuple[str, int] | None:
    """A ``<persisted-output>`` preview's declared size: as written (``45.2KB``) and in
    characters (from the unit, so approximate), or None when ``text`` is not one.

    Linear in the text: the tag is found once and the size line looked for just after it (a
    lazy ``<tag>.*?size`` pattern took minutes on a result repeating the tag)."""
    start = text.find(PERSISTED_TAG)
    if start < 0:
        return None
    found = _PERSISTED_SIZE.search(text, start, start + len(PERSISTED_TAG) + _PERSISTED_WINDOW)
    if found is None:
        return None
    return found.group(1) + found.group(2), int(float(found.group(1)) * _UNITS[found.group(2)])

