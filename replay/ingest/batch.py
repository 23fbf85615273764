"""Ingest: log files → parsed runs → token counts → the Parquet store.

``ingest`` reads every file under the given paths (each with ``replay.ingest.parse_file``: format
detected from content unless given, runs as Arrow tables with tokens counted once), in
parallel across files, skipping files whose cache entry already exists, and never losing what
the store had for a file that now fails.  Every problem is an ``Issue`` (``file:line: reason``);
the batch goes on.

Not here: which files are read and the names they are stored under (``replay.ingest.discover``),
one file's parsing (``replay.ingest.parse_file``).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from replay import atomic_files
from replay.errors import TokenizerError
from replay.ingest import store, store_index, store_session
from replay.ingest.arrow_read import int64_total
from replay.ingest.discover import discover, sources
from replay.ingest.entry_state import intact
from replay.ingest.entry_write import DataFolder, NewEntry, write_entry
from replay.ingest.failed_inputs import failed_reason
from replay.ingest.ingest_report import IngestReport, report_reused
from replay.ingest.input_files import check_max_bytes, holds_at_least, input_size, sha256_of
from replay.ingest.names import DEFAULT_TOKENIZERS, TOKEN_COLUMN
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS_VERSION, check_format
from replay.ingest.parsers.coverage import unknown_types
from replay.ingest.parsers.source import Issue
from replay.ingest.store_older import older_store
from replay.ingest.store_owned import check_ours
from replay.ingest.tokens import encoder, warm
from replay.output_targets import Target, check_cache_apart, check_targets
from replay.workers import init_worker


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
    index_rows: bytes | store_index.RunRows
    """The entry's rows of the store's run index (``store_index.index_rows``): a stream from a
    worker process, ``RunRows`` from ``_process`` called in the ingest's own process."""
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    no_conversation: str = ""
    checksum: str = ""
    """The written entry's checksum (``store.entry_checksum``)."""


def _process(path: Path, root: Path, rel: str, fmt: str | None, tokenizers: tuple[str, ...],
             out: Path, strict: bool, threads: int, in_worker: bool = True,
             held: _Held | None = None) -> _Done:
    """Parse one file and write its entry (not yet in the manifest); runs in a worker
    (``in_worker=False``: in the ingest's own process, its run-index rows kept as
    ``RunRows``; ``held``: the store's data folder and journal held open for its files)."""
    folder = held.folder if held is not None else None
    with NewEntry(out, folder=folder) as entry:  # (a big file's runs written as they are made)
        parsed = parse_file(path, root, fmt=fmt, tokenizers=tokenizers, rel=rel,
                            threads=threads, shared_text=True, sink=entry)
        key = store.entry_key(parsed.sha256, parsed.source, tokenizers, PARSERS_VERSION, fmt)
        tables = parsed.tables
        if tables is None or (strict and parsed.issues):
            return _Done(parsed.source, parsed.format, parsed.sha256, key, 0, 0, parsed.issues,
                         False, b"", parsed.coverage, parsed.no_conversation)
        n_runs = tables.runs.num_rows

        def journal(checksum: str) -> None:  # before the entry's rename: a worker killed
            # right after it (its parent gone) still leaves the complete entry journalled
            done = store.Entry(parsed.source, key, parsed.sha256, parsed.format, n_runs,
                               parsed.coverage, _stored_issues(parsed.issues), checksum)
            if held is not None:
                held.journal.add(done)
            else:
                store_session.journal(out, done)

        checksum = entry.commit(key, journal) if entry.writer is not None \
            else write_entry(out, key, tables, before_rename=journal, folder=folder)
    rows = store_index.index_rows(tables, key, stream=False)
    assert isinstance(rows, store_index.RunRows)
    return _Done(parsed.source, parsed.format, parsed.sha256, key, n_runs,
                 _token_total(rows, tables, tokenizers), parsed.issues, True,
                 rows.stream() if in_worker else rows, parsed.coverage, checksum=checksum)


