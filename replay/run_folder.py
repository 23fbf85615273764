"""Reading a ``replay run`` folder back (``summary.json`` and ``traces/``), checked as any
input: each file a regular file this engine wrote (no symlink followed), its values ones a
replay writes, and the summary against the traces beside it (``read_run``).  A folder that
fails is a ``RunFolderError`` (an input that failed: exit 1).

``foreign_outputs``: what in a folder a ``replay run`` would overwrite that it did not write
(checked before a command writes one).

Not here: writing the folder (``replay.apply_policy.write_run``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from replay.engine.trace import TRACE_SCHEMAS, TRACE_VERSION, Trace
from replay.errors import ConfigError, PolicyError, RunFolderError
from replay.ingest.input_files import (
    DOCUMENT_LIMIT,
    TooBig,
    Unreadable,
    max_document_bytes,
    read_input,
)
from replay.output_targets import foreign_files, parquet_footer
from replay.policy import Policy, policy_from_dict
from replay.policy.check import MAX_INT


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
    if (out / "traces").is_symlink():  # (was followed: a planted traces/ read another folder's)
        raise RunFolderError(f"{out / 'traces'}: not a `replay run` traces folder (a symlink, "
                             "not followed)")
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


def foreign_outputs(out: Path) -> list[str]:
    """What a ``replay run`` into ``out`` would overwrite that no ``replay run`` wrote, of any
    version (an older engine's folder is replaced as ever): a ``summary.json`` that is not a
    JSON mapping holding ``trace_version`` and ``policy``, a ``traces/<table>.parquet`` that is
    not a Parquet file whose footer holds ``trace_version`` (``output_targets.foreign_files``:
    a path that is not a regular file is left to the output's own checks, which refuse it)."""
    return foreign_files(out, [("summary.json", _run_summary),
                               *((f"traces/{name}.parquet", _trace_footer)
                                 for name in TRACE_SCHEMAS)])


def _run_summary(path: Path) -> bool:
    """Whether ``path`` holds a ``replay run`` summary of any version."""
    try:
        doc = json.loads(read_input(path, max_document_bytes(), follow=False,
                                    limit=DOCUMENT_LIMIT))
    except (TooBig, Unreadable, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "trace_version" in doc and "policy" in doc


def _trace_footer(path: Path) -> bool:
    """Whether ``path`` ends as a Parquet file whose footer names ``trace_version`` (every
    trace ``write_run`` and ``run_to`` write: ``TRACE_SCHEMAS``' metadata)."""
    return b"trace_version" in parquet_footer(path)
