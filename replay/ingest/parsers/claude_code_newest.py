"""Which end of a Claude Code session's tree is the newest: the leaf the conversation path
follows, by the leaves' timestamps read as instants, and what that order had to decide.

Claude Code stamps every record with ``new Date().toISOString()``: ``2026-02-11T21:46:25.781Z``
(ISO-8601, UTC, milliseconds).  Such a timestamp, or the same with another number of fraction
digits or an offset (``+02:00``), is read as the instant it names; anything else — missing,
not a string, empty, a date alone, no zone, a field out of range (``9999-99-99T…``), another
form (``zzz``) — is unreadable and ranks before every readable one (file order among
themselves), so it never beats a well-formed timestamp, as it did compared as a string.

Said (``notes``, one issue each for the session's run): leaves whose timestamp could not be
read (when there are two leaves or more: the order needed it), and a newest leaf that is not the
file's last one while that last one comes after its parent in the file (the file appended as
the conversation went on, so its order and the timestamps disagree: the timestamp decides).  A
file written in another order (reversed: a record before its parent) has no order to disagree
with.

Not here: finding the leaves and walking the path (``replay.ingest.parsers.claude_code_path``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from operator import attrgetter

from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.counts import shown

_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
                  r"(?:Z|[+-][0-9]{2}:[0-9]{2})")
"""The timestamps read: date, ``T``, time to the second, a fraction or none, a zone."""
_US = timedelta(microseconds=1)
_CANONICAL = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3])"
                        r":[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z").fullmatch
"""The form Claude Code writes, its fields in range (a day up to the 28th: valid in every
month): such timestamps order as their strings do, without reading the instant."""
_TS_LINE = attrgetter("ts", "line")


def moment_us(ts: str) -> int | None:
    """The instant an ISO-8601 timestamp (as Claude Code writes it: ``_ISO``) names, in
    microseconds from 0001-01-01 UTC (an int: exact whatever the year, any zone compared);
    None for anything else, a field out of range included."""
    if _ISO.fullmatch(ts) is None:
        return None
    try:
        d = datetime.fromisoformat(ts)
    except ValueError:
        return None
    offset = d.utcoffset() or timedelta(0)
    seconds = d.toordinal() * 86_400 + d.hour * 3_600 + d.minute * 60 + d.second
    return seconds * 1_000_000 + d.microsecond - offset // _US


def newest_last(leaves: list[Node]) -> list[Node]:
    """``leaves`` oldest first: those with no readable timestamp first (in file order), then by
    the instant their timestamp names, then by line."""
    for n in leaves:
        if _CANONICAL(n.ts) is None:
            return sorted(leaves, key=_rank)
    return sorted(leaves, key=_TS_LINE)  # (every one as Claude Code writes it: the same order)


def _rank(n: Node) -> tuple[bool, int, int]:
    m = moment_us(n.ts)
    return (m is not None, 0 if m is None else m, n.line)


def notes(leaves: list[Node], node_of: Callable[[str], Node | None]
          ) -> tuple[tuple[int, str], ...]:
    """What ranking ``leaves`` (``newest_last``'s order) had to decide, as (line, issue):
    unreadable timestamps, and a newest leaf that is not the file's last while the file was
    appended there.  ``node_of``: a uuid's record (its line 0 when not known)."""
    if len(leaves) < 2:
        return ()
    out: list[tuple[int, str]] = []
    unread: list[Node] = []
    for n in leaves:  # (those first: ``newest_last``)
        if _CANONICAL(n.ts) is not None or moment_us(n.ts) is not None:
            break
        unread.append(n)
    if unread:  # (in file order: ``newest_last``)
        what = shown(unread[0].ts) if unread[0].ts else "missing or not a string"
        why = (f"{len(unread)} of {len(leaves)} leaf records (the ends of the session's "
               f"branches) have no readable timestamp (first here: {what}; ISO-8601 expected, "
               "e.g. 2026-02-11T21:46:25.781Z): ranked older than every leaf with one" + (
                   "" if len(unread) < len(leaves) else " (none has one: the file's last leaf "
                   "is followed)"))
        out.append((unread[0].line, why))
    chosen, last = leaves[-1], max(leaves, key=lambda n: n.line)
    if chosen is not last and ((parent := node_of(last.parent) if last.parent else None) is None
                               or parent.line < last.line):
        why = (f"the conversation path follows the leaf at line {chosen.line} (timestamp "
               f"{shown(chosen.ts)}), the newest by timestamp, not the file's last leaf at line "
               f"{last.line} (timestamp {shown(last.ts)}), written after it: that branch is "
               "taken as abandoned")
        out.append((chosen.line, why))
    return tuple(out)
