"""JSON Lines decoded a batch of lines at a time, when that is the same as line by line.

A msgspec decoder's ``decode_lines`` decodes many lines in one call (no slice, no call, no
test a line in Python: ~20% of the CPU of reading the samples' Claude Code lines one at a
time), but it reads its input as JSON values separated by any whitespace, not as lines: a
blank line gives nothing, ``{…}{…}`` on one line gives two values, a value may go on over a
newline.  So a batch is taken only when each of its lines is one value for certain
(``plain_lines``): every line is ``{`` … ``}`` with nothing around but one carriage return
at its end (every newline of the batch is in ``}\\n{`` or ``}\\r\\n{``, the batch opens with
``{`` and closes with ``}`` or ``}\\r``), and it decodes to as many values as it has lines.
Then no value goes on over a newline (a line ending in ``}`` inside an object is followed by
``,``, ``}`` or ``]`` after any whitespace, never ``{``; a string holds no raw newline or
carriage return, which msgspec refuses as JSON does), so each line holds at least one value,
and with as many values as lines exactly one: the value its own decoding gives (a carriage
return after it is whitespace there too).  Any other batch (a blank line, a line with spaces
around, one that does not decode) is read line by line, as before.  Lines ending in ``\\r\\n``
(a file written on Windows or checked out with ``core.autocrlf``, such as the legacy Codex
sample) are read a batch at a time: one at a time they cost 2.7 ms for the sample's 1.7 MB
against 1.6 ms.

Not here: reading lines one at a time and their issues (``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BATCH_BYTES = 1 << 18
"""Bytes of lines decoded at once (256 KiB; the batch goes on to the end of the line there):
their values are held together, a few hundred records at the most."""


def plain_lines(decode_lines: Callable[[memoryview], list[Any]], data: bytes, view: memoryview,
                pos: int, limit: int) -> tuple[list[Any] | None, int]:
    """The values of the lines of ``data`` from ``pos`` to the end of the line ``BATCH_BYTES``
    on (``view``: a view of ``data``), decoded at once by ``decode_lines``, one a line, and
    where they end (the newline after the last, or the end of ``data``); None for the values
    when they cannot be so read (see the module: the lines are then read one at a time), or
    when the batch is over ``limit`` bytes (a line that long is refused, not read)."""
    size = len(data)
    stop = data.find(b"\n", min(pos + BATCH_BYTES, size - 1))  # (the last line's newline)
    stop = size if stop < 0 else stop
    if stop - pos > limit or data[pos] != 0x7B or data[stop - 1] != 0x7D and (
            data[stop - 1] != 0x0D or data[stop - 2] != 0x7D):  # ({ … } or { … }\r)
        return None, stop
    n_lines, nl = 1, data.find(b"\n", pos, stop)
    while nl >= 0:  # (each newline found by memchr: counting them is a byte at a time)
        if data[nl + 1] != 0x7B or data[nl - 1] != 0x7D and (
                data[nl - 1] != 0x0D or data[nl - 2] != 0x7D):  # (} \n { or } \r\n {)
            return None, stop
        n_lines += 1
        nl = data.find(b"\n", nl + 1, stop)
    try:
        values = decode_lines(view[pos:stop])
    except Exception:  # noqa: BLE001 - a line that does not decode: read one at a time
        return None, stop
    return (values if len(values) == n_lines else None), stop
