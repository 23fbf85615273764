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
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from replay.atomic_files import atomic_write_bytes, atomic_write_text, file_in, folder_fd
from replay.corpus import Corpus, iter_replays, source_issues
from replay.engine.trace import TRACE_SCHEMAS, TRACE_VERSION, Trace
from replay.errors import ConfigError, PolicyError, RunFolderError
from replay.ingest.input_files import (
    DOCUMENT_LIMIT,
    TooBig,
    Unreadable,
    max_document_bytes,
    read_input,
)
from replay.ingest.run_label import run_labels
from replay.memory import release_freed_memory
from replay.policy import Policy, policy_from_dict, policy_to_dict
from replay.policy.check import MAX_INT
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


def read_summary(out: Path) -> dict[str, Any]:
    """The ``summary.json`` a ``write_run`` stored under ``out``, checked as any input: a
    regular file within the document bound, JSON, a mapping written by this engine
    (``trace_version``) holding the policy (a mapping; ``policy_from_dict`` checks its keys).

    Raises:
        RunFolderError: any of these is not so (one line naming the file).
        ConfigError: it is over ``CTXREPLAY_MAX_DOCUMENT_BYTES`` (a limit set too low).
    """
    path = out / "summary.json"
    try:  # (a symlink is not followed: planted, it would name another folder's summary)
        doc = json.loads(read_input(path, max_document_bytes(), follow=False,
                                    limit=DOCUMENT_LIMIT))
    except TooBig as why:  # the limit is set too low, nothing is wrong with the folder: exit 2
        raise ConfigError(str(path), "", f"a `replay run` summary: {why}") from None
    except Unreadable as why:
        raise RunFolderError(f"{path}: not a `replay run` summary: {why}") from None
    except (ValueError, RecursionError) as exc:  # not JSON or UTF-8, an int's digits, nesting
        raise RunFolderError(f"{path}: not a `replay run` summary (not JSON: "
                               f"{str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("policy"), dict):
        raise RunFolderError(f"{path}: not a `replay run` summary (no policy mapping)")
    _same_engine(path, doc.get("trace_version"))
    return doc


def read_trace(out: Path) -> Trace:
    """The traces a ``write_run`` stored under ``out``, each file checked: a regular Parquet
    file this engine wrote (``trace_version`` in its schema's metadata) with the columns and
    types of ``TRACE_SCHEMAS``.

    Raises:
        RunFolderError: a file is missing, not Parquet, from another engine or of another
            schema (one line naming it).
    """
    tables = []
    for name, schema in TRACE_SCHEMAS.items():
        path = out / "traces" / f"{name}.parquet"
        try:
            if why := not_a_plain_file(path):
                raise RunFolderError(f"{path}: not a `replay run` trace ({why})")
            # from bytes in memory: a ParquetFile on a path (or a file object or a memory map)
            # starts Arrow's I/O thread, which a process exiting with it alive can abort in
            # (tests/replay/cli/test_native_threads.py)
            with pq.ParquetFile(pa.BufferReader(read_input(path))) as f:
                meta = f.schema_arrow.metadata or {}
                _same_engine(path, meta.get(b"trace_version", b"").decode("utf-8", "replace"))
                if not f.schema_arrow.remove_metadata().equals(schema.remove_metadata()):
                    raise RunFolderError(f"{path}: not a `replay run` trace (its columns "
                                           f"are not the {name} table's)")
                tables.append(f.read(use_threads=False))
        except (OSError, Unreadable, pa.ArrowException) as exc:
            raise RunFolderError(f"{path}: not a `replay run` trace "
                                   f"({str(exc).splitlines()[0]})") from None
        if why := _values_wrong(name, tables[-1]):
            raise RunFolderError(f"{path}: not a `replay run` trace ({why})")
    return Trace(*tables)


def not_a_plain_file(path: Path) -> str:
    """Why ``path`` is not a regular file a command may read as a trace ('' when it is):
    missing, a symlink (not followed: planted, it reads another folder's file), or something
    else (a folder, a FIFO)."""
    if path.is_symlink():
        return "a symlink, not followed"
    if not os.path.lexists(path):
        return "missing; `replay run` writes it"
    return "" if path.is_file() else "not a plain file"


_SIGNED = {"reclaimed_tokens", "reclaimed_est_tokens"}
"""Trace columns a replay writes negative (an induced re-read grows the context)."""


def _values_wrong(name: str, table: pa.Table) -> str:
    """What in a trace table's values no replay writes ('' when nothing): a number that is not
    finite, beyond 2^53, or negative in a requests column; columns summing beyond 2^62 (a
    crafted 2^62 in truth_tokens ended diff/report in an OverflowError traceback, NaN or
    negative costs and sizes were taken as figures); request numbers that are not 0, 1, … in
    each run's rows."""
    for field in table.schema:
        if not (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)):
            continue
        col = table[field.name].drop_null()
        if not len(col):
            continue
        values = col.to_numpy().astype("float64")
        if not np.isfinite(values).all():
            return f"{field.name}: a value that is not a finite number"
        low, high = float(values.min()), float(values.max())
        if max(-low, high) > MAX_INT or float(np.abs(values).sum()) > 2.0**62:
            return f"{field.name}: values beyond what a replay writes"
        if low < 0 and (name == "requests" or field.name not in _SIGNED):
            return f"{field.name}: a negative value"
    if name == "requests" and table.num_rows:
        runs = table["run_id"].to_numpy(zero_copy_only=False)
        request = table["request"].to_numpy()
        starts = np.flatnonzero(np.concatenate(([True], runs[1:] != runs[:-1])))
        first = np.repeat(starts, np.diff(np.append(starts, len(runs))))
        if not np.array_equal(request, np.arange(len(runs)) - first):
            return "request numbers not 0, 1, … in each run's rows"
    return ""


