"""Ingest: log files → parsed runs → token counts → the Parquet store.

``parse_file`` reads one file (format detected from content unless given) and
returns its runs as Arrow tables with tokens counted once; ``ingest`` does that
for every file under the given paths, in parallel across files, skipping files
whose cache entry already exists, and never losing what the store had for a
file that now fails.  Every problem is an ``Issue`` (``file:line: reason``);
the batch goes on.

Not here: which files are read and the names they are stored under (``replay.discover``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from replay import atomic_files, store, store_index, store_session
from replay.discover import discover, relative_source, sources
from replay.errors import TokenizerError
from replay.input_files import Unreadable, check_limits, read_input, sha256_of
from replay.parsers import (
    PARSERS,
    PARSERS_VERSION,
    Detection,
    check_format,
)
from replay.parsers.builder import Issue, RunDraft, Source
from replay.parsers.head import SNIFF_BYTES, detect_file
from replay.redaction import declared, exact, tokens_for
from replay.schema import SCHEMAS
from replay.tokens import count_one, count_tokens, encoding
from replay.workers import init_worker

DEFAULT_TOKENIZERS: tuple[str, ...] = ("o200k_base",)
_TOKEN_COLUMN = {"o200k_base": "tokens_o200k", "cl100k_base": "tokens_cl100k"}
_BOM = b"\xef\xbb\xbf"


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


@dataclass(slots=True)
class IngestReport:
    """What an ingest did: files parsed, reused from cache, failed, and every issue."""

    parsed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    n_runs: int = 0
    n_tokens: int = 0
    """Tokens of the files parsed by this ingest (first tokenizer; cached files not counted)."""

    @property
    def ok(self) -> bool:
        """True when no file failed and no issue was reported."""
        return not self.failed and not self.issues


def parse_file(path: Path, root: Path | None = None, *, fmt: str | None = None,
               tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, rel: str | None = None,
               threads: int = 1, explain: bool = False) -> ParsedFile:
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
    except Unreadable as why:
        return ParsedFile(rel, "", "", None, (Issue(str(path), 0, str(why)),))
    sha = hashlib.sha256(data).hexdigest()
    data = data.removeprefix(_BOM)  # a UTF-8 byte order mark: no format's first record
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
        return ParsedFile(rel, "", sha, None, (_unrecognised(str(path), data, found),),
                          detection=found.describe())
    if name not in PARSERS:
        return ParsedFile(rel, "", sha, None, (Issue(
            str(path), 0, f"unknown --format {name!r}; one of {sorted(PARSERS)}"),))
    src = Source(path=str(path), rel=rel, data=data, sha256=sha)
    del data
    try:
        drafts = PARSERS[name].parse(src, issues)
    except RecursionError:
        issues.append(Issue(str(path), 0, f"{name} parser failed: JSON nested too deeply"))
        drafts = []
    except Exception as exc:  # noqa: BLE001 - a parser bug or an input it did not foresee: report, go on
        issues.append(Issue(str(path), 0, f"{name} parser failed: {type(exc).__name__}: {exc}"))
        drafts = []
    coverage, why = src.coverage.by_type(), found.describe()
    if not drafts:
        if not issues:
            issues.append(Issue(str(path), 0, f"no runs found in this {name} file"))
        return ParsedFile(rel, name, sha, None, tuple(issues), coverage, why)
    try:
        tables = tokenize(drafts, tokenizers, threads=threads)
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


def tokenize(drafts: list[RunDraft], tokenizers: tuple[str, ...], *,
             threads: int = 1) -> store.RunTables:
    """Count tokens once per block and build the schema's tables.

    Each column is converted to Arrow once, straight from the parsers' lists.  Text that is
    not valid Unicode (a lone surrogate, as ``json.loads`` makes from an escape like
    ``"\\ud800"``) is stored with U+FFFD in its place, as tiktoken counts it.  A block holding
    redaction markers is sized by their declared lengths and flagged; a block holding
    ctxreplay's own markers (``replay redact``) gets the exact figures they declare
    (``replay.redaction``).
    """
    messages = _concat([d.messages for d in drafts], [d.run["run_id"] for d in drafts], "msg")
    requests = _concat([d.requests for d in drafts], [d.run["run_id"] for d in drafts], "request")
    events = _concat([d.events for d in drafts], [d.run["run_id"] for d in drafts], "event")
    runs = {col: [d.run[col] for d in drafts] for col in SCHEMAS["runs"].names
            if col in drafts[0].run}
    texts: list[str] = messages["text"]  # type: ignore[assignment]
    try:
        text = pa.array(texts, pa.string())
    except UnicodeEncodeError:
        texts = [_valid_unicode(t) for t in texts]
        text = pa.array(texts, pa.string())
    messages["text"] = text
    n_bytes = pc.binary_length(text)  # UTF-8 length without encoding again
    n_chars = [len(t) for t in texts]
    messages["n_lines"] = n_lines = [t.count("\n") + 1 if t else 0 for t in texts]
    exacts = {i: found for i, t in enumerate(texts) if (found := exact(t)) is not None}
    redacted = {i: found for i, t in enumerate(texts)
                if i not in exacts and (found := declared(t)) is not None}
    if redacted or exacts:  # sized as the model saw them: the declared characters
        n_bytes = n_bytes.to_pylist()
        for i, (rest, _, chars) in redacted.items():  # (taken as bytes)
            n_chars[i] = len(rest) + chars
            n_bytes[i] = len(rest.encode("utf-8", "replace")) + chars
        for i, sizes in exacts.items():  # ctxreplay's own marker: the original's figures
            n_chars[i], n_bytes[i], n_lines[i] = sizes.n_chars, sizes.n_bytes, sizes.n_lines
    messages["n_bytes"], messages["n_chars"] = n_bytes, n_chars
    estimated = set(redacted) | {i for i, sizes in exacts.items() if sizes.estimated}
    for name, col in _TOKEN_COLUMN.items():
        if name not in tokenizers:
            messages[col] = pa.nulls(len(texts), pa.int64())
            continue
        counts = count_tokens(texts, name, threads=threads)
        for i, (rest, _, chars) in redacted.items():
            counts[i] = count_one(rest, name) + tokens_for(chars, name)
        for i, sizes in exacts.items():
            declared_tokens = sizes.tokens_for(name)
            if declared_tokens is None:  # a tokenizer the marker does not name: estimated
                estimated.add(i)
                declared_tokens = tokens_for(sizes.n_chars, name)
            counts[i] = declared_tokens
        messages[col] = counts
    messages["tokens_estimated"] = [i in estimated for i in range(len(texts))] if estimated \
        else [False] * len(texts)
    _estimated_per_run(runs, drafts, messages, estimated)
    return store.RunTables(runs=_table(runs, "runs"), messages=_table(messages, "messages"),
                           requests=_table(requests, "requests"), events=_table(events, "events"))


def _estimated_per_run(runs: dict[str, list[object]], drafts: list[RunDraft],
                       messages: dict[str, object], redacted: set[int]) -> None:
    """Each run's ``n_estimated_blocks`` and ``estimated_tokens_o200k`` (the o200k tokens of its
    blocks sized from redaction markers; None when o200k was not counted)."""
    o200k = messages["tokens_o200k"]
    counted = isinstance(o200k, list)
    n_blocks, tokens, lo = [], [], 0
    for d in drafts:
        hi = lo + len(d.messages["msg"])
        mine = [i for i in redacted if lo <= i < hi] if redacted else []
        n_blocks.append(len(mine))
        tokens.append(sum(o200k[i] for i in mine) if counted else None)  # type: ignore[index]
        lo = hi
    runs["n_estimated_blocks"], runs["estimated_tokens_o200k"] = n_blocks, tokens


def _concat(parts: list[dict[str, list[object]]], run_ids: list[str],
            counted: str) -> dict[str, list[object]]:
    """The column lists of several runs' rows, one after the other, with a ``run_id`` column
    (``counted`` is a column every row has); one run's lists are taken as they are."""
    if len(parts) == 1:
        return {"run_id": [run_ids[0]] * len(parts[0][counted]), **parts[0]}
    out: dict[str, list[object]] = {"run_id": []}
    for part, run_id in zip(parts, run_ids):
        out["run_id"].extend([run_id] * len(part[counted]))
        for col, values in part.items():
            out.setdefault(col, []).extend(values)
    return out


