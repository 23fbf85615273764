"""Tables that fit the terminal: the columns that matter, numbers never split, a totals row.

``Layout`` is how a command wants its table shown: the default columns (the few that matter),
the columns a totals row adds up (``sum`` or ``max``) and which columns a narrow terminal keeps
first (``priority``: the label, requests, tokens sent, overshoots, then the rest).
``TableOptions`` is how the user asked for it (``--columns``, ``--wide``, ``--csv``, ``--json``;
every command that prints a table takes them, ``replay.cli.inputs.table_command``).  ``fit``
decides what is printed for a terminal ``width`` (``COLUMNS``, else the terminal's, else
``PIPED_WIDTH``): the columns in priority order while they fit, shown left to right — numbers at
full width, never wrapped; the label column (``run``, else the first) never narrower than where
its labels stay distinct (``replay.ingest.run_label.short_labels``: cut in the middle, the file
name's tail kept) and widened before later columns are kept; other text shortened with an
ellipsis down to ``MIN_TEXT`` characters (each whole up to ``WANT_TEXT`` when the room allows)
— and the names of the columns left out, which the caller says.

Not here: escaping and printing (``replay.cli.output``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PIPED_WIDTH = 120
"""Width of a table written to a pipe or file when ``COLUMNS`` is not set."""
MIN_TEXT = 12
"""A text column is shortened to no fewer characters than this (with an ellipsis)."""
WANT_TEXT = 24
"""Room a text column (a source path, a metric name) keeps before later columns are left out."""
HEADLINE_COLUMNS = ("requests", "n_requests", "tokens_sent", "tokens", "overshoots_n")
"""What a narrow table keeps after the label: requests, tokens sent, overshoots, then the rest."""
WANT_LABEL = 48
"""Room the label column (``least``) takes before other text columns share what is left."""
_BORDER = 3
"""Characters a rich table adds per column (separator and padding)."""


@dataclass(frozen=True, slots=True)
class TableOptions:
    """How the user asked for a command's table (``--columns``, ``--wide``, ``--csv``,
    ``--json``): one definition, taken by every command that prints a table
    (``replay.cli.inputs.table_command``)."""

    columns: str | None = None
    """``--columns A,B,…``: these columns instead of the layout's."""
    wide: bool = False
    """``--wide``: every column, however wide."""
    as_csv: bool = False
    """``--csv``: CSV with every column (or ``--columns``)."""
    as_json: bool = False
    """``--json``: JSON instead of a table."""

    def picked(self) -> list[str] | None:
        """The column names ``--columns`` gives, in order, each once (None: not given; a name
        given twice made a table's rows one cell short of its header: an IndexError)."""
        if not self.columns:
            return None
        return list(dict.fromkeys(c.strip() for c in self.columns.split(",") if c.strip()))


PLAIN = TableOptions()
"""A table as it fits the terminal (no option given)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """How a command's table is shown by default."""

    columns: tuple[str, ...] = ()
    """The default columns, in order (empty: every column)."""
    totals: dict[str, str] = field(default_factory=dict)
    """Column → ``sum``, ``max`` or ``per_source`` for a totals row (empty: no totals row).
    ``per_source``: a value of the row's log file, repeated in the row of each of its runs
    (``source_issues_n``), summed once per file (``source``): a sum over the rows counted a
    file of two runs twice."""
    units: Mapping[str, str] = field(default_factory=dict)
    """Column → its unit (``analysis.metric_spec.format_value``: whole numbers, %, USD)."""
    priority: tuple[str, ...] = HEADLINE_COLUMNS
    """The columns kept first, in this order, when the terminal is narrow (after the first
    column, which names the row); the others follow left to right."""
    numeric: frozenset[str] = frozenset()
    """Columns that hold numbers whatever their rows hold (a query's typed columns): an unknown
    value there is shown ``unknown`` even when every row's is, where a column's kind is
    otherwise told from its values (a column of ``units`` or ``totals`` is one too)."""


