"""The one JSON decoder parsers use: ``loads`` is ``json.loads`` exactly (same values, same
exceptions) but faster, ``item`` decodes an array item ``jsonl.load_json`` left undecoded, and
``JSON_REFUSED`` is what decoding a text from a file raises when it is not read.

Not here: reading a file's lines or whole document (``replay.ingest.parsers.jsonl``), nesting
depth (``replay.ingest.parsers.json_depth``), encoding (``replay.ingest.parsers.json_text``).
"""

from __future__ import annotations

import json
from sys import getrecursionlimit
from typing import Any

import msgspec

from replay.ingest.parsers.json_depth import MAX_DEPTH, OWN_C_LIMIT, decoded, refused

_decode = msgspec.json.Decoder().decode
"""msgspec's decoder of any JSON text, the first ``iter_records`` tries on a line (what it
refuses is handed to ``json``; a text nested too deeply is measured first: ``loads``)."""

def loads(data: bytes | str) -> Any:
    """``json.loads(data)``, exactly: same values, same exceptions, three times faster, but
    for nesting: ``RecursionError`` for a text nested over ``json_depth.MAX_DEPTH`` levels and
    only then, however deep the caller's stack (``json_depth.decoded``).

    msgspec decodes (big integers stay integers, duplicate keys keep the last value, as in
    ``json``); what it refuses but ``json`` reads (escaped lone surrogates, ``NaN``, numbers
    beyond the float range, nesting deeper than msgspec goes) and what is not JSON at all is
    handed to ``json.loads``, so the value or the error is the standard library's.  Bytes
    must be UTF-8 (``UnicodeDecodeError`` otherwise, as ``data.decode("utf-8")`` raises).
    """
    if OWN_C_LIMIT or getrecursionlimit() > MAX_DEPTH:  # json_depth.check_each, inlined
        return decoded(_loads, data)  # type: ignore[arg-type]
    return _loads_checked(data)  # (~560 calls an ingest of the samples: the call costs nothing)


JSON_REFUSED: tuple[type[Exception], ...] = (ValueError, RecursionError)
"""What decoding a JSON text from a file raises when the text is not read (``loads``,
``json.loads``, a ``raw_decode``): not JSON, not UTF-8, an integer of too many digits
(``ValueError``) or nested over ``MAX_DEPTH`` levels (``RecursionError``).  A parser that tries
a string field as JSON (a tool call's ``arguments``, an output's metadata) catches these and
keeps the string: a 1 MB ``[[[…`` in a field is text, not a reason to lose the file."""


def _loads_checked(data: bytes | str) -> Any:
    """``loads`` where ``check_each`` is false (``_loads`` inlined: a call saved, a line of
    ``iter_records``)."""
    try:
        return _decode(data)
    except Exception:  # noqa: BLE001 - whatever msgspec refuses, json decides
        try:
            return json.loads(data if isinstance(data, str) else bytes(data).decode("utf-8"))
        except RecursionError:  # the caller's stack left no room, or the text nests too deep
            return refused(_loads, data)  # type: ignore[arg-type]


def _loads(data: bytes | str) -> Any:
    """``loads`` where the caller's stack is all there is (``json_depth`` adds the rest)."""
    try:
        return _decode(data)
    except Exception:  # noqa: BLE001 - whatever msgspec refuses, json decides
        return json.loads(data if isinstance(data, str) else bytes(data).decode("utf-8"))


def item(value: Any) -> Any:
    """An item of an array ``load_json(lazy=...)`` left undecoded (``msgspec.Raw``: its text),
    decoded now by ``loads``; any other value as it is (an item already decoded, e.g. one
    salvaged from a damaged file)."""
    return loads(value) if isinstance(value, msgspec.Raw) else value
