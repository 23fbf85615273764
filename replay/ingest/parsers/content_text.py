"""Message content as the model read it, as one text: a string as it is, a list of blocks
flattened (``as_text``), an image as ``[image]`` and an attached document as a placeholder
naming its media type (``document_placeholder``), never its base64.

Not here: reading the JSON (``replay.ingest.parsers.jsonl``), a JSON value as text
(``replay.ingest.parsers.json_text``).
"""

from __future__ import annotations

from typing import Any

from replay.ingest.parsers.json_text import json_text

ATTACHMENTS = frozenset({"document", "file", "input_file"})
"""Content block types of an attached document (Anthropic ``document``: a PDF as base64 or a
text source; OpenAI ``file`` / ``input_file``): shown as ``document_placeholder``, as
an image is ``[image]``, never as its base64 (a 240 KB PDF counted as 160 k tokens of text
against 25 k recorded) nor dropped (a tool result holding one read as empty)."""


def document_placeholder(block: dict[str, Any]) -> str:
    """The placeholder of an attached document: ``[document: application/pdf]`` (its media
    type when the block names one); a plain-text source is its text, which the model reads."""
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "text" and \
            isinstance(text := source.get("data"), str):
        return text
    media = next((m for m in (source.get("media_type") if isinstance(source, dict) else None,
                              block.get("mime_type"), block.get("media_type"))
                  if isinstance(m, str) and m), "")
    return f"[document: {media}]" if media else "[document]"


def inline_placeholder(mime: Any) -> str:
    """The placeholder of inline data by its media type (Gemini's ``inlineData`` /
    ``fileData``): ``[image]`` for an image (or an unnamed type), else a document's
    (``[document: application/pdf]``), as ``document_placeholder`` writes it."""
    if not isinstance(mime, str) or not mime or mime.startswith("image/"):
        return "[image]"
    return f"[document: {mime}]"


def as_text(content: Any, bad: list[str] | None = None) -> str:
    """Flatten message content (a string, or a list of text blocks) into one string.

    An item read as nothing although it held a value where text belongs (a block whose
    ``text`` is a number, a boolean, a list, an object or null; an item that is no string
    nor block) is appended to ``bad`` as what was wrong (``not_a_string``), for the caller
    to report."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                if isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif item.get("type") in ("image", "image_url", "input_image"):
                    parts.append("[image]")
                elif item.get("type") in ATTACHMENTS:
                    parts.append(document_placeholder(item))
                elif isinstance(item.get("content"), (str, list)):
                    parts.append(as_text(item["content"], bad))
                elif bad is not None and "text" in item:
                    unread_text(content, item, bad)
            elif bad is not None and item is not None:
                unread_text(content, item, bad)
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(text := content.get("text"), str):
        return text
    return json_text(content)


def unread_text(items: list[Any], item: Any, bad: list[str], name: str = "content item") -> None:
    """Append to ``bad`` what ``item`` (of ``items``, a list of content items named ``name``)
    held where text belongs when it is no string: the item itself when it is neither a string
    nor an object (``content item 2 is int, …``), else its ``text`` (``content item 2: text is
    list, …``; a ``text`` written as null too, a text block without its text: ``text is
    null``); nothing for a string, a null item or an object whose ``text`` is a string or
    absent.  The one test of a content item read as nothing although it held a value
    (``as_text``, and the parsers that flatten their own parts)."""
    value = item.get("text") if item.__class__ is dict else item
    if value.__class__ is not str and (value is not None or item.__class__ is dict
                                       and "text" in item):
        # which item: found only when one is said (the flattening loop counts nothing), by
        # identity; one object met more than once (``[7, 7]``: Python's one 7) is each of its
        # places in turn, the first not said yet
        said = ""
        for k, x in enumerate(items):
            if x is item:
                said = not_a_string(value, f"{name} {k}{': text' if value is not item else ''}")
                if said not in bad:
                    break
        bad.append(said)


def held(value: Any) -> str:
    """What a field holds, as an issue names it: its type's name (``int``, ``list``, ``dict``),
    ``null`` for JSON's null (never Python's ``NoneType``)."""
    return "null" if value is None else type(value).__name__


def not_a_string(value: Any, field: str) -> str:
    """What is wrong with ``value`` read where text belongs (``field``, e.g. ``text``):
    ``text is int, not a string (read as empty)``: one wording for every parser's issue."""
    return f"{field} is {held(value)}, not a string (read as empty)"


def kept_as_json(value: Any, field: str) -> str:
    """What is wrong with a name or an id (``field``) that is no string, kept as its JSON:
    ``tool_calls[0].id is int, not a string (kept as its JSON)``: one wording for every
    parser's issue (``named``, ``run_text.run_name``)."""
    return f"{field} is {held(value)}, not a string (kept as its JSON)"


def content_as_text(content: Any, bad: list[str]) -> str:
    """``as_text(content, bad)`` of a message's or a tool result's whole content, which a log
    writes as a string or a list of items: a content that is neither, nor null nor an object
    with its ``text`` (a number, a boolean, another object) is kept as its JSON, as
    ``as_text`` keeps it, and appended to ``bad`` too (``content is int, not a string or a
    list (kept as its JSON)``): no model was sent such a value."""
    text = as_text(content, bad)
    if content is not None and content.__class__ is not list and content.__class__ is not str \
            and not (content.__class__ is dict and content.get("text").__class__ is str):
        bad.append(f"content is {held(content)}, not a string or a list (kept as its JSON)")
    return text


def named(value: Any, field: str, bad: list[str] | None) -> str:
    """A name or an id the log writes as a string (a tool's name, a call's id): ``value``
    itself; a value of another type (a number, a list) its JSON (``["bash"]``, never Python's
    ``['bash']``), appended to ``bad`` (``field``: what it is, e.g. ``tool_calls[0].id``)."""
    if value.__class__ is str:
        return value
    if bad is not None:
        bad.append(kept_as_json(value, field))
    return json_text(value)
