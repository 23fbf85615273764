"""What the ``replay`` commands print, and how they exit.

Two consoles (tables and results on stdout, warnings and errors on stderr),
``_emit`` (a table, or JSON with ``--json``), ``_print_json``, the progress bar
and ``_errors``, which turns a ``ReplayError`` into exit code 2.

Not here: the commands (``replay.cli.replay_commands``,
``replay.cli.analysis_commands``), their shared arguments (``replay.cli.inputs``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from replay.errors import ReplayError

out_console = Console(width=None if sys.stdout.isatty() else 220)
err_console = Console(stderr=True, soft_wrap=True)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def printable(text: object) -> str:
    """A string that may come from a file, safe to print: rich markup escaped (shown, never
    interpreted), control and direction characters shown as escapes (``\\x1b``)."""
    return escape(_CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                               str(text)))


def _print_json(data: Any) -> None:
    """Plain JSON on stdout, written as it is encoded (an archive's rows in little memory)."""
    for chunk in json.JSONEncoder(indent=1, default=str).iterencode(data):
        sys.stdout.write(chunk)
    sys.stdout.write("\n")


_MAX_TABLE_ROWS = 500
"""Tables longer than this are cut in the terminal (``--json`` prints every row)."""


def _emit(rows: list[dict[str, Any]], as_json: bool, *, title: str) -> None:
    """Rows as a table or JSON; ``rows`` may be a ``replay.run.LazyRows`` (made as printed)."""
    if as_json:
        _print_json(rows)
        return
    shown = list(itertools.islice(iter(rows), _MAX_TABLE_ROWS))
    table = Table(title=title, title_justify="left")
    for col in shown[0] if shown else ["(none)"]:
        table.add_column(col, overflow="fold")
    for r in shown:
        table.add_row(*[_cell(v) for v in r.values()])
    out_console.print(table)
    if len(rows) > _MAX_TABLE_ROWS:
        out_console.print(f"… {len(rows) - _MAX_TABLE_ROWS:,} more rows not shown (--json prints "
                          "them all)", highlight=False)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "" if v is None else printable(v)


@contextmanager
def _progress(label: str, total: int, quiet: bool) -> Iterator[Callable[[str], None]]:
    show = not quiet and sys.stderr.isatty() and not os.environ.get("CI") and total > 1
    if not show:
        yield lambda _name: None
        return
    with Progress(TextColumn(f"{label}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda _name: bar.advance(task)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except ReplayError as exc:
        err_console.print(f"[red]error[/]: {exc}", highlight=False)
        raise typer.Exit(2) from None

