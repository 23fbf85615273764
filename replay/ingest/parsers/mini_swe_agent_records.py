"""mini-swe-agent trajectories decoded as the parser reads them: each message's fields the
parser needs, the rest skipped, not built.

``trajectory`` reads a file's messages and ``info``: ``typed`` decodes a trajectory into a
``Doc`` (or a bare list of ``Message``), or gives None for a document it does not take as it
is, which is then read the generic way (``jsonl.load_json``, its messages salvaged from a
damaged document), each message made a ``Message`` by ``message_of``: the same fields, the
same values.  Most of a trajectory's bytes are each response's ``choices`` (the
completion again, a third of the samples' bytes), never read: skipped by the decoder.

Not here: what the parser makes of a message (``replay.ingest.parsers.mini_swe_agent``).
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from msgspec import UNSET

from replay.ingest.input_files import document_too_big
from replay.ingest.parsers.json_depth import check_each, too_deep
from replay.ingest.parsers.jsonl import _is_utf8, array_items, as_obj, load_json
from replay.ingest.parsers.source import Issue, Source


class Response(msgspec.Struct, gc=False):
    """A message's ``extra.response``: the fields read (``None`` absent or null), the rest
    (``choices``, ``id`` ...) skipped.  Not tracked by the garbage collector: its values are
    decoded JSON, which never refer back to it (as ``claude_code_records.Line``)."""

    model: Any = None
    usage: Any = None


class Extra(msgspec.Struct, gc=False):
    """A message's ``extra``: the fields read (``None`` absent or null)."""

    timestamp: Any = None
    interrupt_type: Any = None
    actions: Any = None
    response: Response | None = None
    """A value that is no object makes ``typed`` refuse the document (``message_of`` then
    keeps it as it is: read as none)."""


class Message(msgspec.Struct, gc=False):
    """One message: the fields read (``None`` absent or null, but ``role``: ``UNSET`` when
    absent, which is said apart from a null), in the order mini-swe-agent writes them (the
    decoder looks a key up from the field after the last one found)."""

    role: Any = UNSET
    content: Any = None
    tool_calls: Any = None
    tool_call_id: Any = None
    extra: Extra | None = None
    """A value that is no object makes ``typed`` refuse the document (``message_of`` then
    keeps it as it is: read as none)."""


class Doc(msgspec.Struct, gc=False, forbid_unknown_fields=True, kw_only=True):
    """A trajectory object with its ``messages`` list and no key but the known ones (a key not
    known here is counted ``unknown``: such a document is read the generic way, which names
    it); ``UNSET`` for a key absent."""

    info: Any = UNSET
    messages: list[Message]
    """Required: a document without is refused (the generic way says it)."""
    trajectory_format: Any = UNSET
    instance_id: Any = UNSET


SKIPPED_KEYS = ("info", "trajectory_format", "instance_id")
"""Top-level keys read for the model / version / action pattern only, or not at all."""
NO_EXTRA = Extra()
"""The ``extra`` of a message without one (or with one that is no object)."""
NO_RESPONSE = Response()
"""The response of a message without one (or with one that is no object)."""
_DECODE = msgspec.json.Decoder(Doc | list[Message]).decode
_MESSAGE_FIELDS = frozenset(Message.__struct_fields__)
_EXTRA_FIELDS = frozenset(Extra.__struct_fields__)
_RESPONSE_FIELDS = frozenset(Response.__struct_fields__)


