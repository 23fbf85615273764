"""The runs of a dataset as ``replay runs`` lists them: the run index's rows (``store_index.runs``)
with each run's label, its parent by run key, its file's coverage line and stored issues,
whether its entry's file is there and is the file written (``entry_state.entry_state``), and the
notes under the table (runs ingested without o200k_base, requests that recorded no usage,
entries missing or cut).

Not here: the run index itself (``replay.ingest.store_index``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from replay.errors import StoreError
from replay.ingest.entry_state import ENTRY_OK, entry_state
from replay.ingest.run_label import label_column, run_key
from replay.ingest.source_name import STORED_SOURCE
from replay.ingest.store import coverage_lines, read_manifest
from replay.ingest.store_index import runs

LISTED_COLUMNS: dict[str, str] = {
    "run_id": "run_id", "run": "run", "source": "source", "format": "format", "model": "model",
    "n_requests": "requests", "n_tool_calls": "tool_calls", "n_messages": "messages",
    "tokens_o200k": "tokens", "tokens_cl100k": "tokens_cl100k",
    "recorded_input_tokens": "recorded_input_tokens",
    "n_requests_unrecorded": "unrecorded_requests", "n_harness_compactions": "compactions", "parent_run_id": "parent",
    "n_estimated_blocks": "estimated_blocks", "estimated_tokens_o200k": "estimated_tokens"}
"""Index column → its name in ``run_listing`` (which adds ``coverage``, ``source_issues_n`` and
``entry`` at the end, and ``stored_source`` after ``source`` when some run's differs)."""

def run_listing(root: Path) -> pa.Table:
    """The runs of a dataset as ``replay runs`` lists them: the index's columns renamed
    (``LISTED_COLUMNS``), ``source`` the manifest's name of each run's file and, only when
    some differ, the names the runs were parsed under (``stored_source``:
    ``replay.ingest.source_name``), each run's label (``run``, ``replay.ingest.run_label``), its parent by run key
    rather than id, its file's coverage line (``replay.ingest.store.coverage_lines``), the
    issues stored for its file (``source_issues_n``: a record skipped, usage dropped; 0 when
    none), and its entry's ``entry_state.entry_state`` (``entry``).
    ``recorded_input_tokens`` sums the requests that recorded usage, ``unrecorded_requests``
    counts the others; a run none of whose requests recorded usage has an unknown (null)
    ``recorded_input_tokens``, not 0.

    Raises:
        StoreError: ``root`` is not a readable dataset.
    """
    table = runs(root, keep_stored=True)
    coverage = coverage_lines(root)
    manifest = read_manifest(root)
    # each entry's rows, in manifest order (as ``runs`` reads them), get its state and coverage
    # by the entry, never by the runs' own ``source``: the manifest's name of a log may differ
    # from it (edited by hand), and the entry is no less there and replayed for that
    states = [entry_state(root, e.key, e.checksum) for e in manifest.values()]
    lines = [coverage.get(s, "(not counted by its parser)") for s in manifest]
    counts = [e.n_runs for e in manifest.values()]
    if sum(counts) != table.num_rows:  # (the manifest replaced after ``runs`` read it)
        raise StoreError(f"{root}: the dataset changed while it was read; list it again")
    stored = table[STORED_SOURCE]
    keys = {rid: run_key(rid, src) for rid, src in zip(table["run_id"].to_pylist(),
                                                         table["source"].to_pylist())}
    table = table.append_column("run", pa.array(label_column(table), pa.string()))
    none_recorded = pc.equal(table["n_requests"], table["n_requests_unrecorded"])
    table = table.set_column(
        table.schema.get_field_index("recorded_input_tokens"), "recorded_input_tokens",
        pc.if_else(none_recorded, pa.scalar(None, pa.int64()), table["recorded_input_tokens"]))
    table = table.set_column(table.schema.get_field_index("parent_run_id"), "parent_run_id",
                             pa.array([keys.get(p, p) for p in
                                       table["parent_run_id"].to_pylist()], pa.string()))
    table = table.select(list(LISTED_COLUMNS)).rename_columns(list(LISTED_COLUMNS.values()))
    if not stored.equals(table["source"]):  # some entry renamed: both names, side by side
        table = table.add_column(table.schema.get_field_index("source") + 1, STORED_SOURCE,
                                 stored)
    table = table.append_column("coverage", pa.array(
        [line for line, n in zip(lines, counts) for _ in range(n)], pa.string()))
    table = table.append_column("source_issues_n", pa.array(
        [len(e.issues) for e in manifest.values() for _ in range(e.n_runs)], pa.int64()))
    return table.append_column("entry", pa.array(
        [state for state, n in zip(states, counts) for _ in range(n)], pa.string()))


def entries_note(listing: pa.Table) -> str | None:
    """The sentence under ``replay runs`` when some runs' entries are not there or cut
    (``listing``: ``run_listing``'s): how many runs, their files and what is wrong with each
    (at most 5 named), and that a replay of them fails until `replay ingest` of their logs
    writes them again; None when every entry is there."""
    bad: dict[str, str] = {}
    runs_bad = 0
    for source, state in zip(listing["source"].to_pylist(), listing["entry"].to_pylist()):
        if state != ENTRY_OK:
            bad.setdefault(source, state)
            runs_bad += 1
    if not bad:
        return None
    named = "; ".join(f"{s}: {why}" for s, why in list(bad.items())[:5])
    more = f"; and {len(bad) - 5} more (--json: entry)" if len(bad) > 5 else ""
    return (f"{runs_bad:,} of {len(listing):,} run(s) are listed from the run index, but the "
            f"entries of {len(bad):,} file(s) holding them are not readable ({named}{more}): "
            "a replay of them fails until `replay ingest` of their logs writes them again")


def tokens_note(listing: pa.Table) -> str | None:
    """The sentence under ``replay runs`` when some runs' ``tokens`` (o200k_base) is unknown
    (``listing``: ``run_listing``'s): their entries were ingested without o200k_base
    (``--tokenizers``), and the tokenizer they were counted with, if any; None when every run
    was counted with o200k_base."""
    o200k = listing["tokens"].to_pylist()
    unknown = [i for i, v in enumerate(o200k) if v is None]
    if not unknown:
        return None
    cl100k = listing["tokens_cl100k"].to_pylist()
    counted = sum(1 for i in unknown if cl100k[i] is not None)
    how = f"{counted} of them counted with cl100k_base: tokens_cl100k" if counted else \
        "none counted with another tokenizer"
    return (f"{len(unknown):,} of {len(o200k):,} run(s) were ingested without o200k_base "
            f"(--tokenizers): their tokens (o200k_base) is unknown ({how})")


def unrecorded_note(listing: pa.Table) -> str | None:
    """The sentence under ``replay runs`` when some requests recorded no usage (``listing``:
    ``run_listing``'s): how many, in how many runs, and that those runs' recorded input sums
    only the others (or is unknown); None when every request recorded usage."""
    counts = listing["unrecorded_requests"].to_pylist()
    n = sum(counts)
    if not n:
        return None
    none = sum(1 for r, u in zip(listing["requests"].to_pylist(), counts) if u and r == u)
    some = sum(1 for u in counts if u) - none
    how = [f"{some} run(s) recorded some: their recorded_input_tokens sums only the requests "
           "that did" if some else "",
           f"{none} run(s) recorded none: their recorded_input_tokens is unknown" if none else ""]
    return (f"{n:,} of {sum(listing['requests'].to_pylist()):,} requests in "
            f"{some + none} run(s) recorded no usage ({'; '.join(h for h in how if h)}); "
            "unrecorded_requests counts them by run (--wide, --json)")
