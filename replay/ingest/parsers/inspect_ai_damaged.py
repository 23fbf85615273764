"""Damaged Inspect AI logs: what of a truncated ``.json`` or ``.eval`` can still be read.

A ``.json`` log that does not parse whole (cut while written or copied) keeps the samples of
its ``samples`` array read one by one before the break (``jsonl.array_items``) and the ``eval``
header written before them, with one issue saying how many samples were kept and what was lost
(``salvage_json``).

A ``.eval`` log is a zip whose central directory (the index, written last) is gone when the
file is cut, while the entries before the cut are whole.  ``rebuilt_zip`` then walks the local
file headers from the start and writes a central directory for the entries it finds whole: the
zip is then read by ``inspect_eval_zip.read_eval_zip`` as any other, with the same bounds (entry
count, uncompressed size per entry and for the file, names) and the same CRC checks.  No size
in a local header is trusted blindly: an entry whose data runs past the end of the file is cut
(dropped), the next header must start where the recorded size says (else the walk stops), an
entry written with a data descriptor (sizes after the data) is measured by decompressing it
with the file's byte bound, and a stored one of that kind (no way to find its end) stops the
walk.  What could not be recovered is said in one issue.

``MissingOutputs``: a model call whose ``output`` is null or of the wrong type.

Not here: what a sample means (``replay.ingest.parsers.inspect_ai``), reading a zip whose
central directory is whole (``replay.ingest.parsers.inspect_eval_zip``).
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

from replay.ingest.input_files import max_document_bytes
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.inspect_eval_zip import MAX_ENTRIES, ZIP_ERRORS, ZIP_MAGIC
from replay.ingest.parsers.json_decode import JSON_REFUSED
from replay.ingest.parsers.jsonl import array_items
from replay.ingest.parsers.source import Issue, Source

_LOCAL = struct.Struct("<4sHHHHHLLLHH")
"""A local file header: signature, version, flags, method, time, date, CRC-32, compressed
size, uncompressed size, name length, extra length."""
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
"""A central directory header (``zipfile.structCentralDir``)."""
_END = struct.Struct("<4s4H2LH")
"""The end of central directory record (``zipfile.structEndArchive``)."""
_DESCRIPTOR = b"PK\x07\x08"
_ZIP64 = 0xFFFFFFFF


def salvage_json(src: Source, issues: list[Issue]) -> dict[str, Any] | None:
    """For a ``.json`` log that did not parse: ``{"eval": header, "samples": [readable
    samples]}`` with one issue, or None when no sample can be read (the parse error, already
    said by ``load_json``, is then all there is)."""
    found, stop = array_items(src, "samples")
    if not found:
        return None
    header: Any = {}
    text = src.data.decode("utf-8", errors="replace")
    at = re.search(r'"eval"\s*:\s*\{', text)
    if at is not None:
        try:
            header = json.JSONDecoder().raw_decode(text, at.end() - 1)[0]
        except JSON_REFUSED:
            header = {}
    lost = f"the samples array is cut at line {stop}: the samples from there lost" if stop \
        else "every sample complete; what followed the samples array lost"
    if not isinstance(header, dict) or not header:
        header, lost = {}, lost + "; the eval header (model, task) lost"
    issues.append(Issue(src.path, stop, f"damaged file: kept the {len(found)} readable "
                                        f"samples ({lost})"))
    return {"eval": header, "samples": [item for _, item in found]}


def rebuilt_zip(src: Source, issues: list[Issue]) -> tuple[Source, bool]:
    """(``src`` itself, False) when its zip reads; else, for a zip without a readable central
    directory, (``src`` with one written for the whole entries its local headers show, True),
    with one issue saying what was recovered and what lost; (``src``, True) when none is
    whole (``read_eval_zip`` then says the zip is damaged)."""
    data = src.data
    try:
        zipfile.ZipFile(io.BytesIO(data)).close()
    except ZIP_ERRORS as exc:
        why = str(exc)
    else:
        return src, False
    entries, stopped = _local_entries(data)
    if not entries:
        return src, True
    end = entries[-1][0] + entries[-1][1]
    central = b"".join(_central(header, offset) for offset, _, header in entries)
    tail = _END.pack(b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), end, 0)
    issues.append(Issue(src.path, 0, f"damaged .eval zip ({why}): read {len(entries)} whole "
                                     f"entries from their local headers"
                                     + (f"; {stopped}" if stopped else "")))
    return Source(path=src.path, rel=src.rel, data=data[:end] + central + tail,
                  sha256=src.sha256, coverage=src.coverage), True


def _local_entries(data: bytes) -> tuple[list[tuple[int, int, tuple[Any, ...]]], str]:
    """(offset, length, header fields with the true CRC and sizes) of each whole entry from
    the start of ``data``, and why the walk stopped ('' at the end of the entries)."""
    out: list[tuple[int, int, tuple[Any, ...]]] = []
    pos, size = 0, len(data)
    budget = max_document_bytes()  # what the walk may decompress in all: the file's bound
    # (read_eval_zip's for all the entries together), never a bound per entry times entries
    while data.startswith(ZIP_MAGIC, pos):
        if len(out) > MAX_ENTRIES:  # (read_eval_zip reports over MAX_ENTRIES)
            return out, ""
        if pos + _LOCAL.size > size:
            return out, "the last entry's header is cut (lost)"
        (_, version, flags, method, time, date, crc, csize, usize, n_name,
         n_extra) = _LOCAL.unpack_from(data, pos)
        start = pos + _LOCAL.size + n_name + n_extra
        if start > size:
            return out, "the last entry's header is cut (lost)"
        name = data[pos + _LOCAL.size:pos + _LOCAL.size + n_name]
        shown = name[:120].decode("utf-8", "replace")
        if csize == _ZIP64 or usize == _ZIP64:
            return out, f"entry {shown!r} is a zip64 entry (it and the rest not recovered)"
        if flags & 0x8:  # sizes in a data descriptor after the data
            if method != zipfile.ZIP_DEFLATED:
                return out, (f"entry {shown!r} has its size after its data (it and the rest "
                             "not recovered)")
            measured = _deflated_end(data, start, budget)
            if measured is None:
                return out, (f"entry {shown!r} is cut, unreadable or past the file's "
                             "decompressed bound (it and the rest lost)")
            csize, usize, crc = measured
            budget -= usize
            after = start + csize
            after += 4 if data.startswith(_DESCRIPTOR, after) else 0
            after += 12  # CRC-32 and the two sizes
        else:
            after = start + csize
        if after > size:
            return out, f"entry {shown!r} is cut (lost)"
        out.append((pos, after - pos, (version, flags, method, time, date, crc, csize, usize,
                                       name, data[pos + _LOCAL.size + n_name:start])))
        pos = after
    return out, ""


def _deflated_end(data: bytes, start: int, bound: int) -> tuple[int, int, int] | None:
    """(compressed size, uncompressed size, CRC-32) of the deflate stream at ``start``, found
    by decompressing it a MiB at a time; None when it is cut, damaged or decompresses to more
    than ``bound`` bytes (what is left of the file's bound)."""
    d = zlib.decompressobj(-15)
    crc, usize, pos = 0, 0, start
    try:
        while not d.eof:
            chunk = d.unconsumed_tail or data[pos:pos + 65536]
            if not d.unconsumed_tail:
                pos += len(chunk)
            if not chunk:
                return None
            out = d.decompress(chunk, 1 << 20)
            usize += len(out)
            if usize > bound:
                return None
            crc = zlib.crc32(out, crc)
    except zlib.error:
        return None
    return pos - len(d.unused_data) - len(d.unconsumed_tail) - start, usize, crc


def _central(h: tuple[Any, ...], offset: int) -> bytes:
    version, flags, method, time, date, crc, csize, usize, name, extra = h
    packed: bytes = _CENTRAL.pack(b"PK\x01\x02", 20, 0, version, 0, flags, method, time, date, crc,
                         csize, usize, len(name), len(extra), 0, 0, 0, 0, offset)
    return packed + bytes(name) + bytes(extra)


class MissingOutputs:
    """Model calls whose ``output`` is null or of the wrong type (no ``choices[0].message``),
    in one file: the answer is taken from where the log has it, the next call's input or the
    sample's ``messages`` (the message after this call's input, when it starts with that input
    and is an assistant's), never made up as an empty assistant message (which the next input
    then repeated: 15 messages for 10).  A call whose answer is nowhere is no request (its
    output and usage unknown).  Said in one issue per file (``report``)."""

    def __init__(self) -> None:
        self.found = self.lost = 0
        self.first = ""
        self.later: list[list[dict[str, Any]]] = []

    def start(self, inputs: list[list[dict[str, Any]]], final: list[dict[str, Any]]) -> None:
        """A sample's model call inputs in order, and its final ``messages``."""
        self.later = [*inputs, final]

    def answer(self, event: dict[str, Any], inp: list[dict[str, Any]], keys: list[str],
               key: Callable[[dict[str, Any]], str], cov: Coverage, agent: str
               ) -> dict[str, Any] | None:
        """The answer of the call with input ``inp`` (its messages' ``keys``) whose output is
        missing, or None (counted in ``cov``)."""
        out = event.get("output")
        self.first = self.first or f"{agent}, output " + (
            "null" if out is None else f"{type(out).__name__}" if not isinstance(out, dict)
            else "without choices[0].message")
        n = len(inp)
        at = next((k for k, x in enumerate(self.later) if x is inp), -1)
        for later in self.later[at + 1:]:
            if len(later) > n and later[n].get("role") == "assistant" and \
                    [key(m) for m in later[:n]] == keys:
                self.found += 1
                cov.modelled("model (output from the next context)")
                return later[n]
        self.lost += 1
        cov.unknown("model (output missing: no request)")
        return None

    def report(self, src: Source, issues: list[Issue]) -> None:
        """One issue when calls without a readable output were met."""
        if self.found or self.lost:
            issues.append(Issue(src.path, 0, f"{self.found + self.lost} model call(s) have no "
                                f"readable output (first: {self.first}): {self.found} answer(s) "
                                "taken from the next call's input or the sample's messages, "
                                f"{self.lost} not found (those calls are no request)"))