def width() -> int:
    """The table width: ``COLUMNS``, the terminal's, or ``PIPED_WIDTH`` for a pipe."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 20:
        return int(env)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((PIPED_WIDTH, 24)).columns
    return PIPED_WIDTH


_NUMBER_TEXT = re.compile(r"^(?:[+\-−]?\d[\d,]*(?:\.\d+)?%?|–|from 0|)$")


def is_number(v: Any) -> bool:
    """Whether a cell is a number, or a number already formatted (``+12%``, ``3,468,042``,
    ``–``): right-aligned, never shortened."""
    if isinstance(v, str):
        return bool(_NUMBER_TEXT.match(v))
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def choose(available: list[str], layout: Layout, columns: list[str] | None,
           wide: bool) -> list[str]:
    """The columns asked for: ``--columns``, every column with ``--wide``, else the layout's.

    A table with no rows has no columns to check ``--columns`` against, nor to show: it is
    printed empty (its title), whatever ``--columns`` names.

    Raises:
        ValueError: ``--columns`` names a column the table does not have (with the list).
    """
    if not available:
        return []
    if columns:
        unknown = [c for c in columns if c not in available]
        if unknown:
            raise ValueError(f"--columns: no column {', '.join(unknown)}; the table has "
                             f"{', '.join(available)}")
        return list(columns)
    if wide or not layout.columns:
        return list(available)
    return [c for c in layout.columns if c in available]


def fit(header: list[str], cells: list[list[str]], numeric: list[bool], width_chars: int,
        order: list[int] | None = None, least: dict[int, int] | None = None,
        ) -> tuple[list[int], list[str], dict[int, int]]:
    """(the indexes of the columns that fit in ``width_chars``, the names left out, the width
    each kept text column gets: what is left after the numbers, shared by the text columns).

    Columns are kept in ``order`` (indexes, most important first; default left to right) while
    they fit, shown left to right; ``least`` gives a text column the narrowest width it may
    take (the label column's: where its labels stay distinct), which it gets before any later
    column is kept."""
    least = least or {}
    longest = [max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(header)]
    used = 1
    keep: list[int] = []
    for i in order if order is not None else range(len(header)):
        need = longest[i] if numeric[i] else max(least.get(i, 0),
                                                 min(longest[i], max(WANT_TEXT, len(header[i]))))
        if used + need + _BORDER <= width_chars or not keep:
            keep.append(i)
            used += need + _BORDER
    keep.sort()
    dropped = [name for i, name in enumerate(header) if i not in keep]
    text = [i for i in keep if not numeric[i]]
    spare = width_chars - 1 - sum(_BORDER + (longest[i] if numeric[i] else 0) for i in keep)
    widths: dict[int, int] = {}
    base = {i: max(least.get(i, 0), min(longest[i], WANT_TEXT)) for i in text}
    for i in least:  # the label column first, up to WANT_LABEL (a preset's, a file's name)
        if i in base:
            base[i] = max(base[i], min(longest[i], WANT_LABEL, spare - sum(base.values())
                                       + base[i]))
    if sum(base.values()) <= spare:  # first, then the rest shared by what is still cut
        spare -= sum(base.values())
        more = sorted(text, key=lambda i: longest[i] - base[i])
        for n, i in enumerate(more):
            rest = sum(longest[j] - base[j] for j in more[n:])
            share = spare * (longest[i] - base[i]) // rest if rest else 0
            widths[i] = base[i] + min(longest[i] - base[i], share)
            spare -= widths[i] - base[i]
        return keep, dropped, widths
    for n, i in enumerate(sorted(text, key=lambda i: longest[i])):
        rest = sum(longest[j] for j in sorted(text, key=lambda j: longest[j])[n:])
        share = spare * longest[i] // rest if rest else spare  # in proportion to their lengths
        widths[i] = max(1, min(longest[i], max(share, min(longest[i], MIN_TEXT), least.get(i, 0))))
        spare -= widths[i]
    return keep, dropped, widths


LABEL_COLUMN = "run"
"""The column that names a table's rows when it has one (else its first column): its labels
stay distinct however narrow the table (``replay.ingest.run_label.short_labels``)."""


def label_index(cols: list[str]) -> int:
    """The index of the column naming the rows: ``LABEL_COLUMN``, else the first."""
    return cols.index(LABEL_COLUMN) if LABEL_COLUMN in cols else 0


def priority(cols: list[str], layout: Layout) -> list[int]:
    """The indexes of ``cols`` in the order they are kept when the table is narrow: the column
    naming the rows (``label_index``), the layout's ``priority`` columns, then the rest left to
    right."""
    first = [label_index(cols)] if cols else []
    named = [cols.index(c) for c in layout.priority if c in cols and cols.index(c) not in first]
    return first + named + [i for i in range(len(cols)) if i not in named and i not in first]


def shorten(text: str, width_chars: int) -> str:
    """``text`` cut to ``width_chars`` characters with an ellipsis."""
    return text if len(text) <= width_chars else text[:max(0, width_chars - 1)] + "…"


def totals_row(rows: list[dict[str, Any]], shown: list[str], layout: Layout) -> dict[str, Any]:
    """The totals row of ``rows`` for the ``shown`` columns (unknown values stay unknown; a
    column without a total, a share or a name, is blank: not ``unknown``, which says a value
    is missing)."""
    out: dict[str, Any] = {}
    for i, col in enumerate(shown):
        how = layout.totals.get(col)
        values = [r.get(col) for r in rows]
        if how and values and all(is_number(v) for v in values):
            # an unknown value (None) leaves the total unknown
            known = [v for v in values if v is not None]
            out[col] = None if len(known) < len(values) else \
                _per_source(rows, col) if how == "per_source" else \
                sum(known) if how == "sum" else max(known)
        else:
            out[col] = f"total ({len(rows):,})" if i == 0 else ""
    return out


def _per_source(rows: list[dict[str, Any]], col: str) -> Any:
    """``col``'s values summed once per ``source`` (``Layout.totals``'s ``per_source``); None
    (unknown) when a row names no source or two rows of one source disagree."""
    by_source: dict[str, Any] = {}
    for r in rows:
        source, v = r.get("source"), r.get(col)
        if not isinstance(source, str) or not source or by_source.get(source, v) != v:
            return None
        by_source[source] = v
    return sum(by_source.values())
