"""Claude Code records, validated: what one transcript line is, as the parser needs it.

``record`` turns a user, assistant, attachment or boundary record into a ``Rec`` (raising
``Bad`` for a missing or wrong-typed field); ``rtype`` names a record for the coverage report;
``NON_MESSAGE_TYPES`` are the known record types that are not context.

Not here: a record's content as blocks (``replay.ingest.parsers.claude_code_content``), which
records the model saw (``replay.ingest.parsers.claude_code_path``), building the run
(``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from replay.ingest.parsers.claude_code_content import (
    Bad,
    Block,
    attachment_text,
    content_blocks,
    flat_text,
)
from replay.ingest.parsers.claude_code_node import NO_TIE, Node
from replay.ingest.parsers.content_text import not_a_string
from replay.ingest.parsers.json_decode import loads
from replay.ingest.parsers.json_depth import decoded
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.source import Source

NON_MESSAGE_TYPES = frozenset((
    "summary", "file-history-snapshot", "file-history-delta", "progress", "queue-operation",
    "last-prompt", "mode", "permission-mode", "ai-title", "custom-title", "agent-name",
    "agent-setting", "attachment", "bridge-session", "worktree-state", "fork-context-ref",
    "frame-link", "relocated", "started", "result", "atis-latch", "pr-link",
    "saved_hook_context", "tag",
    # since 2.1.218 (harness-policies.md Part C; stream-json's ``command_lifecycle`` is
    # ``{command_uuid, state}``): bookkeeping of the client, not what the model was sent
    "command_lifecycle", "tool_result_meta", "historical", "dev_intent", "turn_preempted",
    "usage_report", "pasted_content"))
"""Claude Code record types that are not messages: they never decide the format (other tools
write records named ``summary`` or ``result`` too), and a head of nothing else is only near.
``pasted_content`` keeps a paste the user message already holds (or names): counted, not
added a second time."""


class Again(tuple[Block, ...]):
    """``Rec.blocks`` of a record whose one text is read again from the file when its run is
    built (``AGAIN``: a file read in pieces, ``jsonl_reread.LineIndex``), not held meanwhile;
    read as blocks, none (``block_list``: one text block, of ``AGAIN``)."""

    __slots__ = ()


AGAIN = Again()
_CLEARED = "[Old tool result content cleared]"
"""What the model saw in place of a microcompacted tool result."""

@dataclass(slots=True)
class Rec(Node):
    """A record the run is made of: a message, an attachment or a boundary, and its place in
    the session's tree (the ``Node`` it is: one object a record, not two; the parser sets the
    links after ``record``).  A response's own fields are a ``Reply``'s, a boundary's facts a
    ``Mark``'s: a user record or an attachment (most records of a big transcript) has no slot
    for them (read here, they are their empty values).  ``record`` makes one with its fields
    by position (a call with keywords cost ~2.5x as much: one a record)."""

    role: str = ""
    """user, assistant, attachment, compact (a compaction boundary) or micro."""
    rtype: str = ""
    """Its coverage type."""
    blocks: tuple[Block, ...] | str = ()
    """Its content (a tuple: a list's own header and spare room a record more), or for a user
    record or an attachment that is one text, that text (``block_list``: the one text block;
    a tuple of a tuple is ~100 bytes a record more, most records of a big transcript), or
    ``AGAIN`` for that text read again when the run is built (``text_again``)."""

    @property
    def msg_id(self) -> str:
        """The response's ``message.id`` (``Reply``)."""
        return ""

    @property
    def model(self) -> str:
        """The response's model (``Reply``)."""
        return ""

    @property
    def usage(self) -> dict[str, Any] | None:
        """The response's usage (``Reply``)."""
        return None

    @property
    def miss(self) -> str:
        """The response's cache miss reason (``Reply``)."""
        return ""

    @property
    def edits(self) -> str:
        """The response's applied context edits, as JSON (``Reply``)."""
        return ""

    @property
    def meta(self) -> dict[str, Any] | None:
        """A boundary's recorded facts (``Mark``)."""
        return None


@dataclass(slots=True)
class Reply(Rec):
    """An assistant record: a ``Rec`` with its response's fields."""

    msg_id: str = ""
    model: str = ""
    usage: dict[str, Any] | None = None
    miss: str = ""
    edits: str = ""


@dataclass(slots=True)
class Mark(Rec):
    """A compaction or microcompaction boundary: a ``Rec`` with its recorded facts."""

    meta: dict[str, Any] | None = None
    """``boundary_meta``."""


class Message(msgspec.Struct, gc=False):
    """A record's ``message`` object: the fields ``record`` reads, each as JSON has it (``None``
    when absent or null, but ``model`` and ``id``, a value of another type of which is said:
    ``UNSET`` when absent), the rest of the object (``type``, ``role``, ``stop_reason`` ...)
    skipped by the decoder, not built into a dict (``Line.message``).  In the order Claude Code
    writes them; not tracked by the garbage collector (as ``Line``)."""

    model: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    content: Any = None
    usage: Any = None
    diagnostics: Any = None
    context_management: Any = None


_MESSAGE_FIELDS = frozenset(Message.__struct_fields__)


class Line(msgspec.Struct, gc=False):
    """One transcript line: the fields the parser reads, each as JSON has it (``None`` when
    absent or null, but ``parentUuid`` and the run-level fields a null of which is said,
    ``sessionId``, ``version``, ``agentId`` and the titles: ``UNSET`` when absent), the rest of
    the line skipped
    by the decoder (``decode``; a progress record's ``data``, a tool result's
    ``toolUseResult``: most of a transcript's bytes).  In the order Claude Code writes them:
    the decoder looks a key up from the field after the last one found, so a key in that order
    is found at once (3% fewer instructions decoding the samples than in the order before).
    Not tracked by the garbage collector (``gc=False``: 3% fewer again, made and freed): its
    values are decoded JSON, which never refer back to it, so it is in no reference cycle."""

    parentUuid: Any = msgspec.UNSET
    logicalParentUuid: Any = None
    isSidechain: Any = None
    sessionId: Any = msgspec.UNSET
    version: Any = msgspec.UNSET
    agentId: Any = msgspec.UNSET
    type: Any = None
    subtype: Any = None
    message: Message | None = None
    """``None`` absent or null; a value that is no object makes ``decode`` refuse the line
    (``line_of`` then keeps it as it is)."""
    isCompactSummary: Any = None
    uuid: Any = None
    timestamp: Any = None
    forkedFrom: Any = None
    attachment: Any = None
    customTitle: Any = msgspec.UNSET
    aiTitle: Any = msgspec.UNSET
    compactMetadata: Any = None
    compact_metadata: Any = None
    microcompactMetadata: Any = None


_DECODER = msgspec.json.Decoder(Line)
decode = _DECODER.decode
"""A line as a ``Line`` (raises what ``msgspec`` raises for anything else)."""
decode_lines = _DECODER.decode_lines
"""Lines as ``Line``s, at once (``jsonl.iter_typed``'s ``lines``)."""
_FIELDS = frozenset(Line.__struct_fields__)


def line_of(raw: dict[str, Any]) -> Line:
    """A record decoded the generic way (a line ``decode`` refused), as a ``Line``."""
    line = Line(**{k: v for k, v in raw.items() if k in _FIELDS})
    msg: Any = line.message  # (as JSON has it: ``decode`` refused the line)
    if msg.__class__ is dict:  # (read as ``decode`` reads it)
        line.message = Message(**{k: v for k, v in msg.items() if k in _MESSAGE_FIELDS})
    return line


def block_list(rec: Rec) -> tuple[Block, ...]:
    """``rec``'s blocks (a text kept as itself: its one text block; ``AGAIN`` stands for it)."""
    blocks = rec.blocks
    return blocks if blocks.__class__ is tuple else (("text", blocks),)


def text_again(no: int, raw: bytes) -> str:
    """The text of the record of line ``no`` (``blocks`` ``AGAIN``) from the line ``raw`` read
    again (the bytes first read: ``LineIndex.read``), decoded and made a record as it was
    (``iter_typed``, ``record``)."""
    try:
        if not raw.isascii():
            raw.decode()
        line = decoded(decode, raw)
    except Exception:  # noqa: BLE001 - decoded the generic way, as ``iter_typed`` does
        line = line_of(loads(raw))
    again = record(no, line, rtype(line), "")
    if again is None or again.blocks.__class__ is not str:  # (the same bytes: never)
        raise ValueError(f"line {no} read again is not the record first read")
    return again.blocks


def rtype(raw: Line) -> str:
    """The coverage name of a record's type: ``type``, ``system/<subtype>``,
    ``attachment/<type>``."""
    kind = raw.type
    kind = sys.intern(kind) if isinstance(kind, str) else f"<{type(kind).__name__}>"
    if kind == "system" and isinstance(raw.subtype, str):
        return f"system/{raw.subtype}"
    att = raw.attachment
    if kind == "attachment" and isinstance(att, dict) and isinstance(att.get("type"), str):
        return f"attachment/{att['type']}"
    return kind


def count_other(src: Source, rtype: str) -> None:
    """Count a record that is not part of the run by its fate."""
    if rtype.split("/")[0] in NON_MESSAGE_TYPES or rtype.startswith("system"):
        src.coverage.skipped(rtype)
    else:
        src.coverage.unknown(rtype)


def record(no: int, raw: Line, rtype: str, uuid: str, parent: str | None = None,
           unread: list[str] | None = None) -> Rec | None:
    """Validate one record into a ``Rec`` (raises ``Bad``); None for a record that is not
    part of the run.  ``parent``: its ``parentUuid`` as the parser links it (``Node.parent``).
    ``unread``: where a value in a tool result (or a compact summary) read as empty although
    it held one where text belongs is appended (``content_text.not_a_string``; the record is
    kept, the caller says each), and a response's ``message.model`` or ``message.id`` of
    another type."""
    kind = raw.type
    ts = raw.timestamp
    if ts.__class__ is not str:  # (``as_str``: a decoded value is a str or no string at all)
        ts = ""
    if kind == "user" or kind == "assistant":  # (most records)
        msg = raw.message
        if msg.__class__ is not Message:
            raise Bad(f"{kind} record has no 'message' object")
        content = msg.content
        if kind == "user":
            if content.__class__ is str:
                return Rec(no, uuid, parent, ts, NO_TIE, "user", rtype, (
                    ("summary", content),) if raw.isCompactSummary is True else content)
            blocks = (("summary", flat_text(content, -1, unread)),) if \
                raw.isCompactSummary is True and content.__class__ is list else \
                content_blocks(content, True, unread)
            return Rec(no, uuid, parent, ts, NO_TIE, "user", rtype, blocks)
        usage = msg.usage
        if usage is not None and usage.__class__ is not dict:
            raise Bad(f"message.usage is {type(usage).__name__}, expected an object")
        mid = msg.id
        model = msg.model
        if model.__class__ is not str:
            if unread is not None and model is not UNSET:  # (read as none: said, a null
                # too, which the API never writes)
                unread.append(not_a_string(model, "message.model"))
            model = ""
        if mid.__class__ is not str:
            if mid is not None and mid is not UNSET and unread is not None:  # (read as
                # none: the record is one without an id, ``claude_code_noid``)
                unread.append(not_a_string(mid, "message.id"))
            mid = f"line-{no}"
        elif not mid:
            mid = f"line-{no}"
        diag = msg.diagnostics
        miss = diag.get("cache_miss_reason") if isinstance(diag, dict) else None
        miss = miss.get("type") if isinstance(miss, dict) else miss
        cm = msg.context_management
        edits = cm.get("applied_edits") if isinstance(cm, dict) else None
        return Reply(no, uuid, parent, ts, NO_TIE, "assistant", rtype,
                     content_blocks(content, False),
                     mid,
                     model, usage,
                     miss if isinstance(miss, str) else "", json_text(edits) if edits else "")
    if kind == "attachment":
        text = attachment_text(raw.attachment)
        return Rec(no, uuid, parent, ts, NO_TIE, "attachment", rtype, text) if text else None
    if rtype in ("system/compact_boundary", "system/microcompact_boundary"):
        return Mark(no, uuid, parent, ts, NO_TIE,
                    "compact" if rtype == "system/compact_boundary" else "micro", rtype, (),
                    boundary_meta(raw))
    return None


_SEGMENT = ("headUuid", "anchorUuid", "tailUuid")
"""``compactMetadata.preservedSegment``'s keys, in the order ``boundary_meta`` gives them."""


def boundary_meta(raw: Line) -> dict[str, Any]:
    """A boundary's recorded facts: trigger, token counts, preserved records (``preserved``:
    the uuids ``preservedMessages`` lists, else the segment's head and tail; ``segment``:
    (head, anchor, tail) when ``preservedSegment`` names all three), cleared calls
    (``compactMetadata``; ``compact_metadata`` with snake-case keys in stream-json captures)."""
    meta = raw.compactMetadata
    if not isinstance(meta, dict) and isinstance(snake := raw.compact_metadata, dict):
        meta = {"preTokens": snake.get("pre_tokens"), "postTokens": snake.get("post_tokens"),
                "trigger": snake.get("trigger")}
    if raw.subtype == "microcompact_boundary" and isinstance(raw.microcompactMetadata, dict):
        meta = raw.microcompactMetadata
    meta = meta if isinstance(meta, dict) else {}
    out: dict[str, Any] = {"trigger": meta.get("trigger") if isinstance(meta.get("trigger"), str)
                           else ""}
    for key, name in (("preTokens", "pre"), ("postTokens", "post"), ("tokensSaved", "saved")):
        out[name] = meta.get(key)  # as recorded: RunBuilder.event checks and reports it
    ids = meta.get("compactedToolIds")
    out["cleared"] = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    kept = meta.get("preservedMessages")
    uuids = kept.get("uuids") if isinstance(kept, dict) else None
    seg = meta.get("preservedSegment")
    if isinstance(seg, dict) and all(isinstance(seg.get(k), str) and seg[k] for k in _SEGMENT):
        out["segment"] = tuple(seg[k] for k in _SEGMENT)
    if isinstance(uuids, list) and uuids:
        out["preserved"] = [u for u in uuids if isinstance(u, str)]
    elif isinstance(seg, dict):
        out["preserved"] = [u for u in (seg.get("headUuid"), seg.get("tailUuid"))
                            if isinstance(u, str)]
        out["preserved"] = list(dict.fromkeys(out["preserved"]))
    return out