def _token_total(rows: store_index.RunRows, tables: store.RunTables,
                 tokenizers: tuple[str, ...]) -> int:
    """An entry's tokens by the first tokenizer (0 without one): the sum of its messages'
    column (a null counting 0: ``int64_total``), which an entry of one run has already summed
    for its run-index row (``RunRows.tokens``, in ``TOKEN_COLUMN``'s order; all null: None)."""
    col = TOKEN_COLUMN.get(tokenizers[0]) if tokenizers else None
    if col is None:
        return 0
    if len(rows) == 1:
        return rows.tokens[list(TOKEN_COLUMN.values()).index(col)][0] or 0
    return int64_total(tables.messages[col])


@dataclass(frozen=True, slots=True)
class _Held:
    """What an ingest in its own process holds open for the files it writes one after another
    (``_process``'s ``held``): the store's data folder and its journal, each opened at the first
    entry (``entry_write.DataFolder``, ``store_session.Journal``), closed when its files are
    done (before the journal is forgotten)."""

    folder: DataFolder
    journal: store_session.Journal

    def close(self) -> None:
        try:
            self.journal.close()
        finally:
            self.folder.close()


def _entry(done: _Done) -> store.Entry:
    """The store entry of a file written by ``_process``."""
    return store.Entry(done.source, done.key, done.sha256, done.format, done.n_runs,
                       done.coverage, _stored_issues(done.issues), done.checksum)


def _stored_issues(issues: tuple[Issue, ...]) -> tuple[tuple[int, str], ...]:
    """A file's issues as its store entry keeps them (line, reason)."""
    return tuple((i.line, i.reason) for i in issues)


def ingest(paths: Iterable[Path], out: Path, *, fmt: str | None = None,
           tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, jobs: int = 0, strict: bool = False,
           on_file: Callable[[str], None] | None = None,
           on_wait: Callable[[str], None] | None = None,
           apart_from_inputs: bool = True) -> IngestReport:
    """Ingest every log file under ``paths`` into the store at ``out``.

    A file that fails keeps whatever the store had for it, and the manifest records it until an
    ingest reads it (``replay.ingest.failed_inputs``).  Entries are written first and the
    manifest last (also when the ingest is interrupted, listing every complete entry), so the
    store is readable at every moment.  One ingest writes a store at a time (a file lock);
    each finished entry is journalled at once, so an ingest killed outright loses none
    (``replay.ingest.store_session``).  Issues found in a file are kept with its entry and reported
    again whenever the entry is reused.

    Args:
        paths: files or folders (folders are searched for ``*.jsonl``, ``*.json``, ``*.traj``).
        out: the dataset directory (created if missing).
        fmt: force one parser instead of detecting the format.
        tokenizers: encodings to count with (one column each).
        jobs: worker processes (0: one per core, at most one per file, none when the files
            to parse hold under ``MIN_POOL_BYTES`` in all); ``jobs=1`` uses one core only.
        strict: stop at the first file with an issue; that file counts as failed (not stored).
        on_file: called with each file's source path when it is done (progress bars).
        on_wait: called with a message when another ingest holds the store's lock and this
            one waits for it (default: the message is printed on stderr).
        apart_from_inputs: ``out`` is a folder the user named for this ingest: it must be
            apart from ``paths`` (``replay.output_targets``).  False for the project cache's
            dataset (``replay.corpus.open_corpus``): it may lie inside an input folder but not
            be or hold an input (``check_cache_apart``), and its folder ``dataset`` is made
            below the cache without following a symlink.

    Raises:
        TokenizerError: a tokenizer has no column in the store (raised before anything is
            read or written) or is not available (raised before anything is written; only
            looked at when some file is not cached: a fully cached ingest loads no encoding).
        StoreError: ``out`` holds a store of another schema version or a corrupt manifest.
        OutputError: ``out`` is a file, an input folder, holds an input, is a symlink (the
            cache's dataset), a folder that cannot be created or written, or a folder that
            holds files not of a store (``replay.ingest.store_owned``: only a new or empty
            folder or a store is written).
        ReplayInputError: ``fmt`` names no parser (raised before anything is read).
    """
    check_format(fmt)
    check_max_bytes()
    for name in tokenizers:
        if name not in TOKEN_COLUMN:
            raise TokenizerError(f"cannot ingest with tokenizer {name!r}: the store has a column "
                                 f"for {' and '.join(TOKEN_COLUMN)} only")
    paths = list(paths)
    if apart_from_inputs:
        check_targets([Target(out, "--out", folder=True)], inputs=paths)
        check_ours(out, "--out")
        out = atomic_files.make_output_dir(out)
    else:
        check_cache_apart(out, paths)
        out = atomic_files.make_output_dir(out.parent, out.name,  # (never a symlink)
                                           option="--cache-dir (or $CTXREPLAY_CACHE_DIR)")
        check_ours(out, "the project cache's dataset")
    with store_session.writing(out, on_wait):
        return _ingest_locked(paths, out, fmt, tokenizers, jobs, strict, on_file)


