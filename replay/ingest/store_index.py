"""The store's run rows: ``runs`` of a whole store and the run index that makes reading them cheap.

``DIR/index.parquet`` holds every entry's ``runs`` rows plus each run's token totals
(``tokens_o200k``, ``tokens_cl100k``; unknown for a tokenizer its entry was not counted with)
and its requests that recorded no usage (``n_requests_unrecorded``), keyed by entry key.  It
is a cache: readers fall back to the entries' own files for any entry
it does not hold (or when it is missing, of another schema, or not the file whose sha256 the
manifest records: ``index_sha256``), and every ingest rewrites it
(``IndexRows`` gathers the rows its workers send back, ``write_index`` writes them).

Not here: entries and the manifest (``replay.ingest.store``); the runs as ``replay runs`` lists
them (``replay.ingest.run_listing``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from replay.atomic_files import atomic_write_bytes
from replay.errors import StoreError
from replay.ingest.arrow_columns import column
from replay.ingest.arrow_read import int64_total
from replay.ingest.entry_file import PARQUET_OPTIONS
from replay.ingest.ipc_stream import ipc_stream
from replay.ingest.names import TOKEN_COLUMN
from replay.ingest.schema import RUN_INDEX, SCHEMAS, unrecorded
from replay.ingest.source_name import named_by_manifest
from replay.ingest.store import (
    Entry,
    RunTables,
    entry_file,
    manifest_index_sha256,
    read_entry_runs,
    read_manifest,
    require_store,
)

INDEX_FILE = "index.parquet"


def runs(root: Path, *, keep_stored: bool = False) -> pa.Table:
    """The ``runs`` rows of a store plus each run's token totals and
    ``n_requests_unrecorded`` (``replay runs``; ``keep_stored``: ``read_runs``)."""
    require_store(root)
    return read_runs(root, list(read_manifest(root).values()), with_tokens=True,
                     keep_stored=keep_stored)


_MERGE_EVERY = 256
"""Pieces read between merges of run rows (see ``read_runs``)."""


def read_runs(root: Path, entries: list[Entry], *, with_tokens: bool = False,
              keep_stored: bool = False) -> pa.Table:
    """The ``runs`` rows of ``entries`` as one table, in entry order, each run's ``source`` its
    entry's manifest name (``source_name.named_by_manifest``; ``keep_stored``: the names
    stored as ``stored_source``); message texts are never loaded.  ``with_tokens`` adds each
    run's token totals (``tokens_o200k``, ``tokens_cl100k``) and ``n_requests_unrecorded``.

    Rows come from the run index (one file for the whole store) for every entry it holds, and
    from the entry's own files for the rest (a store written before the index existed, or an
    index lost).  Each small file read holds its own schema and buffers (~25 KB for a one-run
    entry), so such rows are merged into contiguous arrays every few hundred entries.
    """
    index = read_index(root)
    spans = _key_spans(index) if index is not None else {}
    names = RUN_INDEX.names[:-1] if with_tokens else SCHEMAS["runs"].names
    pieces = _Pieces(lambda t: _shaped(t, names))
    for entry in entries:
        span = spans.get(entry.key)
        if span is not None and span[1] - span[0] == entry.n_runs:
            pieces.add_rows(index, *span)
        else:
            pieces.add(_entry_runs(root, entry, with_tokens))
    return named_by_manifest(pieces.table(RUN_INDEX), entries, root, keep_stored=keep_stored)


class _Pieces:
    """Tables to concatenate in order: whole tables, or rows of a bigger one (kept as slices,
    touching row ranges joined).  Merged into contiguous arrays every few hundred pieces, as each
    small table or slice holds its own schema and buffers (~25 KB for a one-run file).  No
    Python values are converted, so pyarrow never loads pandas here (~40 MB)."""

    def __init__(self, shape: Callable[[pa.Table], pa.Table]) -> None:
        self.shape = shape
        self.tables: list[pa.Table] = []
        self._rows: tuple[pa.Table, int, int] | None = None

    def add_rows(self, source: pa.Table, start: int, stop: int) -> None:
        """Rows ``[start, stop)`` of ``source``."""
        if self._rows is not None and self._rows[0] is source and self._rows[2] == start:
            self._rows = (source, self._rows[1], stop)
            return
        self._close()
        self._rows = (source, start, stop)

    def add(self, table: pa.Table) -> None:
        """A whole table."""
        self._close()
        self._append(table)

    def table(self, schema: pa.Schema) -> pa.Table:
        """Everything added, as one table (no rows of ``schema`` when nothing was)."""
        self._close()
        if not self.tables:  # not schema.empty_table(): that loads pandas
            return self.shape(pa.Table.from_batches([], schema=schema))
        return pa.concat_tables(self.tables).combine_chunks()

    def _close(self) -> None:
        if self._rows is not None:
            source, start, stop = self._rows
            self._rows = None
            self._append(source.slice(start, stop - start))

    def _append(self, table: pa.Table) -> None:
        self.tables.append(self.shape(table))
        if len(self.tables) >= _MERGE_EVERY:
            self.tables = [pa.concat_tables(self.tables).combine_chunks()]


def _shaped(table: pa.Table, names: list[str]) -> pa.Table:
    return table.select(names).replace_schema_metadata(SCHEMAS["runs"].metadata)


def _entry_runs(root: Path, entry: Entry, with_tokens: bool) -> pa.Table:
    """One entry's run rows read from its own file (with token totals and requests without
    usage if asked)."""
    table, tokens, requests = read_entry_runs(root, entry.key)
    if with_tokens:
        table = _with_counts(table, tokens, requests)
    if table.num_rows != entry.n_runs:
        raise StoreError(f"{entry_file(root, entry.key)}: {table.num_rows} runs stored, the "
                         f"manifest says {entry.n_runs}; re-ingest")
    return table


_INDEX_FIELDS: dict[str, pa.Field] = {f.name: f for f in RUN_INDEX}
"""The run index's fields by name, read once (``RUN_INDEX.field(name)`` makes a Field each
call: ~20 K instructions a file's rows)."""
_INDEX_SLICE_ROWS = 1 << 16
"""Message rows summed at a time for the run index (``_with_tokens``)."""


