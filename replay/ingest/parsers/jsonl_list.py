"""Every record of a JSON Lines file at once, for a parser that holds them all (``record_list``).

Not here: reading a file a line at a time, the issues of a line that is no record
(``replay.ingest.parsers.jsonl``); when lines may be decoded many at a time
(``replay.ingest.parsers.jsonl_batch``).
"""

from __future__ import annotations

from itertools import count
from typing import Any

import msgspec

from replay.ingest.parsers.json_depth import check_each
from replay.ingest.parsers.jsonl import MAX_LINE_BYTES, iter_records
from replay.ingest.parsers.jsonl_batch import plain_lines
from replay.ingest.parsers.source import Issue, Source

_decode_lines = msgspec.json.Decoder().decode_lines
"""The decoder ``iter_records`` tries first on a line (``json_decode._decode``), many lines a
call."""


def record_list(src: Source, issues: list[Issue]) -> list[tuple[int, dict[str, Any]]]:
    """``list(iter_records(src, issues))``: the same pairs and issues.  A file whose every line
    is one JSON object with nothing around it is decoded a batch of lines at a time in C
    (``jsonl_batch.plain_lines``: no Python a line; those values are the ones ``iter_records``
    decodes, one a line); any other file (a blank line, a carriage return, a line that is no
    object or that msgspec refuses, a line over ``MAX_LINE_BYTES``, a decoder that must measure
    each text's depth: ``json_depth.check_each``) is read by ``iter_records``."""
    data = src.data
    if check_each():
        return list(iter_records(src, issues))
    records: list[Any] = []
    view, pos, size = memoryview(data), 0, len(data)
    while pos < size:
        values, stop = plain_lines(_decode_lines, data, view, pos, MAX_LINE_BYTES)
        if values is None:
            return list(iter_records(src, issues))
        records += values
        pos = stop + 1
    return list(zip(count(1), records))
