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

ctxreplay's own marker (``replay redact``, ``replay.redact``) is exact, not estimated:
``[REDACTED_CTXREPLAY chars=N bytes=B lines=L o200k_base=T cl100k_base=U]`` declares the figures
of the *block* that holds it (the block's characters, UTF-8 bytes, lines and token count per
tokenizer, as the original text had them).  A block holding several such markers has the sums
of their figures; the rest of its text (hashed paths, argument keys) is not counted: the writer
put the whole block's figures in its markers.  ``id=N`` numbers the redacted texts of a file
(equal texts, equal ids: records a parser tells apart by their text stay apart) and declares
nothing; a marker with only an id stands for text no block shows; a marker repeated in one block
(the same text twice, as an edit's old and new string can be) counts once.  ``format_exact`` writes one, ``exact`` reads a block: one definition for
writer and reader.  A tokenizer the marker does not name is estimated from its characters as
above (and flagged); ``estimated=1`` says the original block was itself sized from a marker of
the kinds above, so the block stays flagged as estimated.

Not here: counting tokens (``replay.ingest.tokens``), storing the flag (``replay.ingest.batch``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

CHARS_PER_TOKEN: dict[str, float] = {"o200k_base": 3.8, "cl100k_base": 3.8}
"""Characters per token assumed for redacted text, per tokenizer (measured, see above)."""
DEFAULT_CHARS_PER_TOKEN = 3.8
"""For a tokenizer not in ``CHARS_PER_TOKEN``."""

_MARKER = re.compile(
    r"\[\s*REDACTED(?:_[A-Z0-9_]+)?\s*:?\s*(?:(?:len|length|chars|bytes|size)\s*[=:]\s*(\d+)"
    r"|(\d+)\s*(?:chars?|characters|bytes))\b[^\[\]\n]{0,120}\]"
    r"|\[[\w .:+-]{0,40}?\+?(\d+)\s*(?:chars?|characters|bytes)\s+redacted\s*\]",
    re.IGNORECASE)
_split = _MARKER.split


def says_redacted(text: str) -> bool:
    """Whether ``text`` may hold a marker of either kind (``declared``, ``exact``): it has the
    "[" every marker opens with and says "redacted" as every marker writes it (plain substring
    tests: fast; the "[" first, one memchr, spares both word tests of a text without one, such
    as a Codex reasoning item's base64 ``encrypted_content``); a text that does not holds
    none."""
    return "[" in text and ("EDACTED" in text or "edacted" in text)


def declared(text: str) -> tuple[str, int, int] | None:
    """``(text without its markers, markers found, characters they declare)``, or None when
    ``text`` holds no redaction marker."""
    return declared_in(text) if says_redacted(text) else None


def declared_in(text: str) -> tuple[str, int, int] | None:
    """``declared`` of a text already known to pass ``says_redacted``: one ``split`` of it
    by the markers (the text between them, then each marker's three length groups, of which
    one is set), not a match object a marker."""
    parts = _split(text)
    if len(parts) == 1:
        return None
    chars = 0
    for i in range(1, len(parts), 4):
        digits = parts[i] or parts[i + 1] or parts[i + 2]
        if not believable(digits):
            return _declared_believable(text)
        chars += int(digits)
    return "".join(parts[::4]), len(parts) // 4, chars


MAX_DECLARED = 1 << 27
"""The most characters (or bytes, lines, tokens) one marker may declare: 128 MiB, the largest
JSON document ingest decodes whole.  A marker declaring more is no marker (its text is counted
as text): ``[REDACTED len=`` followed by 10^31 (or 5,000 digits) in one tool output failed its
whole file ("values the schema cannot hold", "Exceeds the limit (4300 digits)"), and a few of
10^12 made a dataset every replay refuses."""


def believable(digits: str) -> bool:
    """Whether a marker's declared figure (its digits) is at most ``MAX_DECLARED``."""
    return len(digits) <= 9 and int(digits) <= MAX_DECLARED


def _declared_believable(text: str) -> tuple[str, int, int] | None:
    """``declared_in`` of a text with a marker declaring more than ``MAX_DECLARED``: that
    marker left in the text, the others taken out (None: no other)."""
    kept, n, chars, at = [], 0, 0, 0
    for m in _MARKER.finditer(text):
        digits = m.group(1) or m.group(2) or m.group(3)
        if believable(digits):
            kept.append(text[at:m.start()])
            at, n, chars = m.end(), n + 1, chars + int(digits)
    return ("".join(kept) + text[at:], n, chars) if n else None


def tokens_for(chars: int, tokenizer: str) -> int:
    """Tokens assumed for ``chars`` redacted characters under ``tokenizer``."""
    return math.ceil(chars / CHARS_PER_TOKEN.get(tokenizer, DEFAULT_CHARS_PER_TOKEN))


EXACT_WORD = "REDACTED_CTXREPLAY"
"""The word of ctxreplay's own exact marker."""
_EXACT = re.compile(r"\[" + EXACT_WORD + r"((?: [a-z0-9_]+=\d+)*)\]")
_FIELD = re.compile(r"([a-z0-9_]+)=(\d+)")
_SIZE_FIELDS = ("chars", "bytes", "lines")
_NOT_TOKENS = (*_SIZE_FIELDS, "id", "estimated")


@dataclass(frozen=True, slots=True)
class ExactSizes:
    """What ctxreplay markers declare for the block holding them (sums over its markers)."""

    n_chars: int
    n_bytes: int
    n_lines: int
    tokens: tuple[tuple[str, int], ...]
    """(tokenizer, token count) pairs, sorted by name."""
    n_markers: int = 1
    estimated: bool = False
    """The original block's figures were themselves an estimate (``declared``)."""

    def tokens_for(self, tokenizer: str) -> int | None:
        """The declared count under ``tokenizer`` (None: not declared)."""
        return dict(self.tokens).get(tokenizer)


def format_exact(ident: int, sizes: ExactSizes | None) -> str:
    """The marker of redacted text number ``ident`` declaring ``sizes`` (None: nothing)."""
    if sizes is None:
        return f"[{EXACT_WORD} id={ident}]"
    fields = [f"id={ident}", f"chars={sizes.n_chars}", f"bytes={sizes.n_bytes}",
              f"lines={sizes.n_lines}"]
    fields += [f"{name}={count}" for name, count in sizes.tokens]
    if sizes.estimated:
        fields.append("estimated=1")
    return f"[{EXACT_WORD} {' '.join(fields)}]"


def exact_markers(text: str) -> list[re.Match[str]]:
    """The ctxreplay markers in ``text``, in order."""
    if EXACT_WORD not in text:
        return []
    return list(_EXACT.finditer(text))


def exact(text: str) -> ExactSizes | None:
    """The figures ctxreplay markers in ``text`` declare for its block (None: no marker, or
    only markers that declare nothing)."""
    sums: dict[str, int] = {}
    n, seen = 0, set()
    for m in exact_markers(text):
        if m.group(0) in seen:  # the same text twice in one block: counted once
            continue
        seen.add(m.group(0))
        found = _FIELD.findall(m.group(1))
        if not all(believable(value) for name, value in found if name != "id"):
            continue  # (no marker: its text is counted as text)
        fields = [(name, int(value)) for name, value in found if name != "id"]
        n += bool(fields)
        for name, value in fields:
            sums[name] = sums.get(name, 0) + value
    if not n:
        return None
    return ExactSizes(sums.get("chars", 0), sums.get("bytes", 0), sums.get("lines", 0),
                      tuple(sorted((k, v) for k, v in sums.items() if k not in _NOT_TOKENS)),
                      n, bool(sums.get("estimated")))
