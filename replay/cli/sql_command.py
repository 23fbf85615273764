"""``replay sql QUERY [PATHS]``: one read-only SQL query over the dataset and the traces.

Views ``runs``, ``messages``, ``requests``, ``events`` (the dataset of PATHS: log files ingested
into the project cache, or a dataset directory) and ``trace_requests``, ``trace_actions``,
``trace_evictions`` (each ``--traces`` folder written by ``replay run --out``); docs/queries.md
has their layout and the queries users ask first.

Not here: running the query (``replay.sql``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer

from replay.cli.inputs import (
    CacheOutOpt,
    FormatOpt,
    QuietOpt,
    StrictOpt,
    _finish,
    _open,
    existing,
    table_command,
)
from replay.cli.output import _MAX_TABLE_ROWS, _emit, _errors, say
from replay.cli.tables import Layout, TableOptions
from replay.errors import ReplayError


@table_command
def sql(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="One SELECT (or WITH, DESCRIBE, SHOW) statement; "
                                              "docs/queries.md has the views and examples.")],
    paths: Annotated[list[Path] | None, typer.Argument(
        metavar="PATHS", callback=existing, help="Log files or folders, or one dataset directory written by `replay ingest`: the "
             "views runs, messages, requests, events.")] = None,
    traces: Annotated[list[Path] | None, typer.Option(
        "--traces", "-t", help="A folder written by `replay run --out` (repeat for several "
                               "policies): the views trace_requests, trace_actions, "
                               "trace_evictions.")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=0, metavar="N", help=f"Print at most N rows (0: all). Default: "
        f"{_MAX_TABLE_ROWS:,} in a table, every row with --csv or --json. The query stops once "
        "N+1 rows are read; one that sorts or groups still reads its whole input.")] = None,
    cache_dir: CacheOutOpt = None, fmt: FormatOpt = None, strict: StrictOpt = False,
    quiet: QuietOpt = False, *, table: TableOptions,
) -> None:
    """Run one read-only SQL query (DuckDB) over the dataset of PATHS and the --traces folders.

    Exit 0 with the rows, 1 when an input log failed to ingest or the dataset or a --traces
    folder given is damaged, 2 for a query DuckDB refuses, a statement other than a select, or
    DuckDB not installed (pip install 'ctxreplay[sql]').

    A table shows the first 500 rows unless --limit says otherwise (and says when there
    were more; the rows past those it shows are counted, not held); --csv and --json print
    every row unless --limit is given, written as DuckDB
    gives them (10,000 rows in memory at a time: a result of any size); a query that fails
    part-way stops there, exit 2 (1 for a damaged input), stderr saying how many rows were
    written before it: --json's array is then left unclosed, so that no JSON reader takes the
    rows written for the whole result.
    """
    from replay.sql import sql as run_sql  # lazy: DuckDB's views only for this command
    from replay.sql import sql_stream

    export = table.as_csv or table.as_json  # wants every row; a table, what it shows
    if export and not limit:  # every row: written as read, a batch in memory at a time
        with _errors():  # (a query failing part-way: the rows before it written, exit 2)
            corpus = _open(paths, cache_dir, fmt, quiet, strict) if paths else None
            with sql_stream(query, corpus=corpus, traces=traces or ()) as got:
                _renamed_note(got.renamed)
                streamed = _Streamed(got.columns, got.batches, finite=table.as_json)
                try:
                    _emit(streamed, table, title="", layout=Layout(numeric=got.numeric),
                          columns=got.columns)  # (no rows: CSV's header, JSON's [])
                except ReplayError:  # a later batch failed: the rows before it are written
                    _cut_note(streamed.n_fetched, as_json=table.as_json)
                    raise
        _nonfinite_note(streamed.n_nonfinite, streamed.n_decimal_text)
        _finish(corpus.report if corpus is not None else None, strict)
        return
    if not export:  # a table: its first rows kept, the others counted as read (--limit 0)
        _table(query, paths, traces, limit, cache_dir, fmt, quiet, strict, table)
        return
    with _errors():  # a dataset refused: one line, exit 1 (a cache: 2), as on every command
        corpus = _open(paths, cache_dir, fmt, quiet, strict) if paths else None
        result = run_sql(query, corpus=corpus, traces=traces or (), limit=limit)
    _renamed_note(result.renamed)
    rows = [dict(zip(result.columns, r)) for r in result.rows]
    if table.as_json:
        rows, n_nonfinite, n_decimal_text = _finite(rows)
        _nonfinite_note(n_nonfinite, n_decimal_text)
    if result.more:
        say(f"note: the first {len(rows):,} rows; the query gives more (--limit N for N, "
            "--limit 0 for all)", err=True)
    title = f"first {len(rows):,} rows (more not shown)" if result.more else f"{len(rows):,} rows"
    _emit(rows, table, title=title, layout=Layout(numeric=result.numeric),
          columns=result.columns)  # (no rows: CSV's header, JSON's [])
    _finish(corpus.report if corpus is not None else None, strict)


def _table(query: str, paths: list[Path] | None, traces: list[Path] | None, limit: int | None,
           cache_dir: Path | None, fmt: str | None, quiet: bool, strict: bool,
           table: TableOptions) -> None:
    """The table of ``replay sql``: at most ``limit`` rows read (default ``_MAX_TABLE_ROWS``;
    0: all), the first ``_MAX_TABLE_ROWS`` of them kept and shown, the others only counted
    (``_emit`` says how many are not shown, as of any table): ``--limit 0`` over a result of
    any size holds one batch and the rows shown."""
    from replay.sql import BATCH_ROWS, sql_stream  # lazy: DuckDB only for this command

    cap = limit if limit is not None else _MAX_TABLE_ROWS  # 0: every row
    kept: list[tuple[Any, ...]] = []
    n_read = 0
    with _errors():  # a dataset refused: one line, exit 1 (a cache: 2), as on every command
        corpus = _open(paths, cache_dir, fmt, quiet, strict) if paths else None
        with sql_stream(query, corpus=corpus, traces=traces or (),
                        batch_rows=min(BATCH_ROWS, cap + 1) if cap else None) as got:
            for batch in got.batches:  # (one row past the cap says there is more)
                kept += batch[:max(0, _MAX_TABLE_ROWS - len(kept))]
                n_read += len(batch)
                if cap and n_read > cap:
                    break
    more = bool(cap) and n_read > cap
    n_rows = min(n_read, cap) if cap else n_read
    _renamed_note(got.renamed)
    if more:
        say(f"note: the first {n_rows:,} rows; the query gives more (--limit N for N, "
            f"--limit 0 for all{'' if limit is not None else '; --csv and --json print all'})",
            err=True)
    if not n_rows:
        say(f"no rows (columns: {', '.join(got.columns)})")
    else:
        rows = [dict(zip(got.columns, r)) for r in kept[:n_rows]]
        _emit(rows, table, layout=Layout(numeric=got.numeric),
              title=f"first {n_rows:,} rows (more not shown)" if more else f"{n_rows:,} rows")
        if n_rows > len(rows):  # (as _emit says it of the rows it is given)
            say(f"… {n_rows - len(rows):,} more rows not shown (--json prints them all)")
    _finish(corpus.report if corpus is not None else None, strict)


def _renamed_note(renamed: tuple[tuple[str, str], ...]) -> None:
    if renamed:
        say("note: columns of one name renamed so that none is lost: "
            + ", ".join(f"{old} → {new}" for old, new in renamed), err=True)


def _cut_note(n_written: int, *, as_json: bool) -> None:
    """What stdout holds when a streamed query failed after its first batch (``_errors`` then
    says the error and exits): never something a reader could take for the whole result."""
    say(f"note: the query failed after {n_written:,} rows were written: the output stops there"
        + (", its JSON array left unclosed (no JSON reader takes it for the whole result)"
           if as_json else " (a CSV reader cannot tell: the exit code and this error say it)"),
        err=True)


def _nonfinite_note(n_nonfinite: int, n_decimal_text: int = 0) -> None:
    if n_nonfinite:
        say(f"note: {n_nonfinite:,} values NaN or ±infinity printed as null (JSON has no "
            "such numbers; --csv or the table shows them)", err=True)
    if n_decimal_text:
        say(f"note: {n_decimal_text:,} DECIMAL values printed as strings, their exact digits: "
            "more than a JSON reader's number (a double) keeps (CAST(x AS DOUBLE) in the "
            "query prints numbers)", err=True)


class _Streamed(list[dict[str, Any]]):
    """A result's rows as dicts, made a batch at a time as ``_emit`` writes them (CSV, or
    JSON through ``json.JSONEncoder.iterencode``, which takes any ``list`` by its truth and
    iteration, as ``replay.apply_policy.LazyRows``), NaN and ±inf as None with ``finite``
    (counted in ``n_nonfinite``) and DECIMALs as ``_finite`` writes them.  Iterated once, but for a first look at the first batch
    (``_emit`` reads the first row's columns): a second pass past it would have lost rows, and
    raises instead.  ``n_fetched``: the rows of the batches fetched so far, all written before
    the next is fetched (where a query that fails part-way raises)."""

    def __init__(self, columns: tuple[str, ...], batches: Iterator[list[tuple[Any, ...]]], *,
                 finite: bool) -> None:
        super().__init__()
        self._columns, self._batches, self._finite = columns, batches, finite
        self._first = next(batches, [])
        self.n_fetched = len(self._first)
        self._past_first = False
        self.n_nonfinite = 0
        self.n_decimal_text = 0

    def __bool__(self) -> bool:
        return bool(self._first)

    def __len__(self) -> int:
        raise TypeError("streamed rows have no length until they are read")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._past_first:
            raise RuntimeError("streamed rows are read once")
        yield from self._dicts(self._first)
        if not self._first:  # no row at all: nothing a second pass could lose
            return
        self._past_first = True
        for batch in self._batches:
            self.n_fetched += len(batch)
            yield from self._dicts(batch)

    def _dicts(self, batch: list[tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
        for r in batch:
            row = dict(zip(self._columns, r))
            if self._finite:
                (row,), n, n_text = _finite([row])
                self.n_nonfinite += n
                self.n_decimal_text += n_text
            yield row


def _finite(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    """``rows`` with every NaN and ±inf (a query's ``x / 0``, also inside lists and structs)
    as None, which JSON can say, and how many there were: ``json`` would write ``NaN`` and
    ``Infinity``, which no JSON reader takes.  A DECIMAL (DuckDB's type of ``0.5 * n``) is a
    JSON number when a double holds it exactly (the double's shortest text reads back as the
    same decimal), else a string of its exact digits, counted (the third figure): written as
    a number, every JSON reader would round it without a word."""
    count = n_text = 0

    def fix(v: Any) -> Any:
        nonlocal count, n_text
        if isinstance(v, float) and not math.isfinite(v):
            count += 1
            return None
        if isinstance(v, Decimal):
            if not v.is_finite():
                count += 1
                return None
            if Decimal(repr(number := float(v))) == v:
                return number
            n_text += 1
            return str(v)
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [fix(x) for x in v]
        return v

    fixed = [{k: fix(v) for k, v in row.items()} for row in rows]
    return fixed, count, n_text
