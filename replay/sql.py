"""SQL over the dataset and the traces, with DuckDB (``replay sql QUERY``; docs/queries.md).

``sql(query, corpus=…, traces=[…])`` runs one read-only query over these views:

- ``runs``, ``messages``, ``requests``, ``events``: the dataset's tables (``replay.ingest.schema``),
  read from exactly the store entries the corpus holds — the manifest's entries, each file
  checked by ``replay.ingest.store.entry_file`` — never from whatever else lies under ``data/``
  (an entry a changed log replaced, a crashed ingest's leftovers), which a glob would count twice:
  ``messages`` by DuckDB from the entries' Parquet files, the three small tables from their
  footers (``replay.ingest.entry_file``), handed to DuckDB as Arrow tables;
- ``trace_requests``, ``trace_actions``, ``trace_evictions``: the traces of each ``replay run
  --out`` folder given (``traces/{requests,actions,evictions}.parquet``, ``replay.engine.trace``),
  the folders' rows together, told apart by their ``policy`` column: each folder read and
  checked as ``diff --traces`` and ``report --traces`` read one (``replay.run_folder.read_run``:
  this engine's files, of the trace columns, values a replay writes, described by the
  ``summary.json`` beside them), and the very tables checked handed to DuckDB.

Read-only by construction: one statement, and only a ``SELECT`` (``WITH``, ``DESCRIBE`` and
``SHOW`` are selects to DuckDB); DuckDB runs in memory with file access off except to the files
the views read, no extension installed or loaded, and its configuration locked.

DuckDB is the optional ``sql`` extra (``pip install 'ctxreplay[sql]'``).

Not here: printing (``replay.cli.sql_command``), the tables' columns (``replay.ingest.schema``,
``replay.engine.trace``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from replay.corpus import Corpus, damaged_entry
from replay.engine.trace import TRACE_SCHEMAS
from replay.errors import DamagedInputError, ReplayInputError, StoreError
from replay.ingest import store
from replay.run_folder import read_run

DATASET_VIEWS: tuple[str, ...] = store.TABLES
"""The dataset's views, named as its tables."""
TRACE_VIEWS: dict[str, str] = {f"trace_{name}": name for name in TRACE_SCHEMAS}
"""Trace view → its table in a ``replay run`` folder's ``traces/``."""


@dataclass(frozen=True, slots=True)
class SqlResult:
    """A query's columns and rows, and the views it could read."""

    columns: tuple[str, ...]
    """Each column's name, unique (``unique_columns``)."""
    rows: list[tuple[Any, ...]]
    views: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...] = ()
    """(name as the query gave it, name given) of each column renamed to be unique."""
    numeric: frozenset[str] = frozenset()
    """The columns of a number type (``NUMBER_TYPE``), by their unique name: a null there is
    an unknown number, even when every row's is."""
    more: bool = False
    """The query gives more rows than ``rows`` holds: the ``limit`` asked for stopped it."""


NUMBER_TYPE = re.compile(r"U?(?:TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|REAL"
                         r"|DECIMAL\(\d+, ?\d+\)")
"""DuckDB's number types, as a result column's type prints (``cursor.description``)."""


def unique_columns(names: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The columns' names made unique, and what was renamed: a query may name two columns
    alike (``SELECT r.n_requests, q.n_requests``), and rows keyed by name (a table, JSON)
    would keep one of them.  A repeated name gets ``_1``, ``_2``… (as DuckDB names them when
    it stores such a result), never a name another column has."""
    taken = set(names)
    seen: set[str] = set()
    out, renamed = [], []
    for name in names:
        new, k = name, 0
        while new in seen or (k and new in taken):
            k += 1
            new = f"{name}_{k}"
        seen.add(new)
        out.append(new)
        if new != name:
            renamed.append((name, new))
    return tuple(out), tuple(renamed)


BATCH_ROWS = 10_000
"""Rows fetched from DuckDB at a time (``sql_stream``): what this process holds of a result at
once when it is written as it is read (``replay sql --csv/--json``: every row)."""


@dataclass(frozen=True, slots=True)
class SqlStream:
    """A query's columns, and its rows as DuckDB gives them, a batch at a time."""

    columns: tuple[str, ...]
    """As ``SqlResult.columns``."""
    views: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]
    numeric: frozenset[str]
    batches: Iterator[list[tuple[Any, ...]]]
    """Lists of at most ``batch_rows`` rows, in the query's order, while the ``sql_stream``
    block is open; a query that fails part-way raises ``ReplayInputError`` there."""


