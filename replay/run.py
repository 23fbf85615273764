"""``run``: replay one policy over a corpus and keep the traces with a per-run summary.

The summary has one row per run, named by its label (``replay.run_label``): requests, tokens sent, peak request, overshoots,
summaries, trims, cached share, cost, and which truth judged them (``truth_source``,
``replay.truth``).  ``write_run`` stores the traces as Parquet
(``traces/{requests,actions,evictions}.parquet``) next to ``summary.json``,
each written under a temporary name and renamed.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replay.atomic_files import atomic_write_bytes, atomic_write_text
from replay.corpus import Corpus, iter_replays, replay_corpus
from replay.memory import release_freed_memory
from replay.policy import Policy, policy_to_dict
from replay.run_label import run_labels
from replay.trace import SUMMARY_KINDS, TRACE_SCHEMAS, TRACE_VERSION, TRIM_KINDS, Trace

SUMMARY_SCHEMA = pa.schema(
    [(c, pa.string()) for c in ("run_id", "run", "source", "format", "policy")]
    + [(c, pa.int64()) for c in ("requests", "tokens_sent", "peak_tokens", "overshoots",
                                 "max_overshoot_tokens", "summaries", "trims")]
    + [(c, pa.float64()) for c in ("cached_share", "cost_usd")]
    + [("truth_source", pa.string()), ("note", pa.string())])
"""One row per (run, policy): what ``run`` and ``run_to`` report; a run with no recorded
request is a row too (``NOT_REPLAYED``): requests, tokens, overshoots, summaries, trims and
cost 0 (there is nothing to send), peak, largest overshoot, cached share and truth unknown."""
NOT_REPLAYED = "not replayed: no request"
"""The ``note`` of a run with no recorded request (null for a replayed run); ``replay inspect
FILE`` says why the file has none."""
SUMMARY_COLUMNS: tuple[str, ...] = tuple(SUMMARY_SCHEMA.names)


@dataclass(frozen=True, slots=True)
class RunResult:
    """A policy's traces over a corpus and one summary row per run."""

    policy: Policy
    trace: Trace
    summary: list[dict[str, Any]]


def run(corpus: Corpus, policy: Policy, *, allow_python: bool = False,
        on_run: Callable[[str], None] | None = None) -> RunResult:
    """Replay ``policy`` over every run of ``corpus`` and summarise each run."""
    trace = replay_corpus(corpus, policy, allow_python=allow_python, on_run=on_run)
    return RunResult(policy, trace, summarise_runs(corpus, trace)
                     + not_replayed_rows(corpus, policy))


