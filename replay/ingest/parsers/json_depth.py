"""How deep JSON may nest: one limit, a property of the text, whatever the caller's stack.

msgspec and the standard library's ``json`` decode a nested value by recursion counted against
Python's recursion limit, so how deep they go depends on how deep the caller's stack already
is (995-997 levels from a shallow one, fewer from a deep one, and a few levels apart between
the two decoders): the same line was read on one call path and refused on another.
``MAX_DEPTH`` is the limit instead: a text nested deeper is refused (``RecursionError``, as
before), one within it is decoded, on a stack of its own when the caller's has no room left
(``decoded``).

A decoder counts at least one level of the recursion limit per array or object, so where that
limit is at most ``MAX_DEPTH`` (Python 3.11 at its default of 1000) whatever it decodes is
within ``MAX_DEPTH`` and only a text it refuses is measured (``nesting``); elsewhere
(``check_each``: a raised limit, or 3.12+, where C recursion has a limit of its own) every
text is measured before it is decoded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from itertools import accumulate
from typing import TypeVar

A = TypeVar("A")
T = TypeVar("T")
MAX_DEPTH = 1000
"""The most arrays and objects a JSON text may have open at once (the text itself counted):
deeper is refused, with an issue, by every parser's decoder alike."""
ROOM = 3 * MAX_DEPTH + 200
"""Recursion room (frames) for work over a value nested ``MAX_DEPTH`` levels that recurses up
to three frames a level (a parser or the redactor walking it, ``repr`` or ``json.dumps`` of
it): given on a stack of its own (``on_own_stack``).  Measured: a chat file and an SWE-agent
trajectory nested 995 levels are redacted under a limit of 2,100."""
OWN_C_LIMIT = sys.version_info >= (3, 12)
"""Whether C recursion has a limit of its own (Python 3.12+), ``sys.setrecursionlimit`` aside."""
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def nesting(data: bytes | str) -> int:
    """How many arrays and objects ``data`` has open at once at most, outside its strings
    (escaped quotes and backslashes taken as JSON takes them); for a text that is not JSON,
    the same count over its brackets."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")  # a backslash's pair, an escaped quote
    outside = b"".join(raw.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    return max(accumulate((_STEP[c] for c in outside), initial=0))


def check_each() -> bool:
    """Whether a decoder could go deeper than ``MAX_DEPTH`` here and now (the recursion limit
    is raised, or C recursion has a limit of its own), so each text is measured first."""
    return OWN_C_LIMIT or sys.getrecursionlimit() > MAX_DEPTH


def too_deep(data: bytes | str) -> bool:
    """Whether ``data`` nests deeper than ``MAX_DEPTH``: measured (``nesting``) only when it
    holds more than ``MAX_DEPTH`` opening brackets, the only texts that can (1 line of the
    samples' 7,247; counting them costs an eighth of measuring, which ``check_each`` asks for
    every text on Python 3.12+: 0.012 s instead of 0.10 s for the samples' 9.2 MB, whose
    decoding takes 0.06 s)."""
    if isinstance(data, str):
        openers = data.count("[") + data.count("{")
    else:  # (bytes, or a buffer such as ``msgspec.Raw``)
        raw = data if isinstance(data, bytes) else bytes(data)
        openers = raw.count(b"[") + raw.count(b"{")
    return openers > MAX_DEPTH and nesting(data) > MAX_DEPTH


def decoded(decode: Callable[[bytes], T], data: bytes) -> T:
    """``decode(data)`` for a text within ``MAX_DEPTH``, however deep the caller's stack;
    ``RecursionError`` for one nested deeper."""
    if check_each() and too_deep(data):
        raise RecursionError(f"JSON nested over {MAX_DEPTH:,} levels")
    try:
        return decode(data)
    except RecursionError:
        return refused(decode, data)


def refused(decode: Callable[[bytes], T], data: bytes) -> T:
    """What ``decoded`` gives for a text ``decode`` refused with ``RecursionError`` (the
    caller's stack left it no room, or the text nests too deep): ``decode(data)`` on a stack
    of its own when the text is within ``MAX_DEPTH``, else ``RecursionError``."""
    if too_deep(data):
        raise RecursionError(f"JSON nested over {MAX_DEPTH:,} levels")
    return on_own_stack(decode, data)


def on_own_stack(fn: Callable[[A], T], arg: A, frames: int = MAX_DEPTH + 100) -> T:
    """``fn(arg)`` in a thread of its own (its stack empty), with ``frames`` of room under the
    recursion limit (raised for the call when lower): for work on a value nested up to
    ``MAX_DEPTH`` levels that recurses once a level (a decoder, an encoder: the default) or
    more (``frames`` then says how much), whatever the caller's stack."""
    out: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            out.append((True, fn(arg)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it is
            out.append((False, exc))

    limit = sys.getrecursionlimit()
    if limit < frames:
        sys.setrecursionlimit(frames)
    try:
        thread = threading.Thread(target=run, name="json-depth")
        thread.start()
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    ok, value = out[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
