"""A big JSON Lines file read again from disk a piece at a time, its bytes in memory let go.

A parser that asks (``jsonl.iter_typed(stream=True)``) reads a file of ``STREAM_MIN_BYTES`` or
more that ``parse_file`` read and hashed (``Source.on_disk``) again from its path, a piece of
whole lines at a time (``pieces``), once ``Source.data`` is let go: the records it keeps are
not held beside a copy of the file (the peak of reading a file of small records, #24 item 3).
The bytes read again must be those hashed (``Source.sha256``): a file that changed in between
raises ``SourceChanged`` once it is read (a file that only grew is read as far as it was first
read).

A line a parser asks to read once more (``LineIndex``: its place, size and CRC-32 noted as it
was read) is read from the file again when the parser needs it, a window at a time: a record
need not hold what it is made into later (a Claude Code record's text, until its run is
built); bytes read then that are not those first read raise ``SourceChanged``.

Not here: decoding the lines (``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator

from replay.ingest.input_files import BOM, open_input
from replay.ingest.parsers.source import Issue, Source

STREAM_MIN_BYTES = 4 << 20
"""A file of this many bytes (4 MiB) or more is read again from disk; a smaller one from memory
(reading it again would hash it twice for a few megabytes)."""
PIECE_BYTES = 1 << 20
"""Bytes read from disk at a time."""


class SourceChanged(ValueError):
    """A file read again from disk was not the bytes first read and hashed: it changed in
    between, and what was read of it is not the file's."""


def reread(src: Source, issues: list[Issue], max_line: int,
           too_long: Callable[[Source, int, int], Issue]) -> Iterator[tuple[bytes, int, int]] | None:
    """``pieces(src, …)`` when ``src`` is a file of ``STREAM_MIN_BYTES`` or more read from disk
    (``Source.on_disk``), else None (read it from memory)."""
    if src.on_disk and len(src.data) >= STREAM_MIN_BYTES:
        return pieces(src, issues, max_line, too_long)
    return None


def pieces(src: Source, issues: list[Issue], max_line: int,
           too_long: Callable[[Source, int, int], Issue]) -> Iterator[tuple[bytes, int, int]]:
    """``src``'s bytes read again from its file, each piece whole lines (but the file's last
    line) with the number of lines before it and its offset in the file; a line over ``max_line`` bytes is reported
    here (``too_long(src, line, size)``, as the reader reports one; not a line of whitespace,
    which it skips) and never held.  ``src``'s bytes are let go first; the bytes read (as many
    as were first read) must hash to ``src.sha256``, else ``SourceChanged`` once they are all
    read."""
    left = len(src.data)  # (without the byte order mark ``parse_file`` took off)
    src.release_data()
    digest, no, over, blank = hashlib.sha256(), 0, 0, True
    with open_input(src.path) as f:
        carry = f.read(len(BOM))
        digest.update(carry)
        read = len(carry)  # (the file's bytes read so far: a piece ends there)
        if carry == BOM:
            carry = b""
        else:  # (no mark: the first bytes of the first line)
            left -= len(carry)
        while left > 0 and (chunk := f.read(min(PIECE_BYTES, left))):
            left, read = left - len(chunk), read + len(chunk)
            digest.update(chunk)
            if over:  # in a line over the limit: up to its end, counted, not kept
                cut = chunk.find(b"\n")
                part = chunk if cut < 0 else chunk[:cut]
                over, blank = over + len(part), blank and (not part or part.isspace())
                if cut < 0:
                    continue
                no += 1
                if not blank:
                    issues.append(too_long(src, no, over))
                over, chunk = 0, chunk[cut + 1:]
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut:
                yield buf[:cut], no, read - len(buf)
                no += buf.count(b"\n", 0, cut)
            carry = buf[cut:]
            if len(carry) > max_line:
                over, blank, carry = len(carry), carry.isspace(), b""
        if over:
            no += 1
            if not blank:
                issues.append(too_long(src, no, over))
        if carry:
            yield carry, no, read - len(carry)
    if left or digest.hexdigest() != src.sha256:
        raise SourceChanged(f"the file changed while it was read (its bytes read again from "
                            f"disk are not those first read, sha256 {src.sha256[:12]}…): not "
                            "read")


class LineIndex:
    """Lines of a file read in ``pieces`` that a parser reads once more later (``read``): for
    each, its line number, offset, size and CRC-32, in arrays (20 bytes a line, no object).

    The reader notes each line it reads (``on``: it reads ``pieces``; ``at``, ``raw``: the line
    just read); the parser keeps those it wants (``keep``).  A line read again is read from the
    file in a window of ``PIECE_BYTES`` around it (lines kept in file order are read in a few
    reads), and must be the bytes first read (size and CRC-32), else ``SourceChanged``."""

    __slots__ = ("_crcs", "_lines", "_path", "_sizes", "_starts", "_window", "_window_at", "at",
                 "no", "on", "raw")

    def __init__(self) -> None:
        self.on, self.no, self.at, self.raw, self._path = False, 0, 0, b"", ""
        self._lines, self._starts = array("q"), array("q")
        self._sizes, self._crcs = array("I"), array("I")
        self._window, self._window_at = b"", 0

    def start(self, src: Source) -> None:
        """The reader reads ``src`` in pieces from its file (``on``)."""
        self.on, self._path = True, src.path

    def keep(self, no: int) -> None:
        """Keep line ``no``, the line just read (``at``, ``raw``), to be read again."""
        if no != self.no or (self._lines and no <= self._lines[-1]):
            raise ValueError(f"line {no} is not the line just read ({self.no})")
        self._lines.append(no)
        self._starts.append(self.at)
        self._sizes.append(len(self.raw))
        self._crcs.append(zlib.crc32(self.raw))

    def read(self, no: int) -> bytes:
        """Line ``no`` (kept), read again from the file; ``SourceChanged`` when it is not the
        bytes first read."""
        k = bisect_left(self._lines, no)
        if k == len(self._lines) or self._lines[k] != no:
            raise KeyError(no)
        start, size = self._starts[k], self._sizes[k]
        offset = start - self._window_at
        if offset < 0 or offset + size > len(self._window):
            with open_input(self._path) as f:
                f.seek(start)
                self._window, self._window_at, offset = f.read(max(PIECE_BYTES, size)), start, 0
        raw = self._window[offset:offset + size]
        if len(raw) != size or zlib.crc32(raw) != self._crcs[k]:
            raise SourceChanged(f"the file changed while it was read (line {no} read again "
                                "from disk is not the line first read): not read")
        return raw

    def __len__(self) -> int:
        return len(self._lines)
