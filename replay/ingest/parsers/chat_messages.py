"""One chat message in the run model: its role and blocks (``message_blocks``) from OpenAI-shaped
fields (``content`` string or parts, assistant ``tool_calls`` with JSON-string arguments,
``tool`` messages with ``tool_call_id``) or Anthropic blocks (``tool_use``, ``tool_result``,
``thinking``); added to the run by ``emit_message`` (a malformed one reported at its line or
message number, counted and skipped); its time, and the key that finds a response again in a
transcript.

Not here: which shape a file is and the run (``replay.ingest.parsers.chat``), requests and
their usage (``replay.ingest.parsers.chat_requests``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import (
    as_text,
    content_as_text,
    held,
    named,
    not_a_string,
    unread_text,
)
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.source import Issue
from replay.ingest.parsers.typed_text import said

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool"}
_TEXT_PARTS = {"text", "input_text", "output_text"}
_IMAGE_PARTS = {"image", "image_url", "input_image"}

Block = tuple[Any, ...]
"""(kind, text) for text/reasoning/image; ("tool_call", id, tool, args);
("tool_result", id, text, is_error)."""


def message_type(m: Any) -> str:
    """A message's coverage type."""
    if not isinstance(m, dict):
        return "message (not an object)"
    return f"message/{m['role']}" if isinstance(m.get("role"), str) else "message (no role)"


def message_blocks(m: Any, bad: list[str] | None = None) -> tuple[str, list[Block]]:
    """A message as (role, blocks); raises on a missing or wrong-typed field.  A value of the
    wrong type where the message has text, a name or an id is read as ``typed_text`` and
    ``content_text`` read one (a text as empty, a name or an id as its JSON, never Python's
    ``str``), appended to ``bad`` when given (the blocks are the same either way: a message
    is keyed by them, ``message_key``)."""
    if not isinstance(m, dict):
        raise TypeError(f"expected a message object, got {type(m).__name__}")
    role = _ROLES.get(m.get("role"))  # type: ignore[arg-type]
    if role is None:
        raise ValueError(f"unknown role {m.get('role')!r}")
    content = m.get("content")
    blocks: list[Block] = []
    for key in ("reasoning_content", "reasoning"):
        if isinstance(m.get(key), str) and m[key]:
            blocks.append(("reasoning", m[key]))
            break
        if m.get(key) is not None and not isinstance(m[key], str) and bad is not None:
            bad.append(not_a_string(m[key], key))
    if role == "tool":
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str):
            raise TypeError("tool message without a string 'tool_call_id'")
        blocks.append(("tool_result", call_id, as_text(content) if bad is None else
                       content_as_text(content, bad), _flag(m, "is_error", bad)))
    elif isinstance(content, str):
        if content or not m.get("tool_calls"):
            blocks.append(("text", content))
    elif isinstance(content, list):
        blocks.extend(_part(p, k, content, bad) for k, p in enumerate(content))
    elif content is not None:
        raise TypeError(f"'content' is a {type(content).__name__}")
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TypeError("'tool_calls' is not a list")
    for i, tc in enumerate(calls):
        fn = tc["function"]
        raw = fn.get("arguments")
        args: Any = raw if isinstance(raw, dict) else _json_or_raw(raw if isinstance(raw, str)
                                                                    else "")
        ident = tc.get("id")
        blocks.append(("tool_call", named(ident, f"tool_calls[{i}].id", bad) if ident else
                       f"call-{i}", named(fn["name"], f"tool_calls[{i}].function.name", bad),
                       args))
    if any(b[0] == "tool_result" for b in blocks):
        role = "tool"
    return role, blocks or [("text", "")]


