"""A value where a log has text that is no string (a number, a list, an object): read as
empty, as before, but never silently: one ``Issue`` per value, at the builder's line and
naming the message and the field (``message 3: text is int, not a string (read as empty)``),
so a run whose tokens shrank says why.  A name or an id of the wrong type (``name_field``) is
kept as its JSON, said the same way.

Not here: flattening content (``replay.ingest.parsers.content_text.as_text``, which lists such
values in its ``bad``), the wording (``content_text.not_a_string``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from replay.ingest.parsers.content_text import as_text, named, not_a_string
from replay.ingest.parsers.source import Issue

if TYPE_CHECKING:
    from replay.ingest.parsers.builder import RunBuilder


def text_field(b: RunBuilder, value: Any, field: str, *, line: int | None = None) -> str:
    """``value`` when it is a string; '' when absent (None); else '' and one issue naming it
    (about the message being written: call it after ``b.message``; at ``line``, default
    ``b.line``)."""
    if value.__class__ is str:
        return value
    if value is not None:
        said(b, [not_a_string(value, field)], line=line)
    return ""


def content_text(b: RunBuilder, content: Any, *, line: int | None = None) -> str:
    """``as_text(content)``, with an issue for each value in it read as empty that held one
    (about the message being written: call it after ``b.message``; at ``line``, default
    ``b.line``)."""
    if content.__class__ is str:
        return content
    bad: list[str] = []
    text = as_text(content, bad)
    if bad:
        said(b, bad, line=line)
    return text


def said(b: RunBuilder, bad: list[str], *, line: int | None = None) -> None:
    """One issue for each of ``bad`` (``not_a_string`` reasons) about the message being written
    (at ``line``, default ``b.line``)."""
    at = b.line if line is None else line
    b.issues.extend(Issue(b.source.path, at, f"message {b.msg_index}: {why}") for why in bad)


def name_field(b: RunBuilder, value: Any, field: str, *, line: int | None = None) -> str:
    """A name or an id (a tool's, a call's) the log writes as a string: ``value`` itself; ''
    when absent (None: the caller's default); another value its JSON (``content_text.named``:
    a call id 5 pairs with its result's 5 as before), with one issue about the message being
    written (call it after ``b.message``)."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    bad: list[str] = []
    text = named(value, field, bad)
    said(b, bad, line=line)
    return text
