"""What the walk over a Codex rollout makes of a response item: messages, reasoning, calls and
their outputs into the run's messages (consecutive model output is one assistant message).

See ``replay.ingest.parsers.codex`` for the format; a single item's fields are read by
``codex_items``, a remote compaction item is ``codex_walk_compaction``'s, the walk's state
``codex_walk_state``.
"""

from __future__ import annotations

from typing import Any, Final

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.codex_compaction import encrypted_len
from replay.ingest.parsers.codex_walk_compaction import remote_compaction
from replay.ingest.parsers.codex_walk_state import Walk
from replay.ingest.parsers.content_text import held

_MESSAGE: Final = 1
_AGENT_MESSAGE: Final = 2
_REASONING: Final = 3
_CALL: Final = 4
_HOSTED: Final = 5
_OUTPUT: Final = 6
_COMPACTION: Final = 7
_GHOST: Final = 8
_KINDS: Final[dict[str, int]] = {
    "message": _MESSAGE, "agent_message": _AGENT_MESSAGE, "reasoning": _REASONING,
    **dict.fromkeys(it.CALLS, _CALL), **dict.fromkeys(it.HOSTED, _HOSTED),
    **dict.fromkeys(it.OUTPUTS, _OUTPUT), **dict.fromkeys(it.COMPACTIONS, _COMPACTION),
    "ghost_snapshot": _GHOST}
"""The item types ``item`` reads, each to its branch (0: any other), told by one lookup, not by
comparing the type with each name in turn (~13 comparisons a tool output)."""
_ITEM_NAMES: Final = {t: f"response_item/{t}" for t in _KINDS}
"""Coverage names of the item types most rollouts hold, made once."""


def item(w: Walk, no: int, p: dict[str, Any], ts: str) -> None:
    """The response item ``p`` of line ``no`` (a modern line's payload or a legacy line)."""
    t: Any = p.get("type")
    b = w.b
    if type(t) is str:
        name, branch = _ITEM_NAMES.get(t), _KINDS.get(t, 0)  # (no new string an item)
    else:
        name, branch = None, 0
    if name is None:
        name = f"response_item/{t}"
    if isinstance(p.get("id"), str) and p["id"]:
        w.by_id[p["id"]] = p
    if branch == _MESSAGE:
        role = p.get("role")
        if type(role) is not str or role not in it.ROLES:  # (a list: no key of ROLES)
            raise ValueError(f"message role {role[:40]!r} is not user/assistant/developer/system"
                             if type(role) is str else f"message role is {held(role)}, not a "
                             "string (user/assistant/developer/system)")
        blocks = it.content(p.get("content"), w.bad)
        if role == "assistant":
            if not w.open_run:
                w.output(ts)
        else:
            msg = w.start(it.ROLES[role], ts)
            if role == "user" and it.is_turn_start(blocks):
                w.turns.append(msg)
        for kind, text in blocks or [("text", "")]:
            b.text(text, kind=kind)
        if w.bad:
            w.said_bad(no)
        w.said.add((str(role), it.joined(blocks)), b.msg_index)
    elif branch == _AGENT_MESSAGE:
        blocks = it.content(p.get("content"), w.bad)
        w.turns.append(w.start("user", ts))
        for kind, text in blocks or [("text", "")]:
            b.text(text, kind=kind)
        if w.bad:
            w.said_bad(no)
    elif branch == _REASONING:
        text = it.reasoning(p, w.bad)
        if not w.open_run:  # (else ``output`` returns at once: no call)
            w.output(ts)
        b.text(text, kind="reasoning", encrypted_bytes=encrypted_len(p.get("encrypted_content")))
        if w.bad:
            w.said_bad(no)
    elif branch == _CALL or branch == _HOSTED:
        call_id, tool, args = it.call(no, t, p)
        if not w.open_run:
            w.output(ts)
        b.tool_call(call_id, tool, args)
        w.call_ids.add(call_id)
        if branch == _HOSTED:
            b.tool_result(call_id, it.hosted_result(t, p))
    elif branch == _OUTPUT:
        cid = p.get("call_id")  # (a non-empty string is opt_str's answer: no call)
        call_id = cid if type(cid) is str and cid else \
            it.opt_str(p, "call_id") or it.opt_str(p, "id")
        if not call_id:
            raise ValueError(f"{t} has no call_id")
        text, is_error = it.result(t, p, w.bad)
        w.start("tool", ts)
        b.tool_result(call_id, text, is_error=is_error, line=no)
        if w.bad:
            w.said_bad(no)
    elif branch == _COMPACTION:
        remote_compaction(w, no, p, ts, name)
        return
    elif branch == _GHOST:
        w.cov.skipped(name)
        return
    else:
        w.cov.unknown(name)
        return
    m = w.modelled
    m[name] = m.get(name, 0) + 1
