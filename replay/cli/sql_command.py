"""``replay sql QUERY [PATHS]``: one read-only SQL query over the dataset and the traces.

Views ``runs``, ``messages``, ``requests``, ``events`` (the dataset of PATHS: log files ingested
into the project cache, or a dataset directory) and ``trace_requests``, ``trace_actions``,
``trace_evictions`` (each ``--traces`` folder written by ``replay run --out``); docs/queries.md
has their layout and the queries users ask first.

Not here: running the query (``replay.sql``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cli.inputs import (
    CacheOutOpt,
    FormatOpt,
    QuietOpt,
    StrictOpt,
    _finish,
    _open,
    table_command,
)
from replay.cli.output import _emit, _errors, say
from replay.cli.tables import TableOptions
from replay.sql import sql as run_sql


@table_command
def sql(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="One SELECT (or WITH, DESCRIBE, SHOW) statement; "
                                              "docs/queries.md has the views and examples.")],
    paths: Annotated[list[Path] | None, typer.Argument(
        metavar="PATHS", help="Log files or folders, or one dataset directory written by `replay ingest`: the "
             "views runs, messages, requests, events.")] = None,
    traces: Annotated[list[Path] | None, typer.Option(
        "--traces", "-t", help="A folder written by `replay run --out` (repeat for several "
                               "policies): the views trace_requests, trace_actions, "
                               "trace_evictions.")] = None,
    cache_dir: CacheOutOpt = None, fmt: FormatOpt = None, strict: StrictOpt = False,
    quiet: QuietOpt = False, *, table: TableOptions,
) -> None:
    """Run one read-only SQL query (DuckDB) over the dataset of PATHS and the --traces folders.

    Exit 0 with the rows, 1 when an input log failed to ingest, 2 for a query DuckDB refuses,
    a statement other than a select, or DuckDB not installed (pip install 'ctxreplay[sql]').
    """
    corpus = _open(paths, cache_dir, fmt, quiet, strict) if paths else None
    with _errors():
        result = run_sql(query, corpus=corpus, traces=traces or ())
    rows = [dict(zip(result.columns, r)) for r in result.rows]
    if rows or table.as_json:
        _emit(rows, table, title=f"{len(rows):,} rows")
    else:
        say(f"no rows (columns: {', '.join(result.columns)})")
    _finish(corpus.report if corpus is not None else None, strict)
