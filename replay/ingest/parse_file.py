"""One log file → its runs as token-counted tables: read it, detect the format, parse, count.

``parse_file`` never raises for a bad input: every problem is an ``Issue`` in the returned
``ParsedFile`` (an unreadable or empty file, no parser recognising it with the formats that
came closest, a parser failing, values the schema cannot hold).

Not here: the tables and token counts (``replay.ingest.run_tables``), many files into the store
(``replay.ingest.batch``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from replay.ingest import store
from replay.ingest.discover import relative_source
from replay.ingest.input_files import BOM, Unreadable, read_input
from replay.ingest.parsers import PARSERS, Detection, companion
from replay.ingest.parsers.head import SNIFF_BYTES, detect_file
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.run_tables import DEFAULT_TOKENIZERS, tokenize
from replay.memory import collector_paused


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """One file's runs (as tables) and the problems found in it."""

    source: str
    format: str
    sha256: str
    tables: store.RunTables | None
    issues: tuple[Issue, ...]
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    """What became of each record type the parser met (``Coverage.by_type``)."""
    detection: str = ""
    """Why the format was chosen (``Detection.describe``; with ``explain`` only), or which
    formats came closest to a file no parser takes."""
    no_conversation: str = ""
    """Why a file that is no failure holds no run (only metadata records, a companion file)."""


def parse_file(path: Path, root: Path | None = None, *, fmt: str | None = None,
               tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, rel: str | None = None,
               threads: int = 1, explain: bool = False, shared_text: bool = False
               ) -> ParsedFile:
    """Parse one file into token-counted tables; problems are returned, never raised.

    Args:
        path: the log file.
        root: the folder ``path`` is stored relative to (default: only its name).
        fmt: force one parser instead of detecting the format.
        tokenizers: encodings to count with (one column each).
        rel: the stored source name (default: ``path`` relative to ``root``).
        threads: threads counting tokens (1: only the calling thread).
        explain: say why the format was chosen (``ParsedFile.detection``; a file no parser
            takes always says which formats came closest).
    """
    rel = rel if rel is not None else relative_source(path, root)
    issues: list[Issue] = []
    try:
        data = read_input(path)
    except Unreadable as exc:
        return ParsedFile(rel, "", "", None, (Issue(str(path), 0, str(exc)),))
    sha = hashlib.sha256(data).hexdigest()
    data = data.removeprefix(BOM)  # a UTF-8 byte order mark: no format's first record
    if not data or data.isspace():  # (not data.strip(): a copy of the whole file)
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, "empty file"),))
    try:
        found = Detection(fmt, "forced with --format") if fmt else \
            detect_file(path.name, data, explain=explain)
    except RecursionError:
        return ParsedFile(rel, "", sha, None, (Issue(
            str(path), 1, "JSON nested too deeply to detect the format; try --format"),))
    name = found.format
    if name is None:
        if why := companion(path):
            return ParsedFile(rel, "", sha, None, (), no_conversation=why)
        return ParsedFile(rel, "", sha, None, (_unrecognised(str(path), data, found),),
                          detection=found.describe())
    if name not in PARSERS:
        return ParsedFile(rel, "", sha, None, (Issue(
            str(path), 0, f"unknown --format {name!r}; one of {sorted(PARSERS)}"),))
    src = Source(path=str(path), rel=rel, data=data, sha256=sha, on_disk=True)
    del data
    with collector_paused():  # a parse makes millions of objects, none of them garbage
        try:
            drafts = PARSERS[name].parse(src, issues)
        except RecursionError:
            issues.append(Issue(str(path), 0, f"{name} parser failed: JSON nested too deeply"))
            drafts = []
        except Exception as exc:  # noqa: BLE001 - a parser bug or an input it did not foresee: report, go on
            issues.append(Issue(str(path), 0, f"{name} parser failed: {type(exc).__name__}: {exc}"))
            drafts = []
        coverage, why = src.coverage.by_type(), found.describe()
        no_conversation = src.coverage.no_conversation
        del src  # the file's bytes are not needed past the parser: not held while counting
        if not drafts and no_conversation and not issues:
            return ParsedFile(rel, name, sha, None, (), coverage, why,
                              no_conversation=no_conversation)
        if not drafts:
            if not issues:
                issues.append(Issue(str(path), 0, f"no runs found in this {name} file"))
            return ParsedFile(rel, name, sha, None, tuple(issues), coverage, why)
        try:
            tables = tokenize(drafts, tokenizers, threads=threads, consume=True,
                              shared_text=shared_text)
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            issues.append(Issue(str(path), 0, f"{name} parser produced values the schema cannot hold "
                                              f"({type(exc).__name__}: {exc})"))
            return ParsedFile(rel, name, sha, None, tuple(issues), coverage, why)
        return ParsedFile(rel, name, sha, tables, tuple(issues), coverage, why)


def _unrecognised(path: str, data: bytes, found: Detection) -> Issue:
    """Why no parser recognised a file, as precisely as can be told, and which formats came
    closest."""
    if b"\x00" in data[:4096]:
        return Issue(path, 0, "binary file; try --format")
    first = data[:4 * SNIFF_BYTES].lstrip()[:SNIFF_BYTES + 1].split(b"\n", 1)[0]
    if len(first) > SNIFF_BYTES:
        return Issue(path, 1, f"unknown format: the first line is over {SNIFF_BYTES:,} bytes, "
                              f"too long to recognise; try --format")
    try:
        json.loads(first)
    except RecursionError:
        return Issue(path, 1, "JSON nested too deeply to recognise the format; try --format")
    except ValueError:
        pass
    return Issue(path, 0, f"unknown format (no parser recognised it; {found.describe()}); "
                          "try --format")
