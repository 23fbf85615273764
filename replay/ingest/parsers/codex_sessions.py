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

A session's lines written into its file a second time (``cat a.jsonl a.jsonl``, a copy tool
appending, a resume that wrote the session again) are no lines of it: Codex items but calls and
reasoning carry no id, so ``codex_file.unique`` cannot tell such a message or token_count from
a new one (the real 0.104 rollout doubled kept 43 more requests).  ``copies`` finds them: a
session_meta of a session met before, equal to its first one (timestamp included), followed by
lines equal to the lines after that first one, record for record; the run of equal lines (the
meta and at least one more) is a copy and is dropped, counted and said.  The first line that
differs ends it: a session resumed after a copy of its meta keeps its new lines.

Not here: what is made of a session's lines (``replay.ingest.parsers.codex_walk``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from replay.ingest.parsers.codex_items import parent_session
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.source import Issue

Records = list[tuple[int, dict[str, Any]]]
_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{7,63}")
"""What a session id looks like (as ``codex_file.parent_run_id`` takes one)."""
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
"""How a timestamp begins: a meta whose id or time is a placeholder (a schema catalog's
``[trimmed for fixture]``, a redacted copy's stand-in for it) begins no session."""


def sessions(records: Records, path: str, issues: list[Issue],
             coverage: Coverage) -> list[Records]:
    """The file's sessions (``split``), without the copies of a session's lines written again
    (``copies``: looked for only when the file has two session_meta lines or more, which
    ``split`` finds as it reads: no second pass over every line)."""
    parts, metas = _split(records)
    if len(metas) < 2:
        return parts  # (one session_meta: most files)
    kept = copies(records, metas, path, issues, coverage)
    return parts if kept is records else _split(kept)[0]


def split(records: Records) -> list[Records]:
    """``records`` cut where another session's session_meta begins (``[records]`` when the
    file holds one session, the common case)."""
    return _split(records)[0]


def _split(records: Records) -> tuple[list[Records], list[int]]:
    """(``split``'s parts, the positions of every session_meta line of ``records``)."""
    metas: list[int] = []
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
        if kind is not None and kind != "session_meta" or kind is None and "record_type" in rec:
            continue  # (nearly every line: no meta, as meta_of would say, without its call;
            # a legacy state line has a record_type and no type)
        meta = meta_of(rec)
        if meta is None:
            continue
        metas.append(pos)
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
        return [records], metas
    bounds = [0, *cuts, len(records)]
    return [records[a:b] for a, b in itertools.pairwise(bounds)], metas


def copies(records: Records, metas: list[int], path: str, issues: list[Issue],
           coverage: Coverage) -> Records:
    """``records`` without the copies of a session's lines written again after a copy of its
    session_meta (see the module's docstring; ``metas``: the positions of its session_meta
    lines); each copy is one issue (its lines, the lines it repeats) and its lines are counted
    as skipped in ``coverage`` (``TYPE (repeated copy)``).  ``records`` itself when there is
    none (most files)."""
    first: dict[str, int] = {}  # session id -> position of its first meta
    spans: list[tuple[int, int, int]] = []  # (position, its first line's position, lines)
    n, end = len(records), 0  # (end: past the last copy found)
    for pos in metas:
        if pos < end:
            continue  # inside a copy
        rec = records[pos][1]
        sid = session_id(meta_of(rec) or {})
        start = first.setdefault(sid, pos) if sid else pos
        if start == pos or rec != records[start][1]:
            continue
        m = 1
        while pos + m < n and start + m < pos and records[pos + m][1] == records[start + m][1]:
            m += 1
        if m >= 2:  # (the meta alone: a resumed session's new lines follow it)
            spans.append((pos, start, m))
            end = pos + m
    if not spans:
        return records
    for pos, start, m in spans:
        issues.append(Issue(path, records[pos][0], (
            f"lines {records[pos][0]}-{records[pos + m - 1][0]} repeat lines "
            f"{records[start][0]}-{records[start + m - 1][0]} record for record (session "
            f"{session_id(meta_of(records[pos][1]) or {})[:64]!r} written again after its "
            f"session_meta: a copy appended to the file?): {m} line(s) skipped as repeats")))
        for _, rec in records[pos:pos + m]:
            kind = rec.get("type")
            coverage.skipped(f"{kind if isinstance(kind, str) else 'record'} (repeated copy)")
    dropped = {i for pos, _, m in spans for i in range(pos, pos + m)}
    return [pair for i, pair in enumerate(records) if i not in dropped]


def meta_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The session metadata a line carries (as ``codex_walk.record`` tells it: a
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