def trajectory(src: Source, issues: list[Issue]
               ) -> tuple[list[Any], dict[str, Any], list[tuple[int, Any]] | None] | None:
    """(messages, ``info``, the messages salvaged with their lines or None) of a trajectory,
    its top-level keys counted in ``src.coverage`` (``info``, ``trajectory_format`` and
    ``instance_id`` skipped, any other but ``messages`` unknown); None (with an issue) for a
    file that holds no messages list.  Each message is a ``Message``, or a value that is no
    object as it is."""
    cov = src.coverage
    doc: Any = typed(src.data)  # (the fields read, the rest skipped: most documents)
    if doc.__class__ is Doc:
        for key in SKIPPED_KEYS:  # (the only keys a ``Doc`` has but ``messages``)
            if getattr(doc, key) is not UNSET:
                cov.skipped(key)
        return doc.messages, as_obj(doc.info), None
    if doc is not None:  # a bare list of messages
        return doc, {}, None
    doc = load_json(src, issues)  # the generic way
    found = None
    if doc is None:
        found, stop = array_items(src, "messages" if src.data.lstrip()[:1] != b"[" else None)
        if not found:
            return None
        issues.append(Issue(src.path, stop, f"damaged file: kept the {len(found)} readable "
                                            "messages (info lost)"))
        doc = [item for _, item in found]
    if isinstance(doc, list):
        return [message_of(m) for m in doc], {}, found
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        issues.append(Issue(src.path, 0, "not a mini-swe-agent trajectory: no messages[] list"))
        return None
    for key in doc:
        if key in SKIPPED_KEYS:
            cov.skipped(key)
        elif key != "messages":
            cov.unknown(key)
    return [message_of(m) for m in doc["messages"]], as_obj(doc.get("info")), found


def typed(data: bytes) -> Doc | list[Message] | None:
    """``data`` decoded as a ``Doc`` or a bare list of ``Message``; None when it is not taken
    so (the caller decodes it the generic way): too big to decode whole, not UTF-8 (the
    decoder passes over a skipped field's bytes unchecked), nested over ``MAX_DEPTH`` where
    the decoder could go that deep, not JSON as msgspec reads it (``NaN``, an escaped lone
    surrogate in a field read ...), an object without a ``messages`` list or with a key not
    known here, a message that is no object, a field whose shape is not the one typed here (an
    ``extra`` or response that is no object), or holding an integer Python does not read
    (``long_digits``: the decoder passes over a skipped one, where the generic way refuses
    the document)."""
    if document_too_big(len(data)) or not _is_utf8(data) or long_digits(data):
        return None
    if check_each() and too_deep(data):
        return None
    try:
        return _DECODE(data)
    except Exception:  # noqa: BLE001 - whatever msgspec refuses: read the generic way
        return None


def long_digits(data: bytes) -> bool:
    """Whether ``data`` holds more digits in a row than Python turns into an integer
    (``sys.get_int_max_str_digits``: an integer that long makes the generic decoding refuse
    the document, ``ValueError``; inside a string, or a float's, they are read the generic
    way too, which reads them).  Such a run of ``n`` digits or more holds a byte whose offset
    is a multiple of ``n``: only the digits in a row through a digit at such an offset are
    counted (a few µs a document, where looking at every byte took 0.25 ms for the samples'
    437 KB trajectory, more than skipping its responses saves)."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return False
    n = limit + 1
    sampled = data[::n].translate(_DIGIT_ONES)  # (each n-th byte: a digit as 1)
    k = sampled.find(b"1")
    while k >= 0:  # (a digit there: the digits in a row through it counted, up to n)
        at = k * n
        before, after = data[max(0, at - n + 1):at], data[at:at + n]
        if len(before) - len(before.rstrip(_DIGITS)) + len(after) - len(
                after.lstrip(_DIGITS)) >= n:
            return True
        k = sampled.find(b"1", k + 1)
    return False


_DIGITS = b"0123456789"
_DIGIT_ONES = bytes(0x31 if c in _DIGITS else 0x30 for c in range(256))
"""Each digit as ``1``, any other byte as ``0`` (``long_digits``)."""


def message_of(m: Any) -> Any:
    """A message decoded the generic way (``typed`` refused its document, or it was salvaged
    from a damaged one) as a ``Message`` (its ``extra`` an ``Extra``, its response a
    ``Response``, each when it is an object; a value of another type kept as it is); a value
    that is no object as it is."""
    if m.__class__ is not dict:
        return m
    msg = Message(**{k: v for k, v in m.items() if k in _MESSAGE_FIELDS})
    extra: Any = msg.extra
    if extra.__class__ is dict:
        ex = Extra(**{k: v for k, v in extra.items() if k in _EXTRA_FIELDS})
        response: Any = ex.response
        if response.__class__ is dict:
            ex.response = Response(**{k: v for k, v in response.items()
                                      if k in _RESPONSE_FIELDS})
        msg.extra = ex
    return msg
