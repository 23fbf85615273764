"""What the walk over a Codex rollout makes of an ``event_msg`` line: usage (``token_count``),
code-mode commands (``item_completed``) and rollbacks; the other events are UI echoes of items,
counted as skipped.

See ``replay.ingest.parsers.codex`` for the format; usage is ``codex_usage``, rollbacks
``codex_rollback``, the walk's state ``codex_walk_state``.
"""

from __future__ import annotations

from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.codex_rollback import roll_back
from replay.ingest.parsers.codex_walk_state import Walk

_EVENT_NAMES = {t: f"event_msg/{t}" for t in (
    "token_count", "agent_reasoning", "agent_message", "user_message", "task_started",
    "task_complete", "item_completed", "thread_rolled_back")}
"""Coverage names of the event types most rollouts hold, made once."""


def event(w: Walk, no: int, p: dict[str, Any]) -> None:
    """The event ``p`` of line ``no``."""
    t = p.get("type")
    kind: str = t if type(t) is str else ""  # (a string compared as one: no generic comparison)
    name = _EVENT_NAMES.get(kind) if kind else None  # (no new string an event)
    if name is None:
        name = f"event_msg/{t}"
    if kind == "token_count":
        if p.get("info") is None:
            s = w.skipped
            s[name] = s.get(name, 0) + 1
            return
        if not isinstance(p["info"], dict):
            w.cov.skipped(f"{name} (info not an object)")
            w.note(no, f"token_count info is {type(p['info']).__name__}, not an object "
                       "(its usage skipped)")
            return
        fate = w.usage.token_count(no, p["info"], w.runs, replaying=w.replaying,
                                   compacted_since_output=w.compacted_since_output)
        if fate != "duplicate":
            w.open_run = False
        counts = w.modelled if fate == "modelled" else w.skipped
        counts[name] = counts.get(name, 0) + 1
    elif kind == "item_completed" and isinstance(p.get("item"), dict):
        item = p["item"]
        name = f"{name}/{item.get('type')}"
        if item.get("type") in it.COMMANDS:
            ident, args, out, failed = it.command(item)
            if ident and ident in w.call_ids:
                w.cov.skipped(name)  # the same command is a call item of the log
                return
            w.nested.append((ident, args, out, failed))
            w.cov.modelled(name)
        else:
            w.cov.skipped(name)
    elif kind == "thread_rolled_back":
        w.flush_nested("")
        cut = roll_back(w.b, no, p.get("num_turns"), w.turns, w.runs, w.branches)
        if cut is not None:
            w.runs, w.turns = cut
            w.open_run = False
        w.cov.modelled(name)
    else:
        if kind == "task_started":
            w.usage.started_window(p, no)  # it carries model_context_window too
        s = w.skipped
        s[name] = s.get(name, 0) + 1