def _part(p: Any, k: int, parts: list[Any], bad: list[str] | None) -> Block:
    """Content part ``k`` (of ``parts``) as a block; what of it had the wrong type appended to
    ``bad`` (``message_blocks``)."""
    if isinstance(p, str):
        return ("text", p)
    if not isinstance(p, dict):
        raise TypeError(f"content part is a {type(p).__name__}")
    kind = p.get("type")
    if kind in _TEXT_PARTS:
        text = p.get("text")
        if text.__class__ is not str:
            if bad is not None:
                unread_text(parts, p, bad, "content part")
            text = ""
        return ("text", text)
    if kind in _IMAGE_PARTS:
        return ("image", "[image]")
    where = f"content part {k} ({kind})"
    if kind == "tool_use":
        args = p.get("input", {})
        return ("tool_call", named(p["id"], f"{where}: id", bad),
                named(p["name"], f"{where}: name", bad), args)
    if kind == "tool_result":
        one: list[str] = []  # (said about the part: ``where`` before each)
        text = content_as_text(p.get("content"), one)
        if bad is not None:
            bad.extend(f"{where}: {why}" for why in one)
        return ("tool_result", named(p["tool_use_id"], f"{where}: tool_use_id", bad), text,
                _flag(p, "is_error", bad, where))
    if kind == "thinking":
        thinking = p.get("thinking")
        if thinking is not None and thinking.__class__ is not str and bad is not None:
            bad.append(not_a_string(thinking, f"{where}: thinking"))
        return ("reasoning", thinking if thinking.__class__ is str else "")
    if kind == "redacted_thinking":
        return ("reasoning", "")
    return ("text", as_text([p]) or json_text(p))


def _flag(obj: dict[str, Any], key: str, bad: list[str] | None, where: str = "") -> bool:
    """``obj[key]`` as a flag (``is_error``): a boolean as it is, absent or null false; any
    other value read by its truth, as before, and appended to ``bad`` (``"false"``, a string,
    is read as true: said, never silently)."""
    value = obj.get(key)
    if value is None or value.__class__ is bool:
        return value is True
    if bad is not None:
        bad.append(f"{where + ': ' if where else ''}{key} is {held(value)}, not a boolean (read "
                   f"as {'true' if value else 'false'})")
    return bool(value)


def _json_or_raw(raw: str) -> Any:
    if not raw.strip():
        return {}
    try:
        return loads(raw)
    except JSON_REFUSED:
        return raw


def emit_message(rb: RunBuilder, no: int, m: Any, label: str = "") -> int | None:
    """Add one message and return its index; a bad one is reported at ``no`` (its line or
    message number) and skipped (None)."""
    cov, rtype = rb.source.coverage, message_type(m)
    bad: list[str] = []
    try:
        role, blocks = message_blocks(m, bad)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        known = isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in _ROLES
        cov.unknown(f"{rtype} (malformed)" if known else rtype)
        rb.issues.append(Issue(rb.source.path, no, f"{label or f'message {no}'} skipped: "
                                                   f"{type(exc).__name__}: {exc}"))
        return None
    msg = rb.message(role, ts=record_ts(m))
    if (stamp := m.get("timestamp")) is not None and stamp.__class__ is not str:
        bad.append(f"timestamp is {held(stamp)}, not a string (not read)")
    if bad:
        said(rb, bad, line=no)
    for b in blocks:
        if b[0] == "tool_call":
            rb.tool_call(b[1], b[2], b[3])
        elif b[0] == "tool_result":
            rb.tool_result(b[1], b[2], is_error=b[3], line=no)
        else:
            rb.text(b[1], kind=b[0])
    cov.modelled(rtype)
    return msg


def record_ts(rec: dict[str, Any]) -> str:
    """A record's time: its ``timestamp`` string, else its unix ``created`` as ISO-8601 UTC."""
    stamp, created = rec.get("timestamp"), rec.get("created")
    if isinstance(stamp, str):
        return stamp
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        try:
            return datetime.fromtimestamp(created, UTC).isoformat()
        except (OverflowError, OSError, ValueError):  # past year 9999, or not a number (nan)
            return ""
    return ""


def message_key(m: Any) -> Any:
    """A message's role and blocks as one string (None: malformed): how a response is found
    again in a transcript."""
    try:
        return json.dumps(message_blocks(m), sort_keys=True, default=str)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