def _table(columns: dict[str, object], name: str) -> pa.Table:
    """The schema's table from column lists or arrays (each list converted once)."""
    schema = SCHEMAS[name]
    return pa.Table.from_arrays([v.cast(f.type) if isinstance(v := columns[f.name], pa.Array)
                                 else _array(v, f.type) for f in schema],  # type: ignore[arg-type]
                                schema=schema)


def _array(values: list[object], type_: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array; strings that are not valid Unicode get U+FFFD (any
    string column may hold one)."""
    try:
        return pa.array(values, type_)
    except UnicodeEncodeError:
        return pa.array([_valid_unicode(v) if isinstance(v, str) else v for v in values], type_)


def _valid_unicode(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:  # the same repair tiktoken applies before encoding
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True, slots=True)
class _Done:
    """One file's outcome as the ingest loop needs it (small: crosses process boundaries)."""

    source: str
    format: str
    sha256: str
    key: str
    n_runs: int
    n_tokens: int
    issues: tuple[Issue, ...]
    stored: bool
    index_rows: bytes
    """The entry's rows of the store's run index (``store_index.index_rows``)."""
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)


def _process(path: Path, root: Path, rel: str, fmt: str | None, tokenizers: tuple[str, ...],
             out: Path, strict: bool, threads: int) -> _Done:
    """Parse one file and write its entry (not yet in the manifest); runs in a worker."""
    parsed = parse_file(path, root, fmt=fmt, tokenizers=tokenizers, rel=rel, threads=threads)
    key = store.entry_key(parsed.sha256, parsed.source, tokenizers, PARSERS_VERSION)
    tables = parsed.tables
    if tables is None or (strict and parsed.issues):
        return _Done(parsed.source, parsed.format, parsed.sha256, key, 0, 0, parsed.issues, False,
                     b"", parsed.coverage)
    store.write_entry(out, key, tables)
    done = _Done(parsed.source, parsed.format, parsed.sha256, key, tables.runs.num_rows, 0,
                 parsed.issues, True, b"", parsed.coverage)
    store_session.journal(out, _entry(done))  # recorded the moment its files are complete
    col = _TOKEN_COLUMN.get(tokenizers[0]) if tokenizers else None
    n_tokens = (pc.sum(tables.messages[col]).as_py() or 0) if col else 0
    return replace(done, n_tokens=n_tokens, index_rows=store_index.index_rows(tables, key))


