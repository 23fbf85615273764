"""Codex compactions: a compacted line's replacement history, and which compaction records are
one compaction.

A compaction can be written twice: as a ``compacted`` line and as a remote compaction item
(``compaction``, ``compaction_summary``) whose ``encrypted_content`` the line's history also
holds.  ``CompactionPairs`` pairs them once, in either order: a later compacted line whose
history only retains an earlier compaction item is a compaction of its own.  ``replacement``
reads a compacted line's history (inline, or ``reference`` / ``reference_v2`` entries resolved
against earlier items' ids).

Not here: the walk that turns a compaction into an event and a summary message
(``replay.ingest.parsers.codex``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.codex_items import COMPACTIONS


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
        new, self.in_history = encrypted - self.in_history, self.in_history | encrypted
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
        return [i for i in inline if isinstance(i, dict)]
    entries = p.get("replacement_history_entries")
    if not isinstance(entries, list):
        return []
    out, missing = [], 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "inline" and isinstance(entry.get("item"), dict):
            out.append(entry["item"])
        elif entry.get("type") in ("reference", "reference_v2"):
            found = by_id.get(str(entry.get("item_id")))
            missing += found is None
            if found is not None:
                out.append(found)
    if missing:
        report(f"compacted: {missing} of {len(entries)} replacement-history references match no "
               "earlier item (the summary is read from the rest)")
    return out
