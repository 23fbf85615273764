"""Which parser takes a file, from what the format sniffers see of it: its first 64 KiB, and
two cuts for a head that long content fills.

``detect_file`` tries the plain head first; when no parser recognises it, the head of JSON
Lines made of each record's first ``CUT_BYTES`` (a big snapshot or paste as the first record),
then the file with every JSON string shortened to ``STRING_BYTES`` (a long system prompt or
observation at the start of a single-document trajectory hid every key after it).  The
``Detection`` says which cut decided.  A head of nothing but one format's own non-message
records (``metadata_only``) goes to that format last, which then says whether the file holds a
conversation at all.

Not here: what each parser sniffs (``replay.ingest.parsers``), reading the file (``replay.ingest.batch``).
"""

from __future__ import annotations

import re

from replay.ingest.parsers import Detection, detect, detect_format, metadata_only
from replay.ingest.parsers.source import SNIFF_BYTES

CUT_BYTES = 4096
"""How much of each line the second detection pass sees (``records_cut``)."""
STRING_BYTES = 256
"""How much of each JSON string the third detection pass sees (``strings_cut``)."""
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string literal (unrolled: linear, no nested repetition)."""


def detect_file(name: str, data: bytes, *, explain: bool = False) -> Detection:
    """The parser for a file named ``name`` with content ``data`` (the reason filled in with
    ``explain``, or when a cut decided, or when none recognised it)."""
    head = data[:SNIFF_BYTES]
    if explain:
        found = detect(name, head)
    else:
        found = Detection(detect_format(name, head), "")
        if found.format is None:
            found = detect(name, head)
    for cut, how in ((records_cut, (f"each record's first {CUT_BYTES // 1024} KiB; long "
                                   "records fill the first 64 KiB")),
                     (strings_cut, (f"each string's first {STRING_BYTES} bytes; long strings "
                                   "fill the first 64 KiB"))):
        if found.format is not None:
            break
        shown = cut(data)
        if shown is not None and (again := detect(name, shown)).format is not None:
            found = Detection(again.format, f"{again.reason} ({how})" if again.reason else how)
    if found.format is None and (weak := metadata_only(name, head)) is not None:
        return weak
    return found


def records_cut(data: bytes) -> bytes | None:
    """The first 64 KiB of a JSON Lines file made of each line's first ``CUT_BYTES`` (from its
    first 4 MiB), so records longer than the head (a big snapshot or paste first) do not hide
    the ones after them; None when the file has no line past the plain head."""
    if data.find(b"\n", 0, SNIFF_BYTES) not in (-1, len(data) - 1) and \
            data.count(b"\n", 0, 4 * SNIFF_BYTES) > 16:
        return None  # the plain head already held many records
    out, size = [], 0
    for line in data[:64 * SNIFF_BYTES].split(b"\n"):
        out.append(line[:CUT_BYTES])
        size += len(out[-1]) + 1
        if size >= SNIFF_BYTES:
            break
    return b"\n".join(out)[:SNIFF_BYTES] if len(out) > 1 else None


def strings_cut(data: bytes) -> bytes | None:
    """The start of the file with every JSON string longer than ``STRING_BYTES`` shortened to
    its first ``STRING_BYTES`` (still a closed string, cut on a character), up to 64 KiB of
    output; None when no string of the head was shortened.  Scans no further than the strings
    it needs (at worst the file once, linearly)."""
    out, pos, cut = bytearray(), 0, False
    for m in _STRING.finditer(data):
        out += data[pos:m.start()]
        if m.end() - m.start() > STRING_BYTES + 2:
            piece = data[m.start():m.start() + 1 + STRING_BYTES]
            odd = (len(piece) - len(piece.rstrip(b"\\"))) % 2  # do not end inside an escape
            piece = piece[:len(piece) - odd].decode("utf-8", "ignore").encode()
            out += piece + b'"'
            cut = True
        else:
            out += data[m.start():m.end()]
        pos = m.end()
        if len(out) >= SNIFF_BYTES:
            break
    else:
        out += data[pos:pos + SNIFF_BYTES]
    return bytes(out[:SNIFF_BYTES]) if cut else None
