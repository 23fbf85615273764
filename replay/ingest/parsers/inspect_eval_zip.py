"""Reading an Inspect AI ``.eval`` log (a zip of JSON files) within bounds.

``read_eval_zip`` returns the log's header (``header.json``, else ``_journal/start.json``) and
its samples (``samples/<id>_epoch_<n>.json``, in epoch then id order), reading each entry with
the standard library's ``zipfile``: at most ``MAX_ENTRIES`` entries and ``input_files.max_document_bytes()``
uncompressed bytes per entry (each is one JSON document, decoded whole) (the size recorded in the zip is checked first, and no more than
the bound is ever decompressed), and the same bound for all the entries of the file together (a
``.eval`` decompresses to no more than the ``.json`` log it stands for may be), everything else
reported.  A sample is an entry ``samples/<name>.json`` read once: a second entry of the same
name, or a name leaving ``samples/`` (``samples/../x``), is skipped with an issue.  Every entry
is counted in the file's coverage (``zip/samples``, ``zip/header.json``, ``zip/summaries``
skipped, …).

Not here: what a sample means (``replay.ingest.parsers.inspect_ai``).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from typing import Any

from replay.ingest.input_files import ENV_MAX_DOCUMENT_BYTES, max_document_bytes
from replay.ingest.parsers.json_decode import loads
from replay.ingest.parsers.source import Issue, Source

MAX_ENTRIES = 100_000
"""Zip entries looked at in one ``.eval`` file."""
ZIP_MAGIC = b"PK\x03\x04"
"""How a zip file starts."""
ZIP_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError,
              zlib.error, struct.error)
"""What a damaged zip raises (bad headers, bad CRC, a corrupt deflate stream, …)."""


def read_eval_zip(src: Source, issues: list[Issue]) -> tuple[dict[str, Any], list[Any]]:
    """The header and the samples of a ``.eval`` zip, each entry read within the bounds."""
    cov, max_bytes = src.coverage, max_document_bytes()
    try:
        z = zipfile.ZipFile(io.BytesIO(src.data))
        infos = z.infolist()
    except ZIP_ERRORS as exc:
        issues.append(Issue(src.path, 0, f"damaged .eval zip: {exc}"))
        return {}, []
    if len(infos) > MAX_ENTRIES:
        issues.append(Issue(src.path, 0, f"{len(infos):,} zip entries: read the first "
                                         f"{MAX_ENTRIES:,}"))
        infos = infos[:MAX_ENTRIES]
    header: dict[str, Any] = {}
    start: dict[str, Any] = {}
    samples: list[tuple[str, Any]] = []
    seen: set[str] = set()
    total = 0
    over_total = 0
    for info in infos:
        name = info.filename
        kind = "samples" if name.startswith("samples/") else name
        if kind not in ("samples", "header.json", "_journal/start.json"):
            cov.skipped("zip/summaries" if "summar" in name else f"zip/{name.split('/')[0]}")
            continue
        if kind == "samples" and not _SAMPLE_NAME.fullmatch(name):
            cov.unknown("zip/samples (not a sample name)")
            issues.append(Issue(src.path, 0, f"zip entry {name[:120]!r} is not a sample "
                                             "(samples/<name>.json) (skipped)"))
            continue
        if name in seen:
            cov.unknown(f"zip/{kind} (duplicate)")
            issues.append(Issue(src.path, 0, f"zip entry {name[:120]!r} appears again (the "
                                             "later copy skipped)"))
            continue
        seen.add(name)
        budget = max_bytes - total
        if info.file_size <= max_bytes and info.file_size > budget:
            cov.unknown(f"zip/{kind} (over the file's total)")
            over_total += 1
            continue
        if info.file_size > max_bytes:
            cov.unknown(f"zip/{kind} (too large)")
            issues.append(Issue(src.path, 0, f"zip entry {name[:120]!r} is {info.file_size:,} "
                                             f"bytes uncompressed, over {max_bytes:,} (skipped; "
                                             f"raise it with {ENV_MAX_DOCUMENT_BYTES}=BYTES)"))
            continue
        if info.flag_bits & 0x1:  # encrypted: zipfile would raise RuntimeError on open
            cov.unknown(f"zip/{kind} (encrypted)")
            issues.append(Issue(src.path, 0, f"zip entry {name[:120]!r} is encrypted (skipped)"))
            continue
        try:
            raw = read_entry(z, info, budget, max_bytes)
            total += len(raw)
            value = loads(raw)
        except (*ZIP_ERRORS, RecursionError) as exc:
            cov.unknown(f"zip/{kind} (unreadable)")
            issues.append(Issue(src.path, 0, f"zip entry {name[:120]!r}: {exc} (skipped)"))
            continue
        cov.modelled(f"zip/{kind}")
        if kind == "samples":
            samples.append((name, value))
        elif kind == "header.json" and isinstance(value, dict):
            header = value
        elif isinstance(value, dict):
            start = value
    if over_total:
        issues.append(Issue(src.path, 0, f"{over_total:,} zip entries skipped: together the "
                                         f"entries decompress to more than {max_bytes:,} bytes "
                                         f"(raise it with {ENV_MAX_DOCUMENT_BYTES}=BYTES)"))
    samples.sort(key=lambda s: _sample_order(s[0]))
    return header or start, [v for _, v in samples]


def read_entry(z: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, max_bytes: int) -> bytes:
    """Entry ``info``'s uncompressed bytes, at most ``budget`` (what is left of the file's
    ``max_bytes``), no more than ``budget`` + 1 ever decompressed: the one bounded read of an
    entry, for the ingest and for ``replay.redact.eval_zip``.

    Raises:
        ValueError: the entry is longer than ``budget`` (its recorded size lied).
        One of ``ZIP_ERRORS``: a damaged entry.
    """
    with z.open(info) as f:
        raw = f.read(budget + 1)
    if len(raw) > budget:
        raise ValueError(f"more than {budget:,} bytes uncompressed"
                         + (" (the file's total left)" if budget < max_bytes else ""))
    return raw


_SAMPLE_NAME = re.compile(r"samples/(?!\.)[^/\\]+\.json")
"""A sample entry's name: one file directly inside ``samples/``."""


def _sample_order(name: str) -> tuple[int, str]:
    m = re.match(r"samples/(.*)_epoch_(\d+)\.json$", name)
    return (int(m.group(2)), m.group(1)) if m else (0, name)
