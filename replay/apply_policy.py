"""``run``: replay one policy over a corpus and keep the traces with a per-run roll-up.

The roll-up has one row per run; what a row holds is the caller's ``RunRollup`` (the
analysis layer's ``analysis.per_run.rollup.RUN_ROLLUP``: the run's label, ``metrics()``'s
main columns under the same names, which truth judged them), so this layer computes no
metric.  ``write_run`` stores the traces as Parquet
(``traces/{requests,actions,evictions}.parquet``) next to ``summary.json``,
each written under a temporary name and renamed.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replay.atomic_files import atomic_write_bytes, atomic_write_text, file_in, folder_fd
from replay.corpus import Corpus, iter_replays, source_issues
from replay.engine.trace import TRACE_SCHEMAS, TRACE_VERSION, Trace
from replay.ingest.run_label import run_labels
from replay.memory import release_freed_memory
from replay.policy import Policy, policy_to_dict
from replay.safe_text import strict_json

RunMeta = dict[str, tuple[str, str, str, str, str, int | None]]
"""(label, source, format, harness, model, source issues) of every run, by run id
(``run_meta``)."""


@dataclass(frozen=True, slots=True)
class RunRollup:
    """How the per-run roll-up rows are made (``analysis.per_run.rollup.RUN_ROLLUP``)."""

    schema: pa.Schema
    replayed: Callable[[Trace, Policy, RunMeta], list[dict[str, Any]]]
    """The rows of one run's trace (replayed under the policy)."""
    not_replayed: Callable[[Corpus, Policy, RunMeta], list[dict[str, Any]]]
    """The rows of the corpus's runs with no recorded request (never dropped silently)."""
    notes: Callable[[pa.Table, Corpus], list[str]]
    """What the rows (as a table in ``schema``) of the corpus's runs call for a reader to know,
    one sentence each: stored in ``summary.json`` (``notes``) and printed under the table."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """A policy's traces over a corpus and one roll-up row per run."""

    policy: Policy
    trace: Trace
    rollup: list[dict[str, Any]]
    schema: pa.Schema
    """The roll-up rows' schema."""
    notes: tuple[str, ...] = ()
    """The roll-up's notes (``RunRollup.notes``)."""


def run(corpus: Corpus, policy: Policy, *, rollup: RunRollup, allow_python: bool = False,
        on_run: Callable[[str], None] | None = None) -> RunResult:
    """Replay ``policy`` over every run of ``corpus`` and roll each run up with ``rollup``."""
    meta = run_meta(corpus)
    traces, rows = [], []
    for trace in iter_replays(corpus, policy, allow_python=allow_python, on_run=on_run):
        traces.append(trace)
        rows += rollup.replayed(trace, policy, meta)
    rows += rollup.not_replayed(corpus, policy, meta)
    table = pa.Table.from_pylist(rows, schema=rollup.schema)
    return RunResult(policy, Trace.concat(traces), rows, rollup.schema,
                     tuple(rollup.notes(table, corpus)))


def run_to(corpus: Corpus, policy: Policy, out: Path, *, rollup: RunRollup,
           allow_python: bool = False, on_run: Callable[[str], None] | None = None,
           release_memory: bool = False) -> tuple[pa.Table, list[str]]:
    """Replay ``policy`` over ``corpus`` streaming each run's trace to ``out``; the roll-up
    rows (``rollup``) as a table, and their notes (``RunRollup.notes``, stored in the summary).

    Memory stays bounded by the largest run: traces are appended to Parquet files under
    temporary names as runs finish, and renamed into place (with ``summary.json``) only
    when every run is done, so an interrupted run leaves the previous outputs intact.
    Roll-up rows are kept as columns (~0.3 KB a run, not a dict each).
    ``release_memory``: every few hundred runs, hand the heap's freed pages back to the OS
    (``replay.memory.release_freed_memory``, a process-wide effect: the ``replay`` command asks
    for it, a library call does not do it unasked).
    """
    columns: dict[str, list[Any]] = {c: [] for c in rollup.schema.names}
    meta = run_meta(corpus)
    with contextlib.ExitStack() as files:  # renamed into place only when every run is done
        traces = files.enter_context(folder_fd(out, ("traces",)))
        writers = {n: pq.ParquetWriter(files.enter_context(file_in(
            traces, f"{n}.parquet", shown=out / "traces" / f"{n}.parquet")),
            TRACE_SCHEMAS[n], compression="zstd") for n in TRACE_SCHEMAS}
        try:
            pending: list[Trace] = []
            done: dict[str, list[pa.Table]] = {n: [] for n in TRACE_SCHEMAS}
            n_pending = n_done = 0
            for i, trace in enumerate(iter_replays(corpus, policy, allow_python=allow_python,
                                                    on_run=on_run), 1):
                if release_memory and i % _RUNS_PER_TRIM == 0:
                    release_freed_memory()
                for row in rollup.replayed(trace, policy, meta):
                    for c, values in columns.items():
                        values.append(row[c])
                pending.append(trace)
                n_pending += len(trace.columns("requests")["request"])
                if n_pending >= _ROWS_PER_CHUNK:  # column lists → compact Arrow chunks
                    n_done += _to_arrow(pending, done)
                    pending, n_pending = [], 0
                if n_done >= _ROWS_PER_GROUP:
                    _flush(done, writers)
                    n_done = 0
            _to_arrow(pending, done)
            _flush(done, writers)
        finally:
            for writer in writers.values():
                writer.close()
    for row in rollup.not_replayed(corpus, policy, meta):
        for c, values in columns.items():
            values.append(row[c])
    table = pa.Table.from_pydict(columns, schema=rollup.schema)
    del columns
    notes = rollup.notes(table, corpus)
    _write_rollup(policy, LazyRows(table), out, notes)
    return table, notes