def _ingest_locked(paths: Iterable[Path], out: Path, fmt: str | None,
                   tokenizers: tuple[str, ...], jobs: int, strict: bool,
                   on_file: Callable[[str], None] | None) -> IngestReport:
    """``ingest`` with the store's lock held."""
    report = IngestReport()
    if not os.path.lexists(out / "manifest.json"):  # a new store: its manifest first, so that an
        store.write_manifest(out, {})  # ingest killed now leaves a folder known as a store
    older = older_store(out)  # an older ctxreplay's store: rebuilt, not refused
    manifest = store.Manifest({}, {}) if older else store.read_manifest_whole(out)
    entries, failed = manifest.entries, manifest.failed
    before = dict(entries)
    if older is None:
        for adopted in store_session.read_journal(out):  # finished by an ingest that was killed
            entries[adopted.source] = adopted
    else:  # unreadable by this version: removed first, so an interrupted rebuild leaves none
        report.rebuilt_from_schema = older[0]
        store_session.forget_journal(out)  # its lines are the older version's entries
        for key in older[1].values():
            store.remove_entry(out, key)
    links: list[Path] = []
    packed: list[Path] = []
    again: list[tuple[Path, Path]] = []
    found = discover(paths, not_followed=links, compressed=packed, repeated=again)
    report.not_followed = [str(p) for p in links]
    report.compressed = [str(p) for p in packed]
    report.repeated = [(str(a), str(b)) for a, b in again]
    todo: list[tuple[Path, Path, str]] = []
    for (path, root), rel in zip(found, sources(found)):
        old = entries.get(rel)
        same = old is not None and old.key == store.entry_key(_sha256(path), rel, tokenizers,
                                                               PARSERS_VERSION, fmt)
        if same and old is not None and not intact(out, old):
            report.repaired.append(rel)  # its cached entry fails its checksum: parsed again
            same = False
        if same and old is not None:
            report_reused(report, old, str(path), strict)
            failed.pop(rel, None)
            if on_file:
                on_file(rel)
            continue
        todo.append((path, root, rel))
    if todo:  # loading an encoding takes ~0.5 s: only when some file needs it, before anything
        for name in tokenizers:  # is written, and once (forked workers inherit it)
            encoder(name)
    fresh = store_index.IndexRows()
    finished: dict[str, store.Entry] = {}

    def on_finished(done: _Done) -> None:  # as each file finishes, in any order
        if len(done.index_rows):
            fresh.add(done.index_rows)
        if done.stored:
            finished[done.source] = _entry(done)

    results = _process_all(todo, fmt, tokenizers, out, strict, jobs, on_finished)
    completed = False
    try:
        for done in results:
            report.issues.extend(done.issues)
            failed.pop(done.source, None)
            if done.stored:
                entries[done.source] = finished[done.source]
                report.parsed.append(done.source)
                report.n_runs += done.n_runs
                if unknown := unknown_types(done.coverage):
                    report.unknown[done.source] = unknown
                report.n_tokens += done.n_tokens
            elif done.no_conversation:
                report.no_conversation[done.source] = done.no_conversation
            else:
                report.failed.append(done.source)
                failed[done.source] = failed_reason(done.issues, strict)
            if on_file:
                on_file(done.source)
            if strict and done.issues:
                break
        completed = True
    finally:
        results.close()
        if not completed:  # interrupted: keep every file that finished, in whatever order
            entries.update(finished)
        index_sha256 = store_index.write_index(out, [entries[s] for s in sorted(entries)],
                                               fresh.table())
        store.write_manifest(out, entries, index_sha256, failed)
        if completed:  # else kept: workers stopped by the interruption may have journalled more
            store_session.forget_journal(out)
        store_session.remove_stale(out)  # what workers stopped midway left
    live = {e.key for e in entries.values()}
    for old in before.values():  # entries replaced by a new version of their file
        if old.key not in live:
            store.remove_entry(out, old.key)
    if older is not None:
        given = set(sources(found))
        report.dropped_older = sum(1 for s in older[1] if s not in given)
    col = TOKEN_COLUMN.get(tokenizers[0]) if tokenizers else None
    if report.cached and col:  # (written to the index above, each entry's file as a fallback)
        report.n_tokens_cached = store_index.stored_tokens(
            out, [entries[s] for s in report.cached], col)
    return report


