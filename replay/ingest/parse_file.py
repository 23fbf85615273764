"""One log file → its runs as token-counted tables: read it, detect the format, parse, count.

``parse_file`` never raises for a bad input: every problem is an ``Issue`` in the returned
``ParsedFile`` (an unreadable or empty file, no parser recognising it with the formats that
came closest, a parser failing, values the schema cannot hold).  A big file whose parser makes
its runs one at a time (``iter_runs``: Claude Code) is tokenised a run at a time, each run's
tables given to the caller's ``sink`` (the store's ``entry_write.NewEntry``) before the next
is made, so that its rows are never all held at once.

Not here: the tables and token counts (``replay.ingest.run_tables``), many files into the store
(``replay.ingest.batch``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from replay.ingest import store
from replay.ingest.discover import relative_source
from replay.ingest.entry_file import add_part
from replay.ingest.input_files import BOM, Unreadable, as_utf8, not_text, read_input
from replay.ingest.names import DEFAULT_TOKENIZERS, TOKEN_COLUMN
from replay.ingest.parsers import PARSERS, Detection, companion
from replay.ingest.parsers.head import detect_file
from replay.ingest.parsers.json_depth import ROOM, on_own_stack
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import SNIFF_BYTES, Issue, Source, said_once
from replay.ingest.run_tables import Counted, tokenize
from replay.ingest.token_issues import RepairedStrings
from replay.memory import collector_paused


class RunSink(Protocol):
    """Where a big file's runs go as they are made (the store's ``entry_write.NewEntry``)."""

    def add(self, tables: store.RunTables) -> None:
        """The next run's tables."""

    def restart(self) -> None:
        """Forget every run given so far: the file's parse starts over."""


IterRuns = Callable[[Source, list[Issue]], Generator[tuple[int | None, RunDraft], None, None]]
"""A parser's ``iter_runs``: a file's runs made one at a time (with their session's number)."""


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
               threads: int = 1, explain: bool = False, shared_text: bool = False,
               sink: RunSink | None = None) -> ParsedFile:
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
        sink: given the tables of a big file's runs (``STREAMED_MIN_BYTES``, a parser with
            ``iter_runs``) a run at a time (``add``; ``restart`` when the file's parse starts
            over), each let go once given; ``tables`` then holds
            its runs table and its messages' ``run_id`` and token columns only (None, as
            always, when the file fails: what ``sink`` was given is then not the file's).

    Each problem is said once however many of the file's runs met it (``said_once``).
    """
    parsed = _parse_file(path, rel if rel is not None else relative_source(path, root), fmt,
                         tokenizers, threads, explain, shared_text, sink)
    issues = said_once(parsed.issues)
    return parsed if issues is parsed.issues else replace(parsed, issues=issues)


def _parse_file(path: Path, rel: str, fmt: str | None, tokenizers: tuple[str, ...],
                threads: int, explain: bool, shared_text: bool,
                sink: RunSink | None) -> ParsedFile:
    issues: list[Issue] = []
    try:
        data = read_input(path)
    except Unreadable as exc:
        return ParsedFile(rel, "", "", None, (Issue(str(path), 0, str(exc)),))
    sha = hashlib.sha256(data).hexdigest()
    data = data.removeprefix(BOM)  # a UTF-8 byte order mark: no format's first record
    try:
        data, wide, cut = as_utf8(data)  # a UTF-16 or UTF-32 file: its text as UTF-8
    except Unreadable as exc:
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, str(exc)),))
    if cut:
        issues.append(Issue(str(path), 0, f"the file ends inside a {wide} character (its last "
                                          f"{cut} byte(s) left out: a file still being "
                                          "written?)"))
    if not data or data.isspace():  # (not data.strip(): a copy of the whole file)
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, "empty file"),))
    if why := not_text(data):  # (no parser reads it, --format or not)
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, why),))
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
    src = Source(path=str(path), rel=rel, data=data, sha256=sha, on_disk=not wide)  # (decoded:
    # not the bytes on disk, never read again from there)
    runs = getattr(PARSERS[name], "iter_runs", None) if sink is not None \
        and len(data) >= STREAMED_MIN_BYTES else None
    del data
    with collector_paused():  # a parse makes millions of objects, none of them garbage
        if runs is not None and sink is not None:
            tables, src = _stream_source(runs, src, tokenizers, threads, sink, issues, name)
            coverage, why = src.coverage.by_type(), found.describe()
            if tables is None and src.coverage.no_conversation and not issues:
                return ParsedFile(rel, name, sha, None, (), coverage, why,
                                  no_conversation=src.coverage.no_conversation)
            if tables is None and not issues:
                issues.append(Issue(str(path), 0, f"no runs found in this {name} file"))
            return ParsedFile(rel, name, sha, tables, tuple(issues), coverage, why)
        try:
            drafts, src = parse_source(name, src, issues)
        except Exception as exc:  # noqa: BLE001 - a parser bug or an input it did not foresee: report, go on
            issues.append(_failed(str(path), name, exc))
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
                              shared_text=shared_text, issues=issues, path=str(path))
        except UNFIT as exc:
            issues.append(_unfit(str(path), name, exc))
            return ParsedFile(rel, name, sha, None, tuple(issues), coverage, why)
        return ParsedFile(rel, name, sha, tables, tuple(issues), coverage, why)


def parse_source(name: str, src: Source, issues: list[Issue]) -> tuple[list[RunDraft], Source]:
    """The parser's runs of ``src`` and the source they were read from.  A parse that meets
    ``RecursionError`` (a value nested as deep as the decoders read, ``json_depth.MAX_DEPTH``,
    walked, written or shown on this stack) is made again from the start on a stack with room
    (``json_depth.ROOM``), with what the first made dropped; the bytes of a file on disk are
    read again if the parser let them go, and must be the same (``sha256``)."""
    held = None if src.on_disk else src.data  # (the caller holds these bytes anyway)
    try:
        return PARSERS[name].parse(src, issues), src
    except RecursionError:
        pass
    again = _source_again(src, held)
    issues.clear()
    return on_own_stack(lambda s: PARSERS[name].parse(s, issues), again, ROOM), again


def _source_again(src: Source, held: bytes | None) -> Source:
    """A fresh ``Source`` of ``src``'s bytes for a parse made again (``held``: the bytes when
    the caller keeps them, else those of ``src`` or, if its parser let them go, of the file
    read again, which must be the ones first read: ``ValueError`` if not)."""
    data = src.data if held is None else held
    if not isinstance(data, bytes):  # released (``Source.release_data``): from the file again
        try:
            data = read_input(Path(src.path))
        except Unreadable:
            data = b""
        if hashlib.sha256(data).hexdigest() != src.sha256:  # said as it is, not as depth
            raise ValueError("nested too deeply for the first parse, and the file changed on "
                             "disk before it could be read again")
        data = data.removeprefix(BOM)
    return Source(path=src.path, rel=src.rel, data=data, sha256=src.sha256,
                  on_disk=src.on_disk)


STREAMED_MIN_BYTES = 4 << 20
"""A file this big or bigger whose parser makes its runs one at a time (``iter_runs``) is
tokenised and given to ``parse_file``'s ``sink`` a run at a time; a smaller one whole."""
UNFIT = (pa.ArrowException, OverflowError, TypeError, ValueError)
"""What ``tokenize`` raises for a value the schema cannot hold."""