_ROWS_PER_GROUP = 10_000
"""Traces are written in row groups of about this many requests (a few MB of Arrow held)."""
_RUNS_PER_TRIM = 256
"""Runs replayed between two returns of freed heap pages to the OS (``replay.memory``)."""
_ROWS_PER_CHUNK = 5_000
"""Finished traces are kept as Python column lists only up to this many requests, then as Arrow
(one small Arrow table per run would cost ~25 KB each: 3,500 tiny runs per row group)."""


def _to_arrow(traces: list[Trace], done: dict[str, list[pa.Table]]) -> int:
    """Append ``traces`` as one Arrow chunk per table to ``done``; requests added."""
    if not traces:
        return 0
    merged = Trace.concat(traces)
    for name, chunks in done.items():
        chunks.append(merged.table(name))
    added: int = done["requests"][-1].num_rows
    return added


def _flush(done: dict[str, list[pa.Table]], writers: dict[str, pq.ParquetWriter]) -> None:
    """Write the chunks kept so far as one row group per table, and forget them."""
    for name, writer in writers.items():
        chunks = [c for c in done[name] if c.num_rows]
        if chunks:
            writer.write_table(pa.concat_tables(chunks))
        done[name] = []


def run_meta(corpus: Corpus) -> RunMeta:
    """(label, source, format, harness, model, source issues) of every run, by run id
    (``replay.ingest.run_label``; harness and model as recorded; the issues stored for its log
    file, ``replay.corpus.source_issues``)."""
    runs = corpus.runs
    labels = run_labels(runs)
    ids = runs["run_id"].to_pylist()
    return {rid: (labels[rid], src, fmt, harness or "", model or "", issues)
            for rid, src, fmt, harness, model, issues in zip(
                ids, runs["source"].to_pylist(), runs["format"].to_pylist(),
                runs["harness"].to_pylist(), runs["model"].to_pylist(),
                source_issues(corpus, ids))}


def write_run(result: RunResult, out: Path) -> list[Path]:
    """Write the traces and the roll-up under ``out``; returns the files written."""
    written = []
    for name in ("requests", "actions", "evictions"):
        buf = io.BytesIO()
        pq.write_table(getattr(result.trace, name), buf, compression="zstd")
        path = out / "traces" / f"{name}.parquet"
        atomic_write_bytes(path, buf.getvalue(), within=out)
        written.append(path)
    written.append(_write_rollup(result.policy, result.rollup, out, list(result.notes)))
    return written


def _write_rollup(policy: Policy, rows: list[dict[str, Any]], out: Path,
                  notes: list[str]) -> Path:
    doc = {"trace_version": TRACE_VERSION, "policy": policy_to_dict(policy),
           "policy_digest": policy.digest(), "notes": notes, "runs": rows}
    path = out / "summary.json"
    atomic_write_text(path, strict_json(json.JSONEncoder(indent=1, default=str).iterencode(doc)),
                      within=out)
    return path


class LazyRows(list[dict[str, Any]]):
    """A table's rows as dicts, made a batch at a time as they are iterated.

    For ``json.JSONEncoder(indent=…).iterencode``, which encodes any ``list`` by ``len`` and
    iteration: an archive's roll-up is written (same text as ``json.dumps`` of the dicts)
    without ever holding a dict per run.
    """

    _BATCH = 1024

    def __init__(self, table: pa.Table) -> None:
        super().__init__()
        self.table = table

    def __len__(self) -> int:
        n_rows: int = self.table.num_rows
        return n_rows

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self.table.to_batches(max_chunksize=self._BATCH):
            yield from batch.to_pylist()


def rollup_table(result: RunResult) -> pa.Table:
    """A run's roll-up rows as an Arrow table (its ``schema``)."""
    names = result.schema.names
    return pa.Table.from_pylist([{c: r[c] for c in names} for r in result.rollup],
                                schema=result.schema)