def _with_tokens(runs_table: pa.Table, messages: pa.Table | None) -> pa.Table:
    """``runs_table`` with each run's token total by each tokenizer (``names.TOKEN_COLUMN``,
    in its order): ``_token_totals``."""
    for col, totals in zip(TOKEN_COLUMN.values(), _token_totals(runs_table, messages)):
        runs_table = runs_table.append_column(_INDEX_FIELDS[col], column(totals, pa.int64()))
    return runs_table


def _token_totals(runs_table: pa.Table, messages: pa.Table | None) -> list[list[int | None]]:
    """Each run's token total by each tokenizer (``names.TOKEN_COLUMN``, in its order): the sum
    of its messages' counts; null, unknown, not 0, for every run of an entry its ingest did not
    count with that tokenizer (``--tokenizers``: the messages' column all null)."""
    n_runs, run_ids = runs_table.num_rows, None
    out = []
    for col in TOKEN_COLUMN.values():
        counts = messages.column(col) if messages is not None else None
        if counts is not None and len(counts) and counts.null_count == len(counts):
            totals: list[int | None] = [None] * n_runs
        elif counts is not None and n_runs == 1:  # (every row is the run's: no ids read)
            totals = [int64_total(counts)]
        else:
            total = _run_totals(messages, col) if messages is not None else {}
            run_ids = run_ids or runs_table["run_id"].to_pylist()
            totals = [total.get(r, 0) for r in run_ids]
        out.append(totals)
    return out


def _run_totals(messages: pa.Table, col: str) -> dict[str, int]:
    """Run id → the sum of its messages' ``col`` (a null counting 0).  A plain loop: a file's
    few thousand rows cost less than an Acero group_by's set-up (0.5 ms a file); a slice of
    rows at a time (a big file's rows as Python values at once: ~100 bytes a row beside its
    tables)."""
    total: dict[str, int] = {}
    for part in messages.to_batches(max_chunksize=_INDEX_SLICE_ROWS):
        for run_id, n in zip(part.column("run_id").to_pylist(), part.column(col).to_pylist()):
            if n is not None:
                total[run_id] = total.get(run_id, 0) + n
    return total


def _with_counts(runs_table: pa.Table, messages: pa.Table | None,
                 requests: pa.Table) -> pa.Table:
    """``runs_table`` with the run index's columns: each run's token totals
    (``_with_tokens``) and its requests that recorded no usage (``_unrecorded``)."""
    return _with_tokens(runs_table, messages).append_column(
        _INDEX_FIELDS["n_requests_unrecorded"],
        column(_unrecorded(runs_table, requests), pa.int64()))


