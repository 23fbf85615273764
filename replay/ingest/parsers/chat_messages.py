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
from replay.ingest.parsers.content_text import as_text
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.source import Issue

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


def message_blocks(m: Any) -> tuple[str, list[Block]]:
    """A message as (role, blocks); raises on a missing or wrong-typed field."""
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
    if role == "tool":
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str):
            raise TypeError("tool message without a string 'tool_call_id'")
        blocks.append(("tool_result", call_id, as_text(content), bool(m.get("is_error"))))
    elif isinstance(content, str):
        if content or not m.get("tool_calls"):
            blocks.append(("text", content))
    elif isinstance(content, list):
        blocks.extend(_part(p) for p in content)
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
        blocks.append(("tool_call", str(tc.get("id") or f"call-{i}"), str(fn["name"]), args))
    if any(b[0] == "tool_result" for b in blocks):
        role = "tool"
    return role, blocks or [("text", "")]


def _part(p: Any) -> Block:
    if isinstance(p, str):
        return ("text", p)
    if not isinstance(p, dict):
        raise TypeError(f"content part is a {type(p).__name__}")
    kind = p.get("type")
    if kind in _TEXT_PARTS:
        return ("text", str(p.get("text") or ""))
    if kind in _IMAGE_PARTS:
        return ("image", "[image]")
    if kind == "tool_use":
        args = p.get("input", {})
        return ("tool_call", str(p["id"]), str(p["name"]), args)
    if kind == "tool_result":
        return ("tool_result", str(p["tool_use_id"]), as_text(p.get("content")),
                bool(p.get("is_error")))
    if kind == "thinking":
        return ("reasoning", str(p.get("thinking") or ""))
    if kind == "redacted_thinking":
        return ("reasoning", "")
    return ("text", as_text([p]) or json_text(p))


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
    try:
        role, blocks = message_blocks(m)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        known = isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in _ROLES
        cov.unknown(f"{rtype} (malformed)" if known else rtype)
        rb.issues.append(Issue(rb.source.path, no, f"{label or f'message {no}'} skipped: "
                                                   f"{type(exc).__name__}: {exc}"))
        return None
    msg = rb.message(role, ts=record_ts(m))
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