def sql(query: str, *, corpus: Corpus | None = None, traces: Sequence[Path] = (),
        limit: int | None = None) -> SqlResult:
    """Run one read-only SQL query over the corpus's dataset and the traces' folders, its rows
    held in memory (``sql_stream`` for a result written as it is read).

    Args:
        query: one ``SELECT`` (or ``WITH … SELECT``, ``DESCRIBE``, ``SHOW``) statement.
        corpus: the dataset (views ``runs``, ``messages``, ``requests``, ``events``), or None.
        traces: ``replay run --out`` folders (views ``trace_requests``, ``trace_actions``,
            ``trace_evictions``).
        limit: at most this many rows (None: every row).  DuckDB streams the result and
            stops once one row more is read (``SqlResult.more``), so a query of endless rows
            ends; one that sorts or groups still reads its whole input first.

    Returns:
        The columns and rows.

    Raises:
        As ``sql_stream``; ReplayInputError: a negative ``limit``.
    """
    if limit is not None and limit < 0:
        raise ReplayInputError(f"a limit of {limit} rows: give 0 or more")
    with sql_stream(query, corpus=corpus, traces=traces,
                    batch_rows=BATCH_ROWS if limit is None else limit + 1) as got:
        rows = [r for batch in got.batches for r in batch] if limit is None \
            else next(got.batches, [])
        more = limit is not None and len(rows) > limit
        return SqlResult(got.columns, rows[:limit] if more else rows, got.views, got.renamed,
                         got.numeric, more)


@contextmanager
def sql_stream(query: str, *, corpus: Corpus | None = None, traces: Sequence[Path] = (),
               batch_rows: int | None = None) -> Iterator[SqlStream]:
    """Run one read-only SQL query (as ``sql``) and give its rows ``batch_rows`` at a time,
    as DuckDB streams them (None: ``BATCH_ROWS``): a result of any size is written with the
    memory of one batch (``replay sql --csv/--json``).  The connection is closed when the block
    ends.

    Raises:
        ReplayInputError: DuckDB is not installed, nothing to query, a folder is not a ``replay
            run`` output (neither summary.json nor traces/), the query is not one select, or
            DuckDB refuses it (its message; also while the batches are read).
        StoreError: an entry file of the dataset is missing, unreadable or not the file
            written (its checksum: an input that failed).
        RunFolderError: a ``replay run`` folder's ``summary.json`` or trace file is missing,
            a symlink, not this engine's, or not describing the other (``read_run``);
            DamagedInputError: a dataset file the view reads is not Parquet (inputs that
            failed).
    """
    try:
        # lazy: duckdb is the optional sql extra; only this command needs it
        import duckdb
    except ImportError:
        raise ReplayInputError("replay sql needs DuckDB: pip install 'ctxreplay[sql]'") from None
    if corpus is None and not traces:
        raise ReplayInputError("nothing to query: give log files or a dataset, or --traces")
    # every call goes through this connection, closed below: duckdb's module-level functions
    # open a default database whose worker threads live until the process exits
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        try:
            statements = con.extract_statements(query)
        except duckdb.Error as exc:
            raise ReplayInputError(f"not SQL DuckDB reads: {_one_line(exc)}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise ReplayInputError("replay sql runs one SELECT (or WITH, DESCRIBE, SHOW) "
                                   "statement: nothing that writes, attaches or sets")
        files, tables = _dataset(corpus) if corpus is not None else ({}, {})
        tables.update(_trace_tables(traces))
        readable = sorted({str(p.parent.resolve()) + os.sep for ps in files.values() for p in ps})
        con.execute(f"SET allowed_directories = [{', '.join(_literal(d) for d in readable)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        for view, paths in files.items():
            listed = ", ".join(_literal(str(p.resolve())) for p in paths)
            try:  # (a file that is no Parquet: DuckDB refuses it here, before any query)
                con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{listed}], "
                            "union_by_name = true)")
            except duckdb.Error as exc:  # (files checked before, yet not Parquet: damaged)
                raise DamagedInputError(f"the {view} view cannot be made from "
                                        f"{', '.join(map(str, paths))}: {_one_line(exc)}") \
                    from None
        for view, table in tables.items():
            con.register(view, table)
        try:
            cur = con.execute(query)
        except duckdb.Error as exc:
            raise ReplayInputError(f"query failed: {_one_line(exc)}") from None
        described = cur.description or ()
        columns, renamed = unique_columns([d[0] for d in described])
        numeric = frozenset(c for c, d in zip(columns, described)
                            if NUMBER_TYPE.fullmatch(str(d[1])))
        views = tuple(n for n in (*DATASET_VIEWS, *TRACE_VIEWS) if n in files or n in tables)
        yield SqlStream(columns, views, renamed, numeric,
                        _batches(cur, batch_rows or BATCH_ROWS, duckdb.Error))
    finally:
        con.close()