def _unrecorded(runs_table: pa.Table, requests: pa.Table) -> list[int]:
    """Each run's requests that recorded no usage (``schema.unrecorded``; a file's requests are
    few: plain loops, and no run ids made for a one-run file)."""
    inputs = requests.column("input_tokens").to_pylist()
    if runs_table.num_rows == 1:
        return [unrecorded(inputs)]
    by_run: dict[str, list[int | None]] = {}
    for run_id, n in zip(requests.column("run_id").to_pylist(), inputs):
        by_run.setdefault(run_id, []).append(n)
    return [unrecorded(by_run.get(r, ())) for r in runs_table["run_id"].to_pylist()]


# -- the run index -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RunRows:
    """One entry's rows of the run index not made a table yet (``index_rows(stream=False)``):
    its runs table and the values of the columns the index adds to it, one a run.
    ``IndexRows`` makes the rows of many entries one table at once: the index's four columns
    are appended once for them all, not once an entry (each append makes a table and its
    schema: ~150,000 instructions a small file)."""

    runs: pa.Table
    tokens: tuple[list[int | None], ...]
    """Each run's token total by each tokenizer (``names.TOKEN_COLUMN``, in its order)."""
    unrecorded: list[int]
    """Each run's requests that recorded no usage."""
    key: str

    def __len__(self) -> int:
        n: int = self.runs.num_rows
        return n

    def stream(self) -> bytes:
        """These rows as an Arrow IPC stream (what an ingest worker sends back)."""
        return ipc_stream(_index_table([self]), RUN_INDEX)


def index_rows(tables: RunTables, key: str, *, stream: bool = True) -> bytes | RunRows:
    """One entry's rows of the run index: as an Arrow IPC stream (what an ingest worker sends
    back with each file it wrote), or with ``stream=False`` as ``RunRows`` (an ingest in one
    process: no stream written only to be read back, no table made an entry); ``IndexRows``
    gathers either."""
    runs_table = tables.runs
    messages = tables.messages if runs_table.num_rows == 1 else \
        tables.messages.select(["run_id", *TOKEN_COLUMN.values()])  # (summed a slice at a
    # time: ``_run_totals``)
    rows = RunRows(runs_table, tuple(_token_totals(runs_table, messages)),
                   _unrecorded(runs_table, tables.requests), key)
    return rows.stream() if stream else rows


def _index_table(rows: list[RunRows]) -> pa.Table:
    """The run index's rows of ``rows``, in order: their runs tables with the index's columns
    (the table ``_keyed(_with_counts(...))`` makes of one entry's)."""
    table = rows[0].runs if len(rows) == 1 else pa.concat_tables([r.runs for r in rows])
    for i, col in enumerate(TOKEN_COLUMN.values()):
        table = table.append_column(_INDEX_FIELDS[col], column(
            list(chain.from_iterable(r.tokens[i] for r in rows)), pa.int64()))
    table = table.append_column(_INDEX_FIELDS["n_requests_unrecorded"], column(
        list(chain.from_iterable(r.unrecorded for r in rows)), pa.int64()))
    keys = [r.key for r in rows for _ in range(len(r))]
    return table.append_column(_INDEX_FIELDS["entry_key"], column(keys, pa.string())
                               ).replace_schema_metadata(RUN_INDEX.metadata)


def _keyed(runs_with_tokens: pa.Table, key: str) -> pa.Table:
    return runs_with_tokens.append_column(_INDEX_FIELDS["entry_key"], column(
        [key] * runs_with_tokens.num_rows, pa.string())).replace_schema_metadata(RUN_INDEX.metadata)


def read_index(root: Path) -> pa.Table | None:
    """The store's run index, or None when it is missing, not of this schema or not the file
    the manifest records (``index_sha256``: an index edited, truncated or copied in by hand, or
    written by an ingest stopped before its manifest); readers then use the entries' own files:
    the index is a cache, rebuilt by every ingest."""
    found = _checked_index(root)
    return found[0] if found is not None else None


def _checked_index(root: Path) -> tuple[pa.Table, str] | None:
    """(the run index, its sha256) when it is the file the manifest records, else None."""
    expected = manifest_index_sha256(root)
    if not expected:
        return None
    try:
        data = _regular_file_bytes(root / INDEX_FILE)
        if data is None or hashlib.sha256(data).hexdigest() != expected:
            return None
        table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
    except (OSError, pa.ArrowInvalid):
        return None
    if not table.schema.equals(RUN_INDEX, check_metadata=True):
        return None
    return table, expected


