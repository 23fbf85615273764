"""A Claude Code record's content as the parser's blocks: ``content_blocks`` normalises a
message's content list (text, reasoning, images and documents as placeholders, tool calls and
results), ``attachment_text`` is what the model saw of an attachment record, ``flat_text`` a tool
result's or compact summary's content as text; ``Bad`` is a record with a missing or
wrong-typed field.

Not here: the record itself (``replay.ingest.parsers.claude_code_records``).
"""

from __future__ import annotations

from typing import Any

from replay.ingest.parsers.content_text import (
    ATTACHMENTS,
    as_text,
    content_as_text,
    document_placeholder,
    held,
)
from replay.ingest.parsers.json_text import json_text

Block = tuple[Any, ...]
"""A normalised content block: (kind, …) — see ``content_blocks``."""


class Bad(ValueError):
    """A record with a missing or wrong-typed field."""


def attachment_text(att: Any) -> str:
    """What the model saw of an attachment: its text content, else the attachment as JSON
    (its ``type`` names it)."""
    if not isinstance(att, dict):
        return ""
    for key in ("content", "text", "prompt", "instructions", "addedLines", "stdout"):
        v = att.get(key)
        if isinstance(v, str) and v:
            return v
        if isinstance(v, list) and v:
            return "\n".join(x if isinstance(x, str) else json_text(x)
                             for x in v)
    rest = {k: v for k, v in att.items() if k not in ("type", "timestamp", "uuid")}
    return json_text(att) if rest else ""


def content_blocks(content: Any, user: bool, unread: list[str] | None = None
                   ) -> tuple[Block, ...]:
    """Normalise a content list: ("text"|"reasoning"|"image", text), ("call", id, name, args),
    ("result", id, text, is_error).  An image or an attached document (``ATTACHMENTS``: a PDF
    as base64) is a placeholder, as every parser writes one (``content_text.document_placeholder``).
    A tool result's text is what its content holds as text (``flat_text``: a value in it that is
    no text is read as empty and appended to ``unread``)."""
    if isinstance(content, str):
        return (("text", content),)
    if not isinstance(content, list):
        raise Bad(f"message.content is {held(content)}, expected a string or a list")
    out: list[Block] = []
    for i, blk in enumerate(content):  # (the commonest types first: every type tested is one
        # comparison a block; a field that is no string is said by ``_str``)
        if type(blk) is not dict:  # (a decoded value: a dict or no object at all)
            raise Bad(f"content block {i} is {type(blk).__name__}, expected an object")
        t = blk.get("type")
        if t == "text":
            v = blk.get("text")
            out.append(("text", v if type(v) is str else _str(blk, "text", i)))
        elif t == "tool_result" and user:
            v = blk.get("tool_use_id")
            c = blk.get("content")
            if type(c) is list and unread is not None:  # (nearly every one not a string:
                # as_text at once, ``flat_text`` only to say what it read as empty)
                n = len(unread)
                c = as_text(c, unread)
                if len(unread) > n:
                    _said_in(unread, n, i)
            elif type(c) is not str:
                c = flat_text(c, i, unread)
            out.append(("result", v if type(v) is str else _str(blk, "tool_use_id", i), c,
                        blk.get("is_error") is True))
        elif (t == "tool_use" or t == "server_tool_use") and not user:
            args = blk.get("input", {})
            if args is not None and not isinstance(args, (dict, str)):
                raise Bad(f"content block {i}: tool_use input is {type(args).__name__}")
            call_id = blk.get("id")
            if call_id is not None and not isinstance(call_id, str):
                raise Bad(f"content block {i} ({t}): 'id' is {type(call_id).__name__}, "
                           "expected a string")
            out.append(("call", call_id or "", _str(blk, "name", i), args or {}, i))
        elif t == "thinking":
            out.append(("reasoning", _str(blk, "thinking", i)))
        elif t == "image":
            out.append(("image", "[image]"))
        elif type(t) is str and t in ATTACHMENTS:  # a PDF or a file: its bytes are no
            # text the model read (a type that is no string: the block's JSON, as any other)
            out.append(("image", document_placeholder(blk)))
        elif t == "redacted_thinking":
            out.append(("reasoning", ""))
        else:
            out.append(("text", json_text(blk)))
    return tuple(out)


def flat_text(content: Any, i: int, unread: list[str] | None) -> str:
    """``as_text(content)``, each value in it read as empty where text belongs (or a content
    kept as its JSON: ``content_as_text``) appended to ``unread`` as said about content block
    ``i`` (a tool result; -1: the compact summary's content)."""
    if unread is None:
        return as_text(content)
    n = len(unread)
    text = content_as_text(content, unread)
    if len(unread) > n:
        _said_in(unread, n, i)
    return text


def _said_in(unread: list[str], n: int, i: int) -> None:
    """Name the block of what ``unread`` holds from ``n`` on (content block ``i``, a tool
    result; -1: the compact summary)."""
    where = "compact summary" if i < 0 else f"content block {i} (tool_result)"
    for k in range(n, len(unread)):
        unread[k] = f"{where}: {unread[k]}"


def _str(blk: dict[str, Any], key: str, i: int) -> str:
    value = blk.get(key)
    if not isinstance(value, str):
        raise Bad(f"content block {i} ({blk.get('type')}): {key!r} is {held(value)}, "
                  "expected a string")
    return value
