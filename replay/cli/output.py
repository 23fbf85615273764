"""What the ``replay`` commands print, and how they exit.

Two consoles (tables and results on stdout, warnings and errors on stderr),
``_emit`` (a table, or JSON with ``--json``), ``_print_json``, ``say`` / ``warn`` /
``error`` (one line each), the progress bar and ``_errors``, which turns a ``ReplayError``
into exit code 2 (a damaged input, ``DamagedInputError``: 1) and leaves no empty folder the
failed command created.

Every string printed here may come from a file, a log or a path: it is shown as plain text
(never read as rich markup, so ``[/]`` or ``[bold red]`` in a tool id prints as written) and
its terminal control characters, line breaks and bidirectional overrides are shown escaped
(``\\x1b``, ``\\n``, ``\\u202e``) by ``printable`` (``replay.safe_text.terminal``); ``--csv``
cells by ``replay.safe_text.csv_cell`` (escaped, and a cell that would start a formula
behind a ``'``).  Commands print only through these
functions, never with ``console.print`` of their own.

Not here: the commands (``replay.cli.replay_commands``,
``replay.cli.analysis_commands``), their shared arguments (``replay.cli.inputs``).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from replay.atomic_files import no_new_folder_left_on_failure
from replay.cli.tables import (
    MIN_TEXT,
    PLAIN,
    Layout,
    TableOptions,
    choose,
    fit,
    is_number,
    label_index,
    priority,
    shorten,
    totals_row,
    width,
)
from replay.errors import DamagedInputError, ReplayError, StoreError
from replay.ingest.run_label import distinct_width, short_labels
from replay.safe_text import csv_cell, strict_json, terminal

if TYPE_CHECKING:
    from rich.progress import Progress



def console_width(stream: object) -> int | None:
    """The width a console on ``stream`` is made with: None (rich reads ``COLUMNS``, else the
    terminal's) unless ``COLUMNS`` is 0, which rich takes as a width of 0 and then prints
    nothing at all, not even an error (``COLUMNS=0 replay run -p nosuch`` exited 2 in silence):
    then the terminal's width, else 80."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) == 0:
        return shutil.get_terminal_size((80, 24)).columns or 80  # (it passes over COLUMNS=0)
    return None if stream is None or getattr(stream, "isatty", lambda: False)() else 10_000


out_console = Console(width=console_width(sys.stdout))  # tables set their own
err_console = Console(stderr=True, soft_wrap=True, width=console_width(None))


printable = terminal
"""``replay.safe_text.terminal``: the one escaping of what a command prints."""


def plain(value: object, style: str = "") -> Text:
    """A ``printable`` string as rich ``Text``: printed as written, never parsed as markup."""
    return Text(printable(value), style=style)


def stdout_written() -> None:
    """Flush what the command wrote to stdout, before a line goes to stderr: on a pipe stdout
    is block-buffered and stderr is not, so ``replay runs ds --csv 2>&1 | less`` showed the
    warning after the CSV above the rows it follows (``--csv`` and ``--json`` are written
    through ``sys.stdout``, which rich's consoles do not flush).  Every stderr line of the
    commands (``say(err=True)``, ``warn``, ``error``, the progress bar) goes through here.
    A stdout already closed or gone (``| head``) is left to the exit's own handling."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def say(message: object, *, err: bool = False) -> None:
    """One line of plain text (on stderr with ``err``)."""
    if err:
        stdout_written()
    (err_console if err else out_console).print(plain(message), soft_wrap=True)


def warn(message: object) -> None:
    """``warning: …`` on stderr."""
    stdout_written()
    err_console.print(Text.assemble(("warning", "yellow"), ": ", plain(message)), soft_wrap=True)


def error(message: object) -> None:
    """``error: …`` on stderr."""
    stdout_written()
    err_console.print(Text.assemble(("error", "red"), ": ", plain(message)), soft_wrap=True)


def _print_json(data: Any) -> None:
    """Plain JSON on stdout, written as it is encoded (an archive's rows in little memory)."""
    for chunk in strict_json(json.JSONEncoder(indent=1, default=str).iterencode(data)):
        sys.stdout.write(chunk)
    sys.stdout.write("\n")


_MAX_TABLE_ROWS = 500
"""Tables longer than this are cut in the terminal (``--json`` prints every row)."""


def _emit(rows: list[dict[str, Any]], table: TableOptions = PLAIN, *, title: str,
          layout: Layout | None = None, columns: Sequence[str] = ()) -> None:
    """Rows as a table that fits the terminal (``replay.cli.tables``), or as JSON / CSV with
    every column, as ``table`` asks; ``rows`` may be a ``replay.apply_policy.LazyRows`` (made
    as printed).  ``columns``: the columns when there is no row to read them from (CSV's
    header is then still written: a result of no rows is CSV too)."""
    as_json, as_csv, wide = table.as_json, table.as_csv, table.wide
    if as_json:
        _print_json(rows)
        return
    layout = layout or Layout()
    first = next(iter(rows), None)
    available = list(first) if first else list(columns)
    try:
        cols = choose(available, layout, table.picked(), wide or as_csv)
    except ValueError as exc:
        error(exc)
        raise typer.Exit(2) from None
    if as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([csv_cell(c) for c in cols])
        for r in rows:
            writer.writerow([csv_cell(r.get(c)) for c in cols])
        return
    shown = list(itertools.islice(iter(rows), _MAX_TABLE_ROWS))
    table_rows = [{c: r.get(c) for c in cols} for r in shown]
    total = totals_row(list(rows), cols, layout) if layout.totals and len(rows) > 1 else None
    numeric = [c in layout.numeric or c in layout.units  # (a column with a unit or a total
               or all(is_number(r[c]) for r in table_rows)  # is one even when every value is
               and (c in layout.totals or any(r[c] not in (None, "") for r in table_rows))
               for c in cols]  # unknown: shown so, not blank)
    units = [layout.units.get(c) for c in cols]
    cells = [[UNKNOWN if v is None and numeric[i] else printable(_cell(v, units[i]))
              for i, v in enumerate(r.values())]
             for r in [*table_rows, *([total] if total else [])]]
    keep = list(range(len(cols)))
    dropped: list[str] = []
    widths: dict[int, int] = {}
    at = label_index(cols)
    names = [row[at] for row in cells] if cols and not numeric[at] else []
    if not wide:
        keep, dropped, widths = fit(cols, cells, numeric, width(), priority(cols, layout),
                                    {at: distinct_width(names, MIN_TEXT)} if names else None)
        short = short_labels(names, widths[at]) if names and at in widths else None
        cells = [[short[n] if i == at and short else shorten(c, widths[i]) if i in widths else c
                  for i, c in enumerate(row)] for n, row in enumerate(cells)]
    from rich.table import Table  # lazy: only when a table is printed (start-up time of --help)

    grid = Table(title=plain(title), title_justify="left")
    for i in keep:
        grid.add_column(plain(shorten(cols[i], widths.get(i, len(cols[i])))),
                         justify="right" if numeric[i] else "left", no_wrap=True)
    for n, row in enumerate(cells):
        grid.add_row(*[Text(row[i]) for i in keep], end_section=n == len(table_rows) - 1,
                      style="bold" if n >= len(table_rows) else None)
    full = 1 + sum(3 + max(len(shorten(cols[i], widths.get(i, len(cols[i])))),
                           *(len(r[i]) for r in cells)) for i in keep)
    Console(file=sys.stdout, width=full if wide else min(full, width()),
            force_terminal=out_console.is_terminal, no_color=out_console.no_color).print(grid)
    if len(rows) > _MAX_TABLE_ROWS:
        say(f"… {len(rows) - _MAX_TABLE_ROWS:,} more rows not shown (--json prints them all)")
    if dropped:
        hint = (f"{len(dropped)} more column{'s' if len(dropped) > 1 else ''} not shown: "
                f"{', '.join(dropped)} (--columns A,B,… picks, --wide shows all, --csv/--json "
                "print all)")
        for line in textwrap.wrap(printable(hint), width=max(40, width())):
            say(line)


UNKNOWN = "unknown"
"""A number that cannot be computed (or a total over one), in a table: never blank, never 0."""


def _cell(v: Any, unit: str | None = None) -> str:
    """A cell's text: a number by its column's unit (``format_value``: one rule per unit),
    else whole numbers with separators and other numbers with four decimals."""
    if unit is not None and v is not None:
        # lazy: analysis.metric_spec loads the policy model and YAML (start-up time of --help)
        from analysis.metric_spec import format_value

        return format_value(unit, v)
    if isinstance(v, float):
        return f"{v:,.4f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "" if v is None else str(v)


def _bar(label: str) -> Progress:
    """The progress bar on stderr of ``_progress``, ``_counter`` and ``_steps`` (a terminal's)."""
    # lazy: only when a bar is shown on a terminal (start-up time of every command)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    stdout_written()
    return Progress(TextColumn(label.replace("[", "\\[")), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=err_console, transient=True)


@contextmanager
def _progress(label: str, total: int, quiet: bool) -> Iterator[Callable[[str], None]]:
    show = not quiet and sys.stderr.isatty() and not os.environ.get("CI") and total > 1
    if not show:
        yield lambda _name: None
        return
    with _bar(label) as bar:
        task = bar.add_task(label, total=total)
        yield lambda _name: bar.advance(task)


@contextmanager
def _counter(label: str, quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress callback ``(done, total)`` for work whose size only the library learns (the
    runs of a corpus it opens): ``_progress``'s bar, started at the first call (only on a
    terminal, outside CI, for more than one item)."""
    if quiet or not sys.stderr.isatty() or os.environ.get("CI"):
        yield lambda _done, _total: None
        return
    bar = _bar(label)
    task: list[Any] = []

    def tick(done: int, total: int) -> None:
        if total <= 1:
            return
        if not task:
            bar.start()
            task.append(bar.add_task(label, total=total))
        bar.update(task[0], completed=done, total=total)
        if done >= total:  # the next step may show a bar of its own: one live display at once
            bar.stop()

    try:
        yield tick
    finally:
        if task:
            bar.stop()


@contextmanager
def _steps(label: str, quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress callback ``(done, total)`` for a library step that counts its own work (the
    figures of a report or a sweep): a bar on a terminal; else one line on stderr when the
    step starts (``--quiet``: nothing)."""
    bar = None
    if not quiet and sys.stderr.isatty() and not os.environ.get("CI"):
        bar = _bar(label)
    task: list[Any] = []

    def tick(done: int, total: int) -> None:
        if bar is None:
            if done == 0 and total and not quiet:
                say(f"{label} ({total:,})…", err=True)
            return
        if not task:
            bar.start()
            task.append(bar.add_task(label, total=total))
        bar.update(task[0], completed=done, total=total)

    try:
        yield tick
    finally:
        if bar is not None and task:
            bar.stop()


@contextmanager
def _errors(*, store_exit: int = 1) -> Iterator[None]:
    """A command's work: a ``ReplayError`` or an output that cannot be written is one line and
    exit 2, except a ``DamagedInputError`` (an input that failed: a ``replay run`` folder or a
    baseline read damaged), exit 1, and a ``StoreError`` (a dataset read damaged), exit
    ``store_exit`` (2 where the store is the command's output, ``replay ingest --out``); a
    folder the block created is removed again when it fails and is still empty
    (``replay.atomic_files.no_new_folder_left_on_failure``)."""
    with no_new_folder_left_on_failure():
        try:
            yield
        except StoreError as exc:
            error(exc)
            raise typer.Exit(store_exit) from None
        except DamagedInputError as exc:  # a run folder, a baseline: an input that failed
            error(exc)
            raise typer.Exit(1) from None
        except ReplayError as exc:
            error(exc)
            raise typer.Exit(2) from None
        except BrokenPipeError:  # stdout's reader gone (`| head`): not an output the user
            raise  # named; click ends the command as it does any closed pipe (exit 1, silent)
        except OSError as exc:  # an output the user named cannot be made or written (--out a
            # file, a read-only folder, a full disk): inputs never get here, ingest reports them
            where = exc.filename if exc.filename is not None else ""
            error(f"{where}: {exc.strerror or exc}" if where else f"{exc.strerror or exc}")
            raise typer.Exit(2) from None

