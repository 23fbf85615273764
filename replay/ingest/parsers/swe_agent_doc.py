"""A SWE-agent trajectory document read for the fields the parser reads of its steps.

A step of a 1.x trajectory holds the whole prompt of its model call (``query``, or the chat
after it, ``messages``): most of the file (1.1 of the 1.3 MB of the Claude sample), read only
for the first step and for a step without an action.  ``document`` decodes the document in one
pass with each step as a ``Step`` whose ``query`` and ``messages`` stay undecoded (their text,
``msgspec.Raw``: checked as JSON, nothing built), every other field and top-level value as the
whole decode gives it; ``field`` reads a step's field whichever way it was read.  Decoding the
samples' five documents whole took 1.96 ms, this way 1.06 ms.

Only a document under ``jsonl.LAZY_MIN_BYTES``, which ``load_or_salvage`` decodes whole: what
this holds of it is less (its steps' prompts not decoded); a bigger one is read lazily, a step
decoded at a time and let go, as before (its history too, where this would decode it whole).
The same values as ``load_or_salvage`` gives (``swe_agent.parse`` then reads the document
that way instead): taken only for a document that is UTF-8 (msgspec checks no skipped or raw
text's bytes), within ``input_files.document_too_big``'s bound and not nested too deep
(``json_depth``), that msgspec reads whole as JSON (a raw value is checked as JSON as it is
passed over), whose top-level keys are only those the parser knows (another key is said in
the coverage as unknown) and whose ``trajectory`` is a list of objects; anything else, and
whatever msgspec refuses (``NaN``, an escaped lone surrogate, a number out of range in a field
read: ``json`` reads those), is read by ``load_or_salvage``.  A raw ``query`` decoded later
gives what the whole decode gave it (``jsonl.loads``: msgspec, else ``json``).  Duplicate keys
keep their last value, in a ``Step`` as in a dict.

Not here: what the parser makes of a step (``replay.ingest.parsers.swe_agent``).
"""

from __future__ import annotations

from typing import Any

import msgspec

import replay.ingest.parsers.jsonl as json_lines
from replay.ingest.input_files import document_too_big
from replay.ingest.parsers.json_decode import item
from replay.ingest.parsers.json_depth import check_each, too_deep
from replay.ingest.parsers.jsonl import _is_utf8

_NULL = msgspec.Raw(b"null")


class Step(msgspec.Struct):
    """The fields of a trajectory step the parser reads (a step read by ``load_or_salvage``
    is made one by ``as_step``: its ``query`` and ``messages`` then decoded values)."""

    action: Any = None
    thought: Any = None
    response: Any = None
    observation: Any = None
    query: msgspec.Raw = _NULL
    messages: msgspec.Raw = _NULL


_ABSENT: Any = msgspec.UNSET
"""A top-level key the document does not have."""


class _Document(msgspec.Struct, forbid_unknown_fields=True):
    """The keys of a trajectory document the parser knows (any other: not read this way)."""

    trajectory: list[Step]
    history: Any = _ABSENT
    info: Any = _ABSENT
    replay_config: Any = _ABSENT
    environment: Any = _ABSENT


_decode = msgspec.json.Decoder(_Document).decode


def document(data: bytes) -> dict[str, Any] | None:
    """The trajectory document ``data`` by top-level key (its ``trajectory`` a list of ``Step``),
    or None when it is not read this way (see the module: ``load_or_salvage`` reads it)."""
    if len(data) >= json_lines.LAZY_MIN_BYTES or document_too_big(len(data)) or not _is_utf8(data) \
            or check_each() and too_deep(data):
        return None
    try:
        doc = _decode(data)
    except Exception:  # noqa: BLE001 - whatever msgspec refuses: read the usual way
        return None
    return {key: value for key in _Document.__struct_fields__
            if (value := getattr(doc, key)) is not _ABSENT}


def as_step(value: Any) -> Step:
    """A step as a ``Step``: itself, or a decoded step object's fields (``TypeError`` for a
    step that is no object)."""
    if value.__class__ is Step:
        return value
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    get = value.get
    query: Any = get("query")  # (decoded: ``field`` takes either)
    messages: Any = get("messages")
    return Step(action=get("action"), thought=get("thought"), response=get("response"),
                observation=get("observation"), query=query, messages=messages)


def field(step: Any, key: str) -> Any:
    """Field ``key`` (``query`` or ``messages``) of a step as decoded: a ``Step``'s, decoded now
    when raw, a step object's value, None for a step that is no object."""
    if step.__class__ is Step:
        return item(getattr(step, key))
    return step.get(key) if isinstance(step, dict) else None