def _entry(done: _Done) -> store.Entry:
    """The store entry of a file written by ``_process``."""
    return store.Entry(done.source, done.key, done.sha256, done.format, done.n_runs,
                       done.coverage, tuple((i.line, i.reason) for i in done.issues))


def ingest(paths: Iterable[Path], out: Path, *, fmt: str | None = None,
           tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, jobs: int = 0, strict: bool = False,
           on_file: Callable[[str], None] | None = None,
           on_wait: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest every log file under ``paths`` into the store at ``out``.

    A file that fails keeps whatever the store had for it.  Entries are written first and the
    manifest last (also when the ingest is interrupted, listing every complete entry), so the
    store is readable at every moment.  One ingest writes a store at a time (a file lock);
    each finished entry is journalled at once, so an ingest killed outright loses none
    (``replay.store_session``).  Issues found in a file are kept with its entry and reported
    again whenever the entry is reused.

    Args:
        paths: files or folders (folders are searched for ``*.jsonl``, ``*.json``, ``*.traj``).
        out: the dataset directory (created if missing).
        fmt: force one parser instead of detecting the format.
        tokenizers: encodings to count with (one column each).
        jobs: worker processes (0: one per core, at most one per file); ``jobs=1`` uses one
            core only.
        strict: stop at the first file with an issue; that file counts as failed (not stored).
        on_file: called with each file's source path when it is done (progress bars).
        on_wait: called with a message when another ingest holds the store's lock and this
            one waits for it (default: the message is printed on stderr).

    Raises:
        TokenizerError: a tokenizer has no column in the store (raised before anything is
            read or written) or is not available (raised before anything is written; only
            looked at when some file is not cached: a fully cached ingest loads no encoding).
        StoreError: ``out`` holds a store of another schema version or a corrupt manifest.
        OutputError: ``out`` is a file, or a folder that cannot be created or written.
        ReplayInputError: ``fmt`` names no parser (raised before anything is read).
    """
    check_format(fmt)
    check_limits()
    for name in tokenizers:
        if name not in _TOKEN_COLUMN:
            raise TokenizerError(f"cannot ingest with tokenizer {name!r}: the store has a column "
                                 f"for {' and '.join(_TOKEN_COLUMN)} only")
    out = atomic_files.make_output_dir(out)
    with store_session.writing(out, on_wait):
        return _ingest_locked(paths, out, fmt, tokenizers, jobs, strict, on_file)


def _ingest_locked(paths: Iterable[Path], out: Path, fmt: str | None,
                   tokenizers: tuple[str, ...], jobs: int, strict: bool,
                   on_file: Callable[[str], None] | None) -> IngestReport:
    """``ingest`` with the store's lock held."""
    entries = store.read_manifest(out)
    before = dict(entries)
    for adopted in store_session.read_journal(out):  # finished by an ingest that was killed
        entries[adopted.source] = adopted
    report = IngestReport()
    found = discover(paths)
    todo: list[tuple[Path, Path, str]] = []
    for (path, root), rel in zip(found, sources(found)):
        old = entries.get(rel)
        if old is not None and old.key == store.entry_key(_sha256(path), rel, tokenizers, PARSERS_VERSION) \
                and store.has_entry(out, old.key):
            report.cached.append(rel)
            report.n_runs += old.n_runs
            report.issues.extend(Issue(str(path), line, reason) for line, reason in old.issues)
            if strict and old.issues:
                report.failed.append(rel)
            if on_file:
                on_file(rel)
            continue
        todo.append((path, root, rel))
    if todo:  # loading an encoding takes ~0.5 s: only when some file needs it, before anything
        for name in tokenizers:  # is written, and once (forked workers inherit it)
            encoding(name)
    fresh = store_index.IndexRows()
    finished: dict[str, store.Entry] = {}

    def on_finished(done: _Done) -> None:  # as each file finishes, in any order
        if done.index_rows:
            fresh.add(done.index_rows)
        if done.stored:
            finished[done.source] = _entry(done)

    results = _process_all(todo, fmt, tokenizers, out, strict, jobs, on_finished)
    completed = False
    try:
        for done in results:
            report.issues.extend(done.issues)
            if done.stored:
                entries[done.source] = finished[done.source]
                report.parsed.append(done.source)
                report.n_runs += done.n_runs
                report.n_tokens += done.n_tokens
            else:
                report.failed.append(done.source)
            if on_file:
                on_file(done.source)
            if strict and done.issues:
                break
        completed = True
    finally:
        results.close()
        if not completed:  # interrupted: keep every file that finished, in whatever order
            entries.update(finished)
        store_index.write_index(out, [entries[s] for s in sorted(entries)], fresh.table())
        store.write_manifest(out, entries)
        if completed:  # else kept: workers stopped by the interruption may have journalled more
            store_session.forget_journal(out)
        store_session.remove_stale(out)  # what workers stopped midway left
    live = {e.key for e in entries.values()}
    for old in before.values():  # entries replaced by a new version of their file
        if old.key not in live:
            store.remove_entry(out, old.key)
    return report


def _process_all(todo: list[tuple[Path, Path, str]], fmt: str | None, tokenizers: tuple[str, ...],
                 out: Path, strict: bool, jobs: int, on_finished: Callable[[_Done], None],
                 ) -> Iterator[_Done]:
    """Each file's outcome, in ``todo`` order; each also goes to ``on_finished`` as soon as it is
    done (in any order), and its run-index rows are dropped after that, so results waiting for
    an earlier file stay small."""
    cores = os.cpu_count() or 1
    workers = min(jobs or cores, len(todo))
    if workers <= 1:
        threads = max(1, jobs or cores) if len(todo) == 1 else 1
        for path, root, rel in todo:
            yield _without_index(_process(path, root, rel, fmt, tokenizers, out, strict, threads),
                                 on_finished)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=init_worker,
                               initargs=(os.getpid(), True))
    try:
        # biggest files first keeps every worker busy to the end; results still come in order
        position: dict[Future[_Done], int] = {}
        for k in sorted(range(len(todo)), key=lambda k: -_size(todo[k][0])):
            path, root, rel = todo[k]
            position[pool.submit(_process, path, root, rel, fmt, tokenizers, out, strict, 1)] = k
        ready: dict[int, _Done] = {}
        finished = as_completed(list(position))  # one waiter per future, not one per wait
        for k in range(len(todo)):
            while k not in ready:
                future = next(finished)
                ready[position.pop(future)] = _without_index(future.result(), on_finished)
            yield ready.pop(k)
    except BaseException:  # interrupted (Ctrl-C) or failed: stop the workers now, not after
        for process in list(getattr(pool, "_processes", {}).values()):  # their current file
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _without_index(done: _Done, on_finished: Callable[[_Done], None]) -> _Done:
    on_finished(done)
    return replace(done, index_rows=b"") if done.index_rows else done


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _sha256(path: Path) -> str:
    return sha256_of(path)