def _stream_source(runs: IterRuns, src: Source, tokenizers: tuple[str, ...], threads: int,
                   sink: RunSink, issues: list[Issue], name: str,
                   ) -> tuple[store.RunTables | None, Source]:
    """``_streamed`` over ``runs(src)``, and the source it read.  A parse that meets
    ``RecursionError`` starts over as ``parse_source``'s does: ``sink`` forgets what it was
    given (``restart``), the first parse's issues are dropped, and the file is parsed again on
    a stack with room; a ``RecursionError`` there is the file's failure."""
    held = None if src.on_disk else src.data
    try:
        return _streamed(runs(src, issues), tokenizers, threads, sink, issues, src.path, name,
                         raise_deep=True), src
    except RecursionError:
        pass
    sink.restart()
    issues.clear()
    try:
        again = _source_again(src, held)
    except ValueError as exc:  # the file changed on disk
        issues.append(_failed(src.path, name, exc))
        return None, src
    return on_own_stack(lambda s: _streamed(runs(s, issues), tokenizers, threads, sink, issues,
                                            s.path, name), again, ROOM), again


def _streamed(runs: Generator[tuple[int | None, RunDraft], None, None], tokenizers: tuple[str, ...],
              threads: int, sink: RunSink, issues: list[Issue], path: str, name: str,
              raise_deep: bool = False) -> store.RunTables | None:
    """Each run of ``runs`` tokenised and given to ``sink`` before the next is made (a
    session's runs that share texts count each once: ``tokenize``'s ``counted``); the runs
    table and the messages' run ids and token columns of them all, None when there is none
    or the parser or a run failed (an issue).  ``raise_deep``: a ``RecursionError`` of the
    parser is raised (the caller parses again with more room), not an issue."""
    kept: dict[str, list[pa.Table]] = {"runs": [], "messages": [], "requests": []}
    counted: Counted | None = None
    session: int | None = None
    repaired = RepairedStrings()  # the file's strings repaired, over its runs: one issue
    columns = ["run_id", *TOKEN_COLUMN.values()]
    while True:
        try:
            got = next(runs, None)
        except Exception as exc:  # as ``parse_file``: report, go on
            if raise_deep and isinstance(exc, RecursionError):
                raise
            issues.append(_failed(path, name, exc))
            return None
        if got is None:
            break
        if got[0] is None or got[0] != session:
            counted = None if got[0] is None else {}
        session, draft = got
        try:
            tables = tokenize([draft], tokenizers, threads=threads, consume=True,
                              counted=counted, issues=issues, path=path,
                              repaired_in_file=repaired)
        except UNFIT as exc:
            runs.close()
            issues.append(_unfit(path, name, exc))
            return None
        del draft, got
        sink.add(tables)
        add_part(kept["runs"], tables.runs)
        add_part(kept["messages"], tables.messages.select(columns))
        kept["requests"] = kept["requests"] or [tables.requests.slice(0, 0)]
    if not kept["runs"]:
        return None
    return store.RunTables(runs=pa.concat_tables(kept["runs"]),
                           messages=pa.concat_tables(kept["messages"]),
                           requests=kept["requests"][0])


def _failed(path: str, name: str, exc: Exception) -> Issue:
    """The issue of a parser that raised (one definition for the whole and the streamed path)."""
    if isinstance(exc, RecursionError):
        return Issue(path, 0, f"{name} parser failed: JSON nested too deeply")
    return Issue(path, 0, f"{name} parser failed: {type(exc).__name__}: {exc}")


def _unfit(path: str, name: str, exc: Exception) -> Issue:
    return Issue(path, 0, f"{name} parser produced values the schema cannot hold "
                          f"({type(exc).__name__}: {exc})")


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
