"""Codex compactions: a compacted line's replacement history and its summary, and which
compaction records are one compaction.

A compaction can be written twice: as a ``compacted`` line and as a remote compaction item
(``compaction``, ``compaction_summary``) whose ``encrypted_content`` the line's history also
holds.  ``CompactionPairs`` pairs them once, in either order: a later compacted line whose
history only retains an earlier compaction item is a compaction of its own.  ``replacement``
reads a compacted line's history (inline, or ``reference`` / ``reference_v2`` entries resolved
against earlier items' ids); ``summary_item`` finds the summary in it (the history is
authoritative), and ``encrypted_summary`` sizes an encrypted one as Codex estimates it.

Not here: the walk that turns a compaction into an event and a summary message
(``replay.ingest.parsers.codex``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.codex_bytes import decrypted_bytes
from replay.ingest.parsers.codex_items import COMPACTIONS, content
from replay.ingest.redaction import declared


@dataclass(slots=True)
class CompactionPairs:
    """The encrypted contents of the compaction records seen so far."""

    standalone: set[str] = field(default_factory=set)
    """Remote compaction items counted as compactions, not yet met in a compacted line."""
    introduced: set[str] = field(default_factory=set)
    """New in a compacted line counted as a compaction, not yet met as a remote item."""
    in_history: set[str] = field(default_factory=set)
    """In any compacted line's history."""

    def compacted_line(self, history: list[dict[str, Any]]) -> bool:
        """Whether a compacted line with this replacement history is a compaction of its own
        (False: a remote compaction item already counted is in its history)."""
        encrypted = {i["encrypted_content"] for i in history if i.get("type") in COMPACTIONS
                     and isinstance(i.get("encrypted_content"), str)}
        new = encrypted - self.in_history
        self.in_history |= encrypted  # (in place: a new set a line was quadratic in the lines)
        if encrypted & self.standalone:
            self.standalone -= encrypted
            return False
        # a later compacted line's history keeps earlier compaction items: only the ones it
        # brings in pair it with a standalone item written after it
        self.introduced |= new
        return True

    def remote_item(self, enc: Any) -> bool:
        """Whether a remote compaction item with this ``encrypted_content`` is a compaction of
        its own (False: a compacted line already counted brought it in)."""
        if isinstance(enc, str) and enc in self.introduced:
            self.introduced.discard(enc)
            return False
        if isinstance(enc, str):
            self.standalone.add(enc)
        return True


def replacement(p: dict[str, Any], by_id: dict[str, dict[str, Any]],
                report: Callable[[str], None]) -> list[dict[str, Any]]:
    """A compacted line's replacement history, references resolved against ``by_id`` (earlier
    items by id); references that match nothing are reported."""
    inline = p.get("replacement_history")
    if isinstance(inline, list):
        items = [i for i in inline if isinstance(i, dict)]
        if len(items) < len(inline):
            report(f"compacted: {len(inline) - len(items)} of {len(inline)} replacement_history "
                   "items are not objects (left out)")
        return items
    if inline is not None:
        report(f"compacted: replacement_history is {type(inline).__name__}, not a list (read "
               "as if absent)")
    entries = p.get("replacement_history_entries")
    if not isinstance(entries, list):
        if entries is not None:
            report(f"compacted: replacement_history_entries is {type(entries).__name__}, not a "
                   "list (read as if absent)")
        return []
    out, missing, bad = [], 0, 0
    for entry in entries:
        if not isinstance(entry, dict):
            bad += 1
        elif entry.get("type") == "inline" and isinstance(entry.get("item"), dict):
            out.append(entry["item"])
        elif entry.get("type") in ("reference", "reference_v2"):
            found = by_id.get(str(entry.get("item_id")))
            missing += found is None
            if found is not None:
                out.append(found)
        else:
            bad += 1
    if bad:
        report(f"compacted: {bad} of {len(entries)} replacement_history_entries are no inline "
               "item or reference (left out)")
    if missing:
        report(f"compacted: {missing} of {len(entries)} replacement-history references match no "
               "earlier item (the summary is read from the rest)")
    return out


def encrypted_len(enc: Any) -> int:
    """Length of an ``encrypted_content`` as recorded: the characters a sanitiser's marker
    declares in its place (``[REDACTED_ENCRYPTED_CONTENT len=N …]``), else the string's length;
    0 when there is none."""
    if enc.__class__ is str and "[" not in enc:  # no marker opens (base64 has no "["): its
        return len(enc)  # length, without a call (nearly every reasoning item)
    if not isinstance(enc, str) or not enc:
        return 0
    marked = declared(enc)
    return marked[2] if marked is not None else len(enc)


def encrypted_summary(encoded_len: int) -> str:
    """The text standing for a remote compaction's encrypted summary: a size marker declaring
    what Codex itself estimates its content at (``replay.codex_bytes.decrypted_bytes``), so the
    block is sized, flagged estimated and counted as such (``replay.ingest.redaction``)."""
    return (f"[REDACTED_ENCRYPTED_SUMMARY len={decrypted_bytes(encoded_len)} estimated from "
            f"{encoded_len} encrypted bytes]")


def summary_item(p: dict[str, Any], history: list[dict[str, Any]], bad: list[str] | None = None
                 ) -> tuple[str, int, int | None]:
    """(summary text, encrypted bytes, index in ``history`` or None) of a compacted line.  The
    replacement history is authoritative: when it ends with a remote compaction item, the
    summary is that item (encrypted: a size marker, ``encrypted_summary``); else a non-empty
    ``message`` is the summary (a local compaction writes the same text as the history's last
    user message); an empty one (0.149+, or a sanitiser's empty marker) gives way to the
    history's last message, whose parts that held no string where text belongs are appended
    to ``bad`` (``codex_items.content``)."""
    last = next((k for k in range(len(history) - 1, -1, -1)
                 if history[k].get("type") in (*COMPACTIONS, "message")), None)
    if last is not None and history[last].get("type") in COMPACTIONS:
        n = encrypted_len(history[last].get("encrypted_content"))
        return (encrypted_summary(n) if n else ""), n, last
    message = p.get("message")
    if isinstance(message, str) and message:
        marked = declared(message)
        if not (marked is not None and marked[2] == 0 and not marked[0].strip()):
            same = last is not None and message in _text(history[last])
            return message, 0, last if same else None
    if last is None:
        return "", 0, None
    found: list[str] = []
    text = _text(history[last], found)
    if bad is not None:
        bad += [f"replacement_history item {last}: {why}" for why in found]
    return text, 0, last


def _text(item: dict[str, Any], bad: list[str] | None = None) -> str:
    return "\n".join(text for _, text in content(item.get("content"), bad))
