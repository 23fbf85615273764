"""The sessions of one Codex rollout file: one, unless rollouts were written into one file.

A rollout is one session: its ``session_meta`` (legacy: its first line) comes first.  Two more
kinds of session_meta lines are part of it, not sessions of their own: a fork's or spawned
subagent's copy of its parent's lines starts with the parent's session_meta (and, for a fork of
a fork, the grandparent's), all with the parent's timestamps, before the fork's own lines
(timestamps from the fork's session_meta on); a line of the session's own id again; and one
whose id or time is a placeholder (a schema catalog's).  Any other session_meta naming a different session is another rollout appended to the file
(``cat a.jsonl b.jsonl``): it begins a session of its own, so its requests are not read as the
first session's (two sessions' usage read as one run made the last request's counted context
the sum of both: 134,908 tokens against 34,469 recorded).

Not here: what is made of a session's lines (``replay.ingest.parsers.codex_walk``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from replay.ingest.parsers.codex_items import parent_session

Records = list[tuple[int, dict[str, Any]]]
_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{7,63}")
"""What a session id looks like (as ``codex_file.parent_run_id`` takes one)."""
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
"""How a timestamp begins: a meta whose id or time is a placeholder (a schema catalog's
``[trimmed for fixture]``, a redacted copy's stand-in for it) begins no session."""


def split(records: Records) -> list[Records]:
    """``records`` cut where another session's session_meta begins (``[records]`` when the
    file holds one session, the common case)."""
    cuts: list[int] = []
    current: str | None = None  # the session being read ('' when its meta names none)
    fork_ts = ""  # when the fork being read began ('' for a session of its own)
    replay = False  # inside a fork's copy of its parent's lines
    for pos, (_, rec) in enumerate(records):
        if replay:
            ts = rec.get("timestamp")
            if isinstance(ts, str) and ts >= fork_ts:
                replay = False  # the fork's own lines begin
        kind = rec.get("type")
        if kind is not None and kind != "session_meta":
            continue  # (nearly every line: no meta, as meta_of would say, without its call)
        meta = meta_of(rec)
        if meta is None:
            continue
        ts = rec.get("timestamp")
        sid = session_id(meta)
        if not _DATE.match(ts if isinstance(ts, str) else str(meta.get("timestamp"))):
            sid = ""
        if current is not None and (replay or not current or not sid or sid == current):
            continue  # a parent's meta a fork replays, or this session's own id again
        if current is not None:
            cuts.append(pos)
        current = sid
        parent = parent_session(meta)
        start = ts if isinstance(ts, str) and ts else meta.get("timestamp")
        fork_ts = start if parent and isinstance(start, str) else ""
        replay = bool(fork_ts)
    if not cuts:
        return [records]
    bounds = [0, *cuts, len(records)]
    return [records[a:b] for a, b in itertools.pairwise(bounds)]


def meta_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The session metadata a line carries (as ``codex_walk.Walk.record`` tells it: a
    ``session_meta`` line's payload, or a legacy first line), else None."""
    if "payload" in rec:
        p = rec["payload"]
        return p if rec.get("type") == "session_meta" and isinstance(p, dict) else None
    if "record_type" not in rec and "type" not in rec and "id" in rec and "timestamp" in rec:
        return rec
    return None


def session_id(meta: dict[str, Any]) -> str:
    """The session a metadata line names ('' for none, or for an id that is no session id)."""
    for key in ("id", "session_id"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value if _SESSION_ID.fullmatch(value) else ""
    return ""