class IndexRows:
    """Run-index rows gathered while an ingest runs (``index_rows`` of each entry written),
    merged into contiguous Arrow every few hundred entries: a few hundred bytes a run."""

    def __init__(self) -> None:
        self._pieces = _Pieces(lambda t: t)
        self._waiting: list[RunRows] = []
        """``RunRows`` added since the last table was made of them (at most ``_MERGE_EVERY``)."""

    def add(self, rows: bytes | RunRows) -> None:
        """One entry's rows, as ``index_rows`` made them (a stream, or ``RunRows``)."""
        if isinstance(rows, RunRows):
            self._waiting.append(rows)
            if len(self._waiting) >= _MERGE_EVERY:
                self._made()
            return
        self._made()  # (the rows in the order added)
        self._pieces.add(pa.ipc.open_stream(rows).read_all())

    def _made(self) -> None:
        """The waiting ``RunRows`` made one table, after the pieces before them."""
        if self._waiting:
            self._pieces.add(_index_table(self._waiting))
            self._waiting = []

    def table(self) -> pa.Table:
        """Every row added, in order, as one table."""
        self._made()
        return self._pieces.table(RUN_INDEX)


def _regular_file_bytes(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (None for a symlink, a FIFO, a device)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        return f.read() if stat.S_ISREG(os.fstat(fd).st_mode) else None


def write_index(root: Path, entries: Iterable[Entry], fresh: pa.Table | None = None) -> str:
    """Rewrite the run index for ``entries``: the rows of ``fresh`` (``IndexRows.table``) for
    entries written just now, the old index's rows for the others (when it is the file the
    manifest records), their own files as a last resort (an entry that cannot be read is left
    out; readers then report it).  Returns the index's sha256, for the manifest written next
    (``replay.ingest.store.write_manifest``).
    """
    entries = list(entries)
    checked = _checked_index(root)
    old = checked[0] if checked is not None else None
    sources = [(t, _key_spans(t)) for t in (fresh, old) if t is not None and t.num_rows]
    if (fresh is None or not fresh.num_rows) and checked is not None \
            and list(_key_spans(checked[0])) == [e.key for e in entries]:
        return checked[1]  # nothing changed
    pieces = _Pieces(lambda t: t)
    for entry in entries:
        found = next(((t, sp[entry.key]) for t, sp in sources if entry.key in sp), None)
        if found is not None:
            pieces.add_rows(found[0], *found[1])
            continue
        try:
            pieces.add(_keyed(_entry_runs(root, entry, with_tokens=True), entry.key))
        except StoreError:
            continue
    table = pieces.table(RUN_INDEX)
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, **PARQUET_OPTIONS)
    data = buf.getvalue().to_pybytes()
    atomic_write_bytes(root / INDEX_FILE, data, within=root)
    return hashlib.sha256(data).hexdigest()


def stored_tokens(root: Path, entries: Iterable[Entry], token_column: str) -> int | None:
    """The tokens (``token_column`` of their messages, ``tokens_o200k`` or ``tokens_cl100k``,
    a null counting 0) of entries in the store, from the run index (an entry's own file for one
    it does not hold); None when an entry cannot be read."""
    entries = list(entries)
    try:
        index = read_index(root)
        spans = _key_spans(index) if index is not None else {}
        total = 0
        for e in entries:
            if index is not None and e.key in spans:
                start, stop = spans[e.key]
                total += int64_total(index[token_column][start:stop])
            else:
                total += int64_total(_entry_runs(root, e, with_tokens=True)[token_column])
        return total
    except StoreError:
        return None


def _key_spans(index: pa.Table) -> dict[str, tuple[int, int]]:
    """entry key → its rows ``[start, stop)`` in the index (an entry's rows are contiguous)."""
    return row_spans(index["entry_key"].to_pylist())


def row_spans(ids: list[str]) -> dict[str, tuple[int, int]]:
    """id → its rows ``[start, stop)`` in a column where each id's rows are contiguous (run ids
    in an entry's tables, entry keys in the index)."""
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[start]:
            spans[ids[start]] = (start, i)
            start = i
    return spans