def _batches(cur: Any, n: int, error: type[Exception]) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of DuckDB's cursor ``cur``, ``n`` at a time, until there is none."""
    while True:
        try:
            batch = cur.fetchmany(n)
        except error as exc:
            raise ReplayInputError(f"query failed: {_one_line(exc)}") from None
        if not batch:
            return
        yield batch


def _dataset(corpus: Corpus) -> tuple[dict[str, list[Path]], dict[str, pa.Table]]:
    """The corpus's store entries: the Parquet files of the ``messages`` view, and the tables
    of the other views (from the files' footers)."""
    if not corpus.entries:
        raise ReplayInputError("an in-memory corpus (Corpus.from_tables) has no dataset files "
                               "to query: write it with replay ingest first")
    paths = [store.entry_file(corpus.root, e.key) for e in corpus.entries]
    footers = []
    for path, entry in zip(paths, corpus.entries):  # damaged: an input that failed (exit 1)
        try:
            if not path.is_file():
                raise StoreError(f"{path}: missing from the dataset; `replay ingest` of its log "
                                 "repairs the entry")
            footers.append(store.read_footer(corpus.root, entry.key, entry.checksum))
        except StoreError as exc:
            raise damaged_entry(exc, entry) from None
    tables = {name: pa.concat_tables([f[name] for f in footers]) for name in DATASET_VIEWS
              if name != "messages"}
    return {"messages": paths}, tables


def _trace_tables(folders: Sequence[Path]) -> dict[str, pa.Table]:
    """Trace view → the folders' trace tables together, each folder read and checked as
    ``diff --traces`` reads one (``read_run``: a trace of another engine or other columns, a
    value no replay writes, a ``summary.json`` missing or not describing its traces is an input
    that failed); a folder named twice is refused (its rows would be read twice), as are two
    folders holding rows of one run under one policy name (a copy, a policy replayed again:
    the views tell folders apart by ``policy`` only)."""
    tables: dict[str, list[pa.Table]] = {view: [] for view in TRACE_VIEWS}
    seen: dict[Path, Path] = {}
    held: dict[tuple[str, str], Path] = {}  # (policy, run) → the folder holding its rows
    for folder in folders:
        if (where := folder.resolve()) in seen:  # read twice, its rows would count twice
            raise ReplayInputError(f"{folder}: given twice (also as {seen[where]}); name each "
                                   "run folder once")
        seen[where] = folder
        if not any(os.path.lexists(p) for p in (folder / "summary.json", folder / "traces")):
            raise ReplayInputError(f"{folder}: not a `replay run --out` folder (no "
                                   "summary.json, no traces/)")
        policy, trace = read_run(folder)  # (RunFolderError: damaged, an input that failed)
        for run in sorted(set(trace.requests["run_id"].to_pylist())):
            if (again := held.setdefault((policy.name, run), folder)) != folder:
                raise ReplayInputError(
                    f"{folder}: holds run {run!r} under policy {policy.name!r}, as {again} "
                    "does (a copy, or the same policy replayed twice): their rows could not "
                    "be told apart and would count twice; give one of them")
        for view, name in TRACE_VIEWS.items():
            tables[view].append(trace.table(name))
    return {view: pa.concat_tables(ts) for view, ts in tables.items() if ts}


def _literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _one_line(exc: Exception) -> str:
    """DuckDB's message on one line (its caret lines, which point into the query, left out)."""
    lines = [line.strip() for line in str(exc).splitlines()]
    return " | ".join(line for line in lines if line and set(line) != {"^"})