def read_run(out: Path) -> tuple[Policy, Trace]:
    """The policy and traces a ``write_run`` (or ``run_to``) stored under ``out``: each file
    checked as an input (``read_summary``, ``read_trace``), and the two checked against each
    other (``_summary_matches``): a summary edited, or copied beside another run's traces,
    would have its traces judged under a policy they were not replayed with.

    Raises:
        RunFolderError: a file is not one ``replay run`` writes, or the summary does not
            describe the traces beside it, or its policy is not a valid policy (one line
            naming the file).
    """
    doc = read_summary(out)
    try:
        policy = policy_from_dict(doc["policy"], str(out / "summary.json"))
    except PolicyError as exc:  # the summary's, not the user's: a damaged input (exit 1)
        where = f"{exc.key}: " if exc.key else ""
        raise RunFolderError(f"{exc.path}: not a `replay run` summary (its policy: {where}"
                             f"{exc.reason})") from None
    trace = read_trace(out)
    _summary_matches(out, doc, policy, trace)
    return policy, trace


def _summary_matches(out: Path, doc: dict[str, Any], policy: Policy, trace: Trace) -> None:
    """Refuse a ``summary.json`` that does not describe the traces beside it: its policy not
    the one its ``policy_digest`` was taken of, trace rows of another policy, a run's request
    count not the traces' (a run in one and not the other), actions or evictions of a run with
    no request."""
    path = out / "summary.json"
    if doc.get("policy_digest") != policy.digest():
        raise RunFolderError(f"{path}: its policy is not the one it was written with "
                               f"(policy_digest {doc.get('policy_digest')!r}, the policy hashes "
                               f"to {policy.digest()!r}); replay the policy again with "
                               "`replay run`")
    for name in TRACE_SCHEMAS:
        held = sorted(str(v) for v in pc.unique(trace.table(name)["policy"]).to_pylist())
        if held and held != [policy.name]:
            raise RunFolderError(f"{path}: names policy {policy.name!r}, but "
                                   f"{out / 'traces' / f'{name}.parquet'} holds rows of "
                                   f"{', '.join(map(repr, held))}")
    rows = doc.get("runs")
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and isinstance(r.get("run_id"), str)
            and type(r.get("n_requests")) is int and r.get("policy") == policy.name
            for r in rows):
        raise RunFolderError(f"{path}: not a `replay run` summary (runs: not a list of rows "
                               f"each with a run_id, its n_requests and policy {policy.name!r})")
    said = {r["run_id"]: r["n_requests"] for r in rows}
    if len(said) < len(rows):
        raise RunFolderError(f"{path}: not a `replay run` summary (a run_id in two rows)")
    counts = pc.value_counts(trace.requests["run_id"]).to_pylist()
    held_n = {c["values"]: c["counts"] for c in counts}
    for rid in sorted(set(said) | set(held_n)):
        if said.get(rid, 0) != held_n.get(rid, 0):
            raise RunFolderError(
                f"{path}: run {rid!r} has " + (f"n_requests {said[rid]}" if rid in said
                                                else "no row") + f", but "
                f"{out / 'traces' / 'requests.parquet'} holds {held_n.get(rid, 0)} of its "
                "requests; these are not the traces it summarises")
    for name in ("actions", "evictions"):
        stray = set(pc.unique(trace.table(name)["run_id"]).to_pylist()) - set(held_n)
        if stray:
            raise RunFolderError(f"{out / 'traces' / f'{name}.parquet'}: rows of run "
                                   f"{min(map(str, stray))!r}, which has no request in "
                                   "requests.parquet; these are not the traces summary.json "
                                   "summarises")


def _same_engine(path: Path, version: object) -> None:
    """Refuse a trace file another engine wrote: its figures are not this engine's."""
    if version != TRACE_VERSION:
        raise RunFolderError(f"{path}: trace version {version!r}, this ctxreplay writes "
                               f"{TRACE_VERSION!r}; replay the policy again with `replay run`")


def rollup_table(result: RunResult) -> pa.Table:
    """A run's roll-up rows as an Arrow table (its ``schema``)."""
    names = result.schema.names
    return pa.Table.from_pylist([{c: r[c] for c in names} for r in result.rollup],
                                schema=result.schema)