def run_to(corpus: Corpus, policy: Policy, out: Path, *, allow_python: bool = False,
           on_run: Callable[[str], None] | None = None,
           release_memory: bool = False) -> pa.Table:
    """Replay ``policy`` over ``corpus`` streaming each run's trace to ``out``; the summary
    rows as a table (``SUMMARY_SCHEMA``).

    Memory stays bounded by the largest run: traces are appended to Parquet files under
    temporary names as runs finish, and renamed into place (with ``summary.json``) only
    when every run is done, so an interrupted run leaves the previous outputs intact.
    Summary rows are kept as columns (~0.3 KB a run, not a dict each).
    ``release_memory``: every few hundred runs, hand the heap's freed pages back to the OS
    (``replay.memory.release_freed_memory``, a process-wide effect: the ``replay`` command asks
    for it, a library call does not do it unasked).
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(exist_ok=True)
    tmp = {n: out / "traces" / f".{n}.parquet.tmp{os.getpid()}" for n in TRACE_SCHEMAS}
    writers = {n: pq.ParquetWriter(tmp[n], TRACE_SCHEMAS[n], compression="zstd")
               for n in TRACE_SCHEMAS}
    summary: dict[str, list[Any]] = {c: [] for c in SUMMARY_COLUMNS}
    meta = run_meta(corpus)
    try:
        pending: list[Trace] = []
        done: dict[str, list[pa.Table]] = {n: [] for n in TRACE_SCHEMAS}
        n_pending = n_done = 0
        for i, trace in enumerate(iter_replays(corpus, policy, allow_python=allow_python,
                                                on_run=on_run), 1):
            if release_memory and i % _RUNS_PER_TRIM == 0:
                release_freed_memory()
            for row in summarise_runs(corpus, trace, meta):
                for c, values in summary.items():
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
    except BaseException:
        for writer in writers.values():
            writer.close()
        for path in tmp.values():
            path.unlink(missing_ok=True)
        raise
    for writer in writers.values():
        writer.close()
    for name, path in tmp.items():
        os.replace(path, out / "traces" / f"{name}.parquet")
    for row in not_replayed_rows(corpus, policy, meta):
        for c, values in summary.items():
            values.append(row[c])
    table = pa.Table.from_pydict(summary, schema=SUMMARY_SCHEMA)
    del summary
    _write_summary(policy, LazyRows(table), out)
    return table


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
    return done["requests"][-1].num_rows


def _flush(done: dict[str, list[pa.Table]], writers: dict[str, pq.ParquetWriter]) -> None:
    """Write the chunks kept so far as one row group per table, and forget them."""
    for name, writer in writers.items():
        chunks = [c for c in done[name] if c.num_rows]
        if chunks:
            writer.write_table(pa.concat_tables(chunks))
        done[name] = []


def summarise_runs(corpus: Corpus, trace: Trace,
                   meta: dict[str, tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """One summary row per (run, policy) in the trace, in trace order."""
    meta = meta if meta is not None else run_meta(corpus)
    req, act = trace.columns("requests"), trace.columns("actions")
    rq = ({"run_id": r, "policy": p, "truth_tokens": t, "overshoot_tokens": o, "cached_tokens": c,
           "cost_usd": usd, "truth_source": ts} for r, p, t, o, c, usd, ts in zip(
               req["run_id"], req["policy"], req["truth_tokens"], req["overshoot_tokens"],
               req["cached_tokens"], req["cost_usd"], req["truth_source"]))
    acts = ({"run_id": r, "policy": p, "kind": k, "undone": u} for r, p, k, u in zip(
        act["run_id"], act["policy"], act["kind"], act["undone"]))
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rq:
        key = (r["run_id"], r["policy"])
        row = rows.get(key)
        if row is None:
            label, source, fmt = meta.get(r["run_id"], (r["run_id"], "", ""))
            row = rows[key] = {"run_id": key[0], "run": label, "source": source,
                               "format": fmt, "policy": key[1], "requests": 0,
                               "tokens_sent": 0, "peak_tokens": 0, "overshoots": 0,
                               "max_overshoot_tokens": 0, "summaries": 0, "trims": 0,
                               "cached_share": 0.0, "cost_usd": 0.0,
                               "truth_source": r["truth_source"], "note": None,
                               "_cached": 0}
        row["requests"] += 1
        row["tokens_sent"] += r["truth_tokens"]
        row["peak_tokens"] = max(row["peak_tokens"], r["truth_tokens"])
        row["overshoots"] += r["overshoot_tokens"] > 0
        row["max_overshoot_tokens"] = max(row["max_overshoot_tokens"], r["overshoot_tokens"])
        row["_cached"] += r["cached_tokens"]
        row["cost_usd"] += r["cost_usd"]
    for a in acts:
        row = rows.get((a["run_id"], a["policy"]))
        if row is None or a["undone"]:
            continue
        if a["kind"] in SUMMARY_KINDS:
            row["summaries"] += 1
        elif a["kind"] in TRIM_KINDS:
            row["trims"] += 1
    out = []
    for row in rows.values():
        cached = row.pop("_cached")
        row["cached_share"] = round(cached / row["tokens_sent"], 6) if row["tokens_sent"] else 0.0
        row["cost_usd"] = round(row["cost_usd"], 6)
        out.append(row)
    return out


def not_replayed_rows(corpus: Corpus, policy: Policy,
                      meta: dict[str, tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """A summary row for each run with no recorded request (``NOT_REPLAYED``), by run id: never
    dropped from the summary silently."""
    meta = meta if meta is not None else run_meta(corpus)
    left = sorted(set(corpus.run_ids) - set(corpus.replayable()))
    named = {rid: meta.get(rid, (rid, "", "")) for rid in left}
    return [{"run_id": rid, "run": named[rid][0], "source": named[rid][1],
             "format": named[rid][2], "policy": policy.name, "requests": 0,
             "tokens_sent": 0, "peak_tokens": None, "overshoots": 0, "max_overshoot_tokens": None,
             "summaries": 0, "trims": 0, "cached_share": None, "cost_usd": 0.0,
             "truth_source": None, "note": NOT_REPLAYED} for rid in left]


def run_meta(corpus: Corpus) -> dict[str, tuple[str, str, str]]:
    """(label, source, format) of every run, by run id (``replay.run_label``)."""
    runs = corpus.runs
    labels = run_labels(runs)
    return {rid: (labels[rid], src, fmt) for rid, src, fmt in zip(
        runs["run_id"].to_pylist(), runs["source"].to_pylist(), runs["format"].to_pylist())}


def write_run(result: RunResult, out: Path) -> list[Path]:
    """Write the traces and the summary under ``out``; returns the files written."""
    written = []
    for name in ("requests", "actions", "evictions"):
        buf = io.BytesIO()
        pq.write_table(getattr(result.trace, name), buf, compression="zstd")
        path = out / "traces" / f"{name}.parquet"
        atomic_write_bytes(path, buf.getvalue())
        written.append(path)
    written.append(_write_summary(result.policy, result.summary, out))
    return written


def _write_summary(policy: Policy, rows: list[dict[str, Any]], out: Path) -> Path:
    doc = {"trace_version": TRACE_VERSION, "policy": policy_to_dict(policy),
           "policy_digest": policy.digest(), "runs": rows}
    path = out / "summary.json"
    atomic_write_text(path, json.JSONEncoder(indent=1, default=str).iterencode(doc))
    return path


class LazyRows(list):  # type: ignore[type-arg]
    """A table's rows as dicts, made a batch at a time as they are iterated.

    For ``json.JSONEncoder(indent=…).iterencode``, which encodes any ``list`` by ``len`` and
    iteration: an archive's summary is written (same text as ``json.dumps`` of the dicts)
    without ever holding a dict per run.
    """

    _BATCH = 1024

    def __init__(self, table: pa.Table) -> None:
        super().__init__()
        self.table = table

    def __len__(self) -> int:
        return self.table.num_rows

    def __bool__(self) -> bool:
        return self.table.num_rows > 0

    def __iter__(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        for batch in self.table.to_batches(max_chunksize=self._BATCH):
            yield from batch.to_pylist()


def read_trace(out: Path) -> Trace:
    """The traces a ``write_run`` stored under ``out``."""
    return Trace(*(pq.ParquetFile(out / "traces" / f"{n}.parquet").read()
                   for n in ("requests", "actions", "evictions")))


def summary_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Summary rows as an Arrow table (``SUMMARY_SCHEMA``)."""
    return pa.Table.from_pylist([{c: r[c] for c in SUMMARY_COLUMNS} for r in rows],
                                schema=SUMMARY_SCHEMA)
