"""Tables that fit the terminal: the columns that matter, numbers never split, a totals row.

``Layout`` is how a command wants its table shown: the default columns (the few that matter),
the columns a totals row adds up (``sum`` or ``max``).  ``fit`` decides what is printed for a
terminal ``width`` (``COLUMNS``, else the terminal's, else ``PIPED_WIDTH``): the chosen columns
in order while they fit — numbers at full width, never wrapped, text shortened with an ellipsis
down to ``MIN_TEXT`` characters (each text column whole up to ``WANT_TEXT`` when the room allows,
so a long run label does not cut a short note) — and the names of the columns left out, which the caller says
(``--columns`` picks others, ``--wide`` shows every column at any width, ``--csv`` and
``--json`` print every column as data).

Not here: escaping and printing (``replay.cli.output``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

PIPED_WIDTH = 120
"""Width of a table written to a pipe or file when ``COLUMNS`` is not set."""
MIN_TEXT = 12
"""A text column is shortened to no fewer characters than this (with an ellipsis)."""
WANT_TEXT = 24
"""Room a text column (a source path, a metric name) keeps before later columns are left out."""
_BORDER = 3
"""Characters a rich table adds per column (separator and padding)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """How a command's table is shown by default."""

    columns: tuple[str, ...] = ()
    """The default columns, in order (empty: every column)."""
    totals: dict[str, str] = field(default_factory=dict)
    """Column → ``sum`` or ``max`` for a totals row (empty: no totals row)."""


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

    Raises:
        ValueError: ``--columns`` names a column the table does not have (with the list).
    """
    if columns:
        unknown = [c for c in columns if c not in available]
        if unknown:
            raise ValueError(f"--columns: no column {', '.join(unknown)}; the table has "
                             f"{', '.join(available)}")
        return list(columns)
    if wide or not layout.columns:
        return list(available)
    return [c for c in layout.columns if c in available]


def fit(header: list[str], cells: list[list[str]], numeric: list[bool],
        width_chars: int) -> tuple[list[int], list[str], dict[int, int]]:
    """(the indexes of the columns that fit in ``width_chars``, the names left out, the width
    each kept text column gets: what is left after the numbers, shared by the text columns)."""
    longest = [max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(header)]
    used = 1
    keep: list[int] = []
    dropped: list[str] = []
    for i, name in enumerate(header):
        need = longest[i] if numeric[i] else min(longest[i], max(WANT_TEXT, len(name)))
        if used + need + _BORDER <= width_chars or not keep:
            keep.append(i)
            used += need + _BORDER
        else:
            dropped.append(name)
    text = [i for i in keep if not numeric[i]]
    spare = width_chars - 1 - sum(_BORDER + (longest[i] if numeric[i] else 0) for i in keep)
    widths: dict[int, int] = {}
    base = {i: min(longest[i], WANT_TEXT) for i in text}  # a short text column shown whole
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
        widths[i] = max(1, min(longest[i], max(share, min(longest[i], MIN_TEXT))))
        spare -= widths[i]
    return keep, dropped, widths


def shorten(text: str, width_chars: int) -> str:
    """``text`` cut to ``width_chars`` characters with an ellipsis."""
    return text if len(text) <= width_chars else text[:max(0, width_chars - 1)] + "…"


def totals_row(rows: list[dict[str, Any]], shown: list[str], layout: Layout) -> dict[str, Any]:
    """The totals row of ``rows`` for the ``shown`` columns (unknown values stay unknown)."""
    out: dict[str, Any] = {}
    for i, col in enumerate(shown):
        how = layout.totals.get(col)
        values = [r.get(col) for r in rows]
        if how and values and all(is_number(v) for v in values):
            # an unknown value (None) leaves the total unknown
            known = [v for v in values if v is not None]
            out[col] = None if len(known) < len(values) else \
                sum(known) if how == "sum" else max(known)
        else:
            out[col] = f"total ({len(rows):,})" if i == 0 else None
    return out
