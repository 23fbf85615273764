"""Where each session's records end in a Claude Code file: its runs can be made (and let go)
before the file's end.

A file of many sessions (transcripts concatenated, or a session with the records of others)
holds each session's records until its runs are made; ``session_ends`` reads the file's
lines once, ahead of the parse, for the last line that may add to each session, so that the
parse makes a session's runs as soon as it has read past that line (``Ends.ready``).  It is
conservative: a line that names no session but may still add to one (a record without a
``sessionId`` belongs to the file's first session) holds back the first session, and a line
it cannot read as a JSON object holds back every session.

Not here: the records and the runs (``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

PASS = frozenset(("progress", "file-history-snapshot", "file-history-delta", "queue-operation",
                  "summary", "last-prompt", "mode", "permission-mode", "ai-title", "custom-title",
                  "agent-name", "agent-setting", "tag", "pr-link"))
"""Non-message record types read no further than their type and links (the bulk of a file)."""
TITLE_KEYS = {"custom-title": "customTitle", "ai-title": "aiTitle"}
"""Title records and their title key; the run's title is the user's own over the generated."""


class _Head(msgspec.Struct, gc=False):
    """What of a line says which session it may add to (any type: nothing is refused; its
    values are decoded JSON, in no reference cycle: not tracked by the garbage collector)."""

    sessionId: Any = None
    type: Any = None
    uuid: Any = None


_DECODE = msgspec.json.Decoder(_Head).decode


@dataclass(slots=True)
class Ends:
    """The last line that may add to each session."""

    last: dict[str, int] = field(default_factory=dict)
    """Session id -> the last line naming it."""
    unnamed: int = 0
    """The last line naming no session that may add to the first (a record, a title, a link)."""
    unread: int = 0
    """The last line not read here as an object (it may add to any session)."""

    def ready(self, sid: str, first: str) -> int:
        """The first line from which on no line adds to session ``sid`` (``first``: the
        file's first session, which records naming none join)."""
        unnamed = self.unnamed if sid == first or not sid else 0
        return max(self.unread, self.last.get(sid, 0), unnamed) + 1


_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"((?:[^"\\]|\\.)*)"')


def session_ends(data: bytes) -> Ends | None:
    """``Ends`` of the JSON Lines ``data`` (lines numbered as the parse numbers them); None
    when ``data`` names one session or none (nothing to make before the end: found by one
    scan of the bytes, ~1 ms a MB, not a line's decoding, ~7 ms a MB of small records)."""
    found = _SESSION_ID.search(data)
    if found is None or re.compile(rb'"sessionId"\s*:\s*"(?!' + re.escape(found[1]) + rb'")'
                                   ).search(data, found.end()) is None:
        return None
    ends = Ends()
    size, pos, no = len(data), 0, 0
    while pos < size:
        end = data.find(b"\n", pos)
        end = size if end < 0 else end
        raw, pos, no = data[pos:end], end + 1, no + 1
        if not raw or raw.isspace():
            continue
        try:
            head = _DECODE(raw)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            ends.unread = no
            continue
        sid = head.sessionId
        if isinstance(sid, str) and sid:
            ends.last[sid] = no
        elif not (isinstance(head.type, str) and head.type in PASS
                  and head.type not in TITLE_KEYS
                  and not (isinstance(head.uuid, str) and head.uuid)):
            ends.unnamed = no
    return ends
