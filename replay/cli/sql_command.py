"""``replay sql QUERY [PATHS]``: one read-only SQL query over the dataset and the traces.

Views ``runs``, ``messages``, ``requests``, ``events`` (the dataset of PATHS: log files ingested
into the project cache, or a dataset directory) and ``trace_requests``, ``trace_actions``,
``trace_evictions`` (each ``--traces`` folder written by ``replay run --out``); docs/queries.md
has their layout and the queries users ask first.

Not here: running the query (``replay.sql``).
"""

from __future__ import annotations

import math
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

    Exit 0 with the rows, 1 when an input log failed to ingest or the dataset given is
    damaged, 2 for a query DuckDB refuses, a statement other than a select, or DuckDB not
    installed (pip install 'ctxreplay[sql]').

    A table shows the first 500 rows unless --limit says otherwise (and says when there
    were more); --csv and --json print every row unless --limit is given.
    """
    from replay.sql import sql as run_sql  # lazy: DuckDB's views only for this command

    with _errors():  # a dataset refused: one line, exit 1 (a cache: 2), as on every command
        corpus = _open(paths, cache_dir, fmt, quiet, strict) if paths else None
        export = table.as_csv or table.as_json  # wants every row; a table, what it shows
        cap = limit if limit is not None else 0 if export else _MAX_TABLE_ROWS
        result = run_sql(query, corpus=corpus, traces=traces or (), limit=cap or None)
    if result.renamed:
        say("note: columns of one name renamed so that none is lost: "
            + ", ".join(f"{old} → {new}" for old, new in result.renamed), err=True)
    rows = [dict(zip(result.columns, r)) for r in result.rows]
    if table.as_json:
        rows, n_nonfinite = _finite(rows)
        if n_nonfinite:
            say(f"note: {n_nonfinite:,} values NaN or ±infinity printed as null (JSON has no "
                "such numbers; --csv or the table shows them)", err=True)
    if result.more:
        say(f"note: the first {len(rows):,} rows; the query gives more (--limit N for N, "
            f"--limit 0 for all{'' if limit is not None else '; --csv and --json print all'})",
            err=True)
    if rows or table.as_json:
        title = f"first {len(rows):,} rows (more not shown)" if result.more else f"{len(rows):,} rows"
        _emit(rows, table, title=title, layout=Layout(numeric=result.numeric))
    else:
        say(f"no rows (columns: {', '.join(result.columns)})")
    _finish(corpus.report if corpus is not None else None, strict)


def _finite(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``rows`` with every NaN and ±inf (a query's ``x / 0``, also inside lists and structs)
    as None, which JSON can say, and how many there were: ``json`` would write ``NaN`` and
    ``Infinity``, which no JSON reader takes."""
    count = 0

    def fix(v: Any) -> Any:
        nonlocal count
        if isinstance(v, float) and not math.isfinite(v):
            count += 1
            return None
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [fix(x) for x in v]
        return v

    fixed = [{k: fix(v) for k, v in row.items()} for row in rows]
    return fixed, count
