"""Every record of a JSON Lines file at once, for a parser that holds them all (``record_list``).

Not here: reading a file a line at a time, the issues of a line that is no record
(``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

from itertools import count
from typing import Any

from replay.ingest.parsers.json_depth import check_each
from replay.ingest.parsers.jsonl import MAX_LINE_BYTES, decode_plain, iter_records
from replay.ingest.parsers.source import Issue, Source


def record_list(src: Source, issues: list[Issue]) -> list[tuple[int, dict[str, Any]]]:
    """``list(iter_records(src, issues))``: the same pairs and issues.  A file of no more than
    ``MAX_LINE_BYTES`` (no line of it can be too long) whose every line decodes (msgspec, as
    ``iter_records`` tries first) to an object is cut into lines and decoded in C, a line at a
    time (``map``: no Python a line; ~1,500 instructions a line less); any other file (a
    blank line, one that is no object, one msgspec refuses, a decoder that must measure
    each text's depth: ``json_depth.check_each``) is read by ``iter_records``.  The lines'
    bytes are held at once while they are decoded: a copy of the file (16 MiB at the most)
    beside the records the caller keeps anyway."""
    data = src.data
    if len(data) > MAX_LINE_BYTES or check_each():
        return list(iter_records(src, issues))
    lines: list[bytes] = []
    find, add, pos, size = data.find, lines.append, 0, len(data)
    while pos < size:  # (``find``, memchr: ``bytes.split`` reads a byte at a time)
        end = find(b"\n", pos)
        if end < 0:
            end = size
        add(data[pos:end])
        pos = end + 1
    try:
        values = list(map(decode_plain, lines))
    except Exception:  # noqa: BLE001 - a line msgspec refuses: each line read as iter_records does
        return list(iter_records(src, issues))
    if values and {*map(type, values)} != {dict}:
        return list(iter_records(src, issues))
    return list(zip(count(1), values))
