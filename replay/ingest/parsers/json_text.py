"""JSON text of a decoded value, exactly as ``json.dumps(value, ensure_ascii=False)`` writes it:
the one JSON encoder parsers use (a call's arguments, an object output: the JSON text the model
saw).

Not here: reading JSON and JSON Lines (``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_encode_chunks: Callable[[Any, int], list[str]] | None = None if _C_ENCODER is None else \
    _C_ENCODER(None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ": ",
               ", ", False, False, True)


def json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, exactly: the one JSON encoder parsers use (a
    call's arguments, an object output: the JSON text the model saw).  ``json``'s C encoder is
    made once with ``dumps``'s settings and called directly: ``JSONEncoder.encode`` makes a new
    one (and a closure, a dict of markers) for every value, half the CPU of a call's arguments.
    Made without markers: a circular value (none comes out of a JSON decoder) would raise
    ``RecursionError``, not ``ValueError``.

    A value of strings, integers, booleans, nulls and lists and objects of them (string keys;
    what most calls' arguments are) is written by msgspec's encoder and re-spaced with
    ``dumps``'s separators by its formatter: the same text (msgspec escapes a string as
    ``dumps(ensure_ascii=False)`` does, every code point checked), 0.75x the CPU on the
    samples' 798 values (2.25 against 3.0 ms); nested too deeply for the caller's stack, it
    raises ``RecursionError`` at the depth ``json``'s encoder does (each counts a level a
    container: ``parse_file.parse_source`` then parses the file again with room).  A float (msgspec
    writes ``1e16`` where ``dumps`` writes ``1e+16``), another type, a key that is no string, a
    lone surrogate or over ``_PLAIN_CONTAINERS`` containers (a circular value) take ``json``'s
    encoder."""
    if _plain(value):
        try:
            return _format(_encode(value), indent=0).decode()
        except UnicodeEncodeError:  # a lone surrogate: json writes it
            pass
    if _encode_chunks is None:  # a Python without json's C accelerator
        return _json_text_slow(value)
    return "".join(_encode_chunks(value, 0))


_encode = msgspec.json.encode
_format = msgspec.json.format
_PLAIN_CONTAINERS = 200
"""Lists and objects in a value msgspec writes for ``json_text`` at the most (the walk over a
circular value ends there)."""


def _plain(value: Any) -> bool:
    """Whether ``value`` is strings, integers (booleans), nulls, and lists and string-keyed
    objects of them, with at most ``_PLAIN_CONTAINERS`` lists and objects (a circular value
    has more)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return True
    stack, containers = [value], 0  # (containers only: a scalar is tested where it is met)
    while stack:
        v = stack.pop()
        containers += 1
        if containers > _PLAIN_CONTAINERS:
            return False
        # (the two loops below test items alike, written twice: one loop over the values
        # after a pass over the keys cost ~1 M more instructions an ingest of the samples)
        if type(v) is dict:
            for key, item in v.items():
                if type(key) is not str:
                    return False
                t = type(item)
                if t is str or t is int or t is bool or item is None:
                    continue
                if t is not dict and t is not list:
                    return False
                stack.append(item)
        elif type(v) is list:
            for item in v:
                t = type(item)
                if t is str or t is int or t is bool or item is None:
                    continue
                if t is not dict and t is not list:
                    return False
                stack.append(item)
        else:
            return False
    return True


_json_text_slow = json.JSONEncoder(ensure_ascii=False).encode
