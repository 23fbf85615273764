"""A run's source as every command names it: the manifest's name of the entry holding it.

A run's row stores the ``source`` its file was called when parsed.  The manifest may name that
file otherwise: an entry renamed by hand.  Every command that reads a dataset names a run by
its entry's manifest name (what ``replay ingest`` keys the file by, what ``replay run``'s
errors and ``replay runs``' coverage and entry state are told by), so its label, its key
(``replay.ingest.run_label``), ``--run`` and the ``source`` of every table agree.
``named_by_manifest`` does it where run rows are read (``store_index.read_runs``); with
``keep_stored`` the stored names stay beside them as ``stored_source`` (``replay runs`` shows
them when some differ: ``renamed_note``).

Names come from files: printed through ``replay.cli.output.printable``, never trusted.

Not here: reading the rows (``replay.ingest.store_index``), labels (``replay.ingest.run_label``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from replay.errors import StoreError
from replay.ingest.store import Entry

STORED_SOURCE = "stored_source"
"""The column of the names runs were parsed under (``named_by_manifest(keep_stored=True)``)."""
_NAMED = 5
"""Renamed files named at most in ``renamed_note``."""


def named_by_manifest(runs: pa.Table, entries: Sequence[Entry], root: object,
                      *, keep_stored: bool = False) -> pa.Table:
    """``runs`` (the rows of ``entries``, ``n_runs`` each, in their order) with each row's
    ``source`` its entry's manifest name; with ``keep_stored``, the stored names appended as
    ``STORED_SOURCE``.  ``runs`` itself when every name is the stored one (and not
    ``keep_stored``).

    Raises:
        StoreError: the rows are not the entries' (the manifest replaced as ``root`` was read).
    """
    if sum(e.n_runs for e in entries) != runs.num_rows:
        raise StoreError(f"{root}: the dataset changed while it was read; list it again")
    at = runs.schema.get_field_index("source")
    stored = runs.column(at)
    names = pa.array([e.source for e in entries for _ in range(e.n_runs)], stored.type)
    if not stored.equals(pa.chunked_array([names], stored.type)):
        runs = runs.set_column(at, runs.schema.field(at), names)
    if keep_stored:
        runs = runs.append_column(pa.field(STORED_SOURCE, stored.type), stored)
    return runs


def renamed_note(listing: pa.Table) -> str | None:
    """The sentence under ``replay runs`` when some runs' manifest name (``listing``'s
    ``source``) is not the name they were parsed under (its ``stored_source``, there only then):
    how many runs and files, a few of them as ``stored → name``, and where the stored names
    are; None when none differ."""
    if STORED_SOURCE not in listing.column_names:
        return None
    sources, stored = listing["source"].to_pylist(), listing[STORED_SOURCE].to_pylist()
    renamed = dict.fromkeys((s, n) for n, s in zip(sources, stored) if n != s)
    if not renamed:
        return None
    n_runs = sum(1 for n, s in zip(sources, stored) if n != s)
    named = "; ".join(f"{s} → {n}" for s, n in list(renamed)[:_NAMED])
    more = f"; and {len(renamed) - _NAMED} more" if len(renamed) > _NAMED else ""
    return (f"{n_runs:,} run(s) of {len(renamed):,} file(s) are listed by the manifest's name of "
            f"their file, not the name they were parsed under ({named}{more}; the manifest "
            f"edited by hand): every command names them so; {STORED_SOURCE} (--wide, --json) "
            "holds the parsed names")
