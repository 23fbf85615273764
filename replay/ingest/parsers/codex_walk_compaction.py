"""What the walk over a Codex rollout makes of a compaction: a ``compacted`` line or a remote
compaction item becomes a compaction event and the summary message it points at.

See ``replay.ingest.parsers.codex`` for the format; the replacement history's reading and the
pairing of a remote item with its line are ``codex_compaction``; the walk's state
``codex_walk_state``.
"""

from __future__ import annotations

from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.codex_compaction import (
    encrypted_len,
    encrypted_summary,
    replacement,
    summary_item,
)
from replay.ingest.parsers.codex_walk_state import Walk
from replay.ingest.parsers.content_text import not_a_string


def compacted(w: Walk, no: int, p: dict[str, Any], ts: str) -> None:
    """A ``compacted`` line at line ``no``: a compaction, unless a remote compaction item
    already counted it."""
    history = replacement(p, w.by_id, lambda why: w.note(no, why))
    if p.get("message") is not None and not isinstance(p["message"], str):
        w.note(no, f"compacted: message is {type(p['message']).__name__}, not a string "
                   "(the summary read from the replacement history)")
    if not history and w.remote_last and w.remote_last[0] == w.b.msg_index:
        # no history to pair it by, right after a remote compaction item: its line
        w.pairs.standalone.discard(w.remote_last[1])
        w.note(no, "compacted line with no readable replacement history right after a "
                   "remote compaction item: taken as that compaction's line, not a second "
                   "compaction")
        w.cov.skipped("compacted")
        return
    if not w.pairs.compacted_line(history):  # the remote compaction item already counted
        w.cov.skipped("compacted/replacement_history item", len(history))
        w.cov.skipped("compacted")
        return
    text, enc, at = summary_item(p, history, w.bad)
    kept = preserved(w, [h for k, h in enumerate(history) if k != at])
    w.cov.modelled("compacted/replacement_history item (re-attached)", len(kept))
    w.cov.skipped("compacted/replacement_history item", len(history) - len(kept))
    if enc:
        w.cov.modelled("compacted/encrypted summary (sized from its encrypted bytes: "
                       "estimated)")
    summary(w, text, ts, preserved=kept, encrypted_bytes=enc)
    if w.bad:  # (about the summary message)
        w.said_bad(no)
    w.cov.modelled("compacted")


def preserved(w: Walk, items: list[dict[str, Any]]) -> list[int]:
    """Messages of the stream a replacement history's items repeat (what the compaction
    re-attached after its summary), by role and text; the summary's own item excluded."""
    said = w.said.index()
    found: set[int] = set()
    for item in items:
        if item.get("type") != "message":
            continue
        key = (str(item.get("role")), it.joined(it.content(item.get("content"))))
        if key in said:
            found.add(said[key])
    return sorted(found)


def remote_compaction(w: Walk, no: int, p: dict[str, Any], ts: str, name: str) -> None:
    """A remote compaction item of line ``no`` (coverage name ``name``): a compaction sized
    from its encrypted content, unless a ``compacted`` line's history already held it; its
    ``summary`` when that is a non-empty string."""
    enc = p.get("encrypted_content")
    if not w.pairs.remote_item(enc):
        w.cov.skipped(name)  # also in a compacted line's history: one compaction
        return
    n = encrypted_len(enc)
    given = p.get("summary")
    text = given if given.__class__ is str and given else encrypted_summary(n) if n else ""
    summary(w, text, ts, encrypted_bytes=n)
    if given is not None and given.__class__ is not str:  # (about the summary message)
        w.bad.append(not_a_string(given, "summary"))
        w.said_bad(no)
    w.remote_last = (w.b.msg_index, enc)
    w.cov.modelled(name)
    if n:
        w.cov.modelled(f"{name}/encrypted_content (sized from its encrypted bytes: "
                       "estimated)")


def summary(w: Walk, text: str, ts: str, *, preserved: list[int] | None = None,
            encrypted_bytes: int = 0) -> None:
    """A compaction: its event (no trigger or sizes: the rollout records none) and the
    summary message it points at."""
    w.usage.stray = 0  # the token_count just before a compaction measured the compaction
    w.flush_nested(ts)
    event = w.b.n_events
    # mid-turn (a model call before it and no user turn since): the harness compacted on
    # its own, as nobody typed /compact in the middle of a turn
    mid_turn = bool(w.runs) and (not w.turns or w.turns[-1] < w.runs[-1].msg)
    w.b.event("compaction", harness_compaction=True, trigger="auto" if mid_turn else "",
              preserved_msgs=preserved)
    w.b.set_event(event, summary_msg=w.start("user", ts))
    w.b.summary(text, harness=True, counted=False, encrypted_bytes=encrypted_bytes)
    w.compacted_since_output = True
