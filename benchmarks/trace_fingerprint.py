"""Trace fingerprint: sha256 over every trace table of every preset over a corpus, per run.

    python benchmarks/trace_fingerprint.py [--out FILE] [--against FILE] [PATH ...]
    (default paths: logs/ and ../shared/logs-sample)

Replays every shipped preset (plus the scenario policies under ``logs/scenarios`` when given as
paths, like any other policy file passed with ``--policy``) over every replayable run and prints
one line per (policy, run): the sha256 of the requests, actions and evictions tables written as
Arrow IPC, then a total.  ``--out`` writes the lines as JSON; ``--against`` compares with a
previous ``--out`` and lists every (policy, run, table) that changed (exit 1 when any did).  An
engine refactor that must not change traces shows ``SAME``; an intended fix lists exactly the
runs it was meant to change.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
from fingerprint_file import total_out_against

from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.engine.trace import TRACE_SCHEMAS
from replay.policy import load_policy, presets

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = [REPO / "logs", REPO.parent / "shared" / "logs-sample"]


def _digest(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def fingerprints(paths: list[Path], policy_files: list[Path],
                 drop: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """``{"policy|run": {table: sha256}}`` for every policy and replayable run."""
    out: dict[str, dict[str, str]] = {}
    policies = [load_policy(name) for name in presets()] + [load_policy(p) for p in policy_files]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        ids = corpus.replayable()
        for policy in policies:
            for run_id in ids:
                trace = replay(corpus.prepared(run_id), policy,
                               calibration=corpus.calibration(run_id))
                out[f"{policy.name}|{run_id}"] = {n: _digest(_without(trace.table(n), drop))
                                                  for n in TRACE_SCHEMAS}
    return out


def _without(table: pa.Table, drop: tuple[str, ...]) -> pa.Table:
    """The table without the ``drop`` columns and without schema metadata (to compare the
    remaining columns with a fingerprint taken before columns were added)."""
    if not drop:
        return table
    kept = table.drop_columns([c for c in drop if c in table.column_names])
    return kept.replace_schema_metadata(None)


def main(argv: list[str]) -> int:
    """Print the fingerprints; compare with ``--against``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--policy", action="append", type=Path, default=[])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--against", type=Path)
    ap.add_argument("--drop", action="append", default=[],
                    help="leave this column out (and the schema metadata): compare the other "
                         "columns with a fingerprint taken before it was added")
    args = ap.parse_args(argv)
    got = fingerprints(args.paths or DEFAULT_PATHS, args.policy, tuple(args.drop))
    return total_out_against(got, "(policy, run) traces", args.out, args.against,
                             lambda ref, got: [
                                 f"{key} {table}" for key in sorted(set(ref) | set(got))
                                 for table in TRACE_SCHEMAS
                                 if ref.get(key, {}).get(table) != got.get(key, {}).get(table)])

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