MIN_POOL_BYTES = 2 << 20
"""Files to parse that hold less than this (2 MiB) in all are parsed in this process when the
number of workers is left to ingest (``jobs=0``): parsing runs at ~27 MB/s a core, so two
workers would save at most ~40 ms, about what starting and stopping them costs (a fork, the
pool's initializer, each result sent back) in a small process, and much less than it costs in
a big one (a notebook, a test runner: a fork copies the page tables of the whole process and
every page the worker then writes: the suite's output-trust and hostile-input tests, a few
small logs ingested a test, 32.3, 32.1 -> 24.4, 28.0 s of CPU, the kernel's part 6.3 -> 2-3 s)."""


def _process_all(todo: list[tuple[Path, Path, str]], fmt: str | None, tokenizers: tuple[str, ...],
                 out: Path, strict: bool, jobs: int, on_finished: Callable[[_Done], None],
                 ) -> Generator[_Done, None, None]:
    """Each file's outcome, in ``todo`` order; each also goes to ``on_finished`` as soon as it is
    done (in any order), and a worker's is yielded without its run-index rows, so results
    waiting for an earlier file stay small."""
    cores = os.cpu_count() or 1
    workers = min(jobs or cores, len(todo))
    if not jobs and not holds_at_least((path for path, _, _ in todo), MIN_POOL_BYTES):
        workers = 1  # (each worker costs more to start than it saves on so little)
    if workers <= 1:
        threads = max(1, jobs or cores) if len(todo) == 1 else 1
        held = _Held(DataFolder(out), store_session.Journal(out))
        try:
            for path, root, rel in todo:
                done = _process(path, root, rel, fmt, tokenizers, out, strict, threads,
                                in_worker=False, held=held)
                on_finished(done)  # (yielded as it is: no result waits for an earlier file,
                yield done  # and a copy without its rows costs ~40,000 instructions a file)
        finally:
            held.close()
        return
    methods = multiprocessing.get_all_start_methods()
    forked = "fork" in methods
    if forked:  # loaded once here, not once in every worker (a fork inherits it)
        for name in tokenizers:
            warm(name)
    context = multiprocessing.get_context("fork" if forked else None)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=init_worker,
                               initargs=(os.getpid(), True))
    try:
        # biggest files first keeps every worker busy to the end; results still come in order
        position: dict[Future[_Done], int] = {}
        for k in sorted(range(len(todo)), key=lambda k: -input_size(todo[k][0])):
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
    return replace(done, index_rows=b"") if len(done.index_rows) else done


def _sha256(path: Path) -> str:
    return sha256_of(path)
