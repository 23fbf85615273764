"""A big JSON Lines file read again from disk a piece at a time, its bytes in memory let go.

A parser that asks (``jsonl.iter_typed(stream=True)``) reads a file of ``STREAM_MIN_BYTES`` or
more that ``parse_file`` read and hashed (``Source.on_disk``) again from its path, a piece of
whole lines at a time (``pieces``), once ``Source.data`` is let go: the records it keeps are
not held beside a copy of the file (the peak of reading a file of small records, #24 item 3).
The bytes read again must be those hashed (``Source.sha256``): a file that changed in between
raises ``SourceChanged`` once it is read (a file that only grew is read as far as it was first
read).

Not here: decoding the lines (``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

import hashlib
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
           too_long: Callable[[Source, int, int], Issue]) -> Iterator[tuple[bytes, int]] | None:
    """``pieces(src, …)`` when ``src`` is a file of ``STREAM_MIN_BYTES`` or more read from disk
    (``Source.on_disk``), else None (read it from memory)."""
    if src.on_disk and len(src.data) >= STREAM_MIN_BYTES:
        return pieces(src, issues, max_line, too_long)
    return None


def pieces(src: Source, issues: list[Issue], max_line: int,
           too_long: Callable[[Source, int, int], Issue]) -> Iterator[tuple[bytes, int]]:
    """``src``'s bytes read again from its file, each piece whole lines (but the file's last
    line) with the number of lines before it; a line over ``max_line`` bytes is reported
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
        if carry == BOM:
            carry = b""
        else:  # (no mark: the first bytes of the first line)
            left -= len(carry)
        while left > 0 and (chunk := f.read(min(PIECE_BYTES, left))):
            left -= len(chunk)
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
                yield buf[:cut], no
                no += buf.count(b"\n", 0, cut)
            carry = buf[cut:]
            if len(carry) > max_line:
                over, blank, carry = len(carry), carry.isspace(), b""
        if over:
            no += 1
            if not blank:
                issues.append(too_long(src, no, over))
        if carry:
            yield carry, no
    if left or digest.hexdigest() != src.sha256:
        raise SourceChanged(f"the file changed while it was read (its bytes read again from "
                            f"disk are not those first read, sha256 {src.sha256[:12]}…): not "
                            "read")
