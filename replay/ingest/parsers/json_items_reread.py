"""The items of a big document's array read again from disk a piece at a time, the file's bytes
in memory let go.

``jsonl.load_json(lazy=...)`` leaves a document's array of events undecoded: a list of
``msgspec.Raw``, each a slice of the file's bytes, which stay in memory until the last item is
let go (the end of the parse, where the run's rows are largest: a 65 MB document of ~100-byte
OpenHands events peaked with the whole file beside its rows).  ``on_disk`` notes where each
piece of ``PIECE_BYTES`` of items lies in the file (its first item, offset, size and CRC-32:
no object an item) so that the parser can let the file's bytes go at once; an item is read
again from the file, its piece decoded into the piece's items (``ItemsOnDisk.__getitem__``; the
last ``KEPT_PIECES`` pieces kept).  Bytes read again that are not those first read raise
``jsonl_reread.SourceChanged``.

Only for a file read from disk (``Source.on_disk``) of ``STREAM_MIN_BYTES`` (4 MiB) or more
whose items are slices of ``Source.data`` itself; any other array stays in memory as it is.

Not here: which arrays are read lazily (``replay.ingest.parsers.jsonl``), reading lines again
(``replay.ingest.parsers.jsonl_reread``).
"""

from __future__ import annotations

import zlib
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from replay.ingest.input_files import BOM, open_input
from replay.ingest.parsers.jsonl_reread import STREAM_MIN_BYTES, SourceChanged
from replay.ingest.parsers.source import Source

PIECE_BYTES = 1 << 20
"""The items read from disk at a time (a piece holds one item at least)."""
KEPT_PIECES = 2
"""Pieces decoded and kept (the one being read, and one a parser looked ahead or back to)."""
_decode_items = msgspec.json.Decoder(list[msgspec.Raw]).decode


class ItemsOnDisk:
    """An array's items (``msgspec.Raw``), each read again from the file when asked for."""

    __slots__ = ("_crcs", "_firsts", "_kept", "_n", "_path", "_sizes", "_starts")

    def __init__(self, path: str, n: int, firsts: array[int], starts: array[int],
                 sizes: array[int], crcs: array[int]) -> None:
        self._path, self._n = path, n
        self._firsts, self._starts, self._sizes, self._crcs = firsts, starts, sizes, crcs
        self._kept: dict[int, list[msgspec.Raw]] = {}

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[msgspec.Raw]:
        return (self[i] for i in range(self._n))

    def __getitem__(self, i: int) -> msgspec.Raw:
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_right(self._firsts, i) - 1
        items = self._kept.get(k)
        if items is None:
            items = self._read(k)
        return items[i - self._firsts[k]]

    def _read(self, k: int) -> list[msgspec.Raw]:
        start, size = self._starts[k], self._sizes[k]
        piece = bytearray(size + 2)  # (the items between brackets: an array, read in place)
        piece[0], piece[-1] = 0x5B, 0x5D
        inside = memoryview(piece)[1:-1]
        with open_input(self._path) as f:
            skip = len(BOM) if f.read(len(BOM)) == BOM else 0
            f.seek(start + skip)
            got = f.readinto(inside)  # type: ignore[attr-defined]  # (a BufferedReader)
        expected = (self._firsts[k + 1] if k + 1 < len(self._firsts) else self._n) \
            - self._firsts[k]
        if got != size or zlib.crc32(inside) != self._crcs[k]:
            raise SourceChanged(f"the file changed while it was read (bytes {start:,} to "
                                f"{start + size:,} read again from disk are not those first "
                                "read): not read")
        inside.release()
        items = _decode_items(piece)
        if len(items) != expected:  # (the bytes are the same: not the items noted)
            raise ValueError(f"{len(items)} items read again where {expected} were noted")
        if len(self._kept) >= KEPT_PIECES:
            del self._kept[next(iter(self._kept))]
        self._kept[k] = items
        return items


def on_disk(src: Source, items: Any) -> ItemsOnDisk | None:
    """``items`` (an array ``load_json`` left undecoded in ``src``) as ``ItemsOnDisk``, or None
    when they are to stay in memory (a small file, one not read from disk, no ``Raw`` items or
    items that are not slices of ``src.data``).  The caller lets ``items`` and ``src.data`` go."""
    data = src.data
    if not src.on_disk or not isinstance(data, bytes) or len(data) < STREAM_MIN_BYTES \
            or not isinstance(items, list) or not items \
            or not all(isinstance(items[i], msgspec.Raw) for i in (0, -1)):
        return None
    base, view = _address(data), memoryview(data)
    n = len(items)
    firsts, starts, sizes, crcs = array("q"), array("q"), array("q"), array("I")
    i = 0
    while i < n:
        start = _address(items[i]) - base
        lo, hi = i, n - 1  # the last item ending within PIECE_BYTES of the piece's start
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _end(items[mid], base) - start <= PIECE_BYTES:
                lo = mid
            else:
                hi = mid - 1
        stop = _end(items[lo], base)
        if not 0 <= start < stop <= len(data):  # (not a slice of these bytes)
            return None
        firsts.append(i)
        starts.append(start)
        sizes.append(stop - start)
        crcs.append(zlib.crc32(view[start:stop]))
        i = lo + 1
    return ItemsOnDisk(src.path, n, firsts, starts, sizes, crcs)


def _address(buffer: Any) -> int:
    """Where a buffer's bytes are in memory."""
    address: int = np.frombuffer(buffer, np.uint8).ctypes.data
    return address


def _end(item: msgspec.Raw, base: int) -> int:
    """The offset just after ``item`` in the bytes at ``base``."""
    return _address(item) - base + len(item)
