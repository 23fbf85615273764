"""Redaction markers: text a log's sharer replaced with a marker that declares its length.

Shared logs are often sanitised: a tool output or a prompt becomes
``[REDACTED_OUTPUT len=4045 sha=…]``.  The model saw the original text, so counting the marker's
dozen tokens undercounts the context (a calibration then fits a 10–30× scale).  A block holding
such markers is sized by the declared lengths instead, at ``CHARS_PER_TOKEN`` characters per
token, and flagged as estimated (``Message.tokens_estimated``); the text around the markers is
counted as usual.  Its ``n_chars`` and ``n_bytes`` count the declared characters in place of
the markers (characters taken as bytes), so byte-share analyses see the size the model saw.

Marker shapes recognised (case-insensitive, but the word is written ``REDACTED``, ``redacted`` or
``Redacted``; ``N`` is the declared length in characters):

* ``[REDACTED len=N]``, ``[REDACTED_TEXT len=N sha=…]``, ``[REDACTED_OUTPUT length: N]``,
  ``[REDACTED: N chars]`` (sanitisers such as the one behind madshn/localpush's fixtures);
* ``[N chars redacted]``, ``[+N chars redacted]``, ``[base64 N chars redacted]``,
  ``[fixture: N chars redacted]`` (log and fixture redactors in public repositories).

Truncation notes a harness writes itself (``[... omitted 200 of 500 lines ...]``,
``<persisted-output>``) are what the model saw and are *not* markers: only text that says
"redacted" with a length counts.

``CHARS_PER_TOKEN`` was measured on the unredacted sample logs (Claude Code, Codex,
mini-swe-agent, OpenHands, SWE-agent: 1,871,791 characters) as characters / tokens:
3.79 for o200k_base and 3.81 for cl100k_base, rounded to 3.8 for both.

Not here: counting tokens (``replay.tokens``), storing the flag (``replay.ingest``).
"""

from __future__ import annotations

import math
import re

CHARS_PER_TOKEN: dict[str, float] = {"o200k_base": 3.8, "cl100k_base": 3.8}
"""Characters per token assumed for redacted text, per tokenizer (measured, see above)."""
DEFAULT_CHARS_PER_TOKEN = 3.8
"""For a tokenizer not in ``CHARS_PER_TOKEN``."""

_MARKER = re.compile(
    r"\[\s*REDACTED(?:_[A-Z0-9_]+)?\s*:?\s*(?:(?:len|length|chars|bytes|size)\s*[=:]\s*(\d+)"
    r"|(\d+)\s*(?:chars?|characters|bytes))\b[^\[\]\n]{0,120}\]"
    r"|\[[\w .:+-]{0,40}?\+?(\d+)\s*(?:chars?|characters|bytes)\s+redacted\s*\]",
    re.IGNORECASE)


def declared(text: str) -> tuple[str, int, int] | None:
    """``(text without its markers, markers found, characters they declare)``, or None when
    ``text`` holds no redaction marker."""
    if "edacted" not in text and "EDACTED" not in text:  # plain substring tests: fast
        return None
    chars, n, parts, pos = 0, 0, [], 0
    for m in _MARKER.finditer(text):
        chars += int(m.group(1) or m.group(2) or m.group(3))
        n += 1
        parts.append(text[pos:m.start()])
        pos = m.end()
    if not n:
        return None
    parts.append(text[pos:])
    return "".join(parts), n, chars


def tokens_for(chars: int, tokenizer: str) -> int:
    """Tokens assumed for ``chars`` redacted characters under ``tokenizer``."""
    return math.ceil(chars / CHARS_PER_TOKEN.get(tokenizer, DEFAULT_CHARS_PER_TOKEN))
