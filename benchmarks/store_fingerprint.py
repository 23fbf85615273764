"""Store fingerprint: sha256 over every table of every entry an ingest writes, per entry.

    python benchmarks/store_fingerprint.py [--out FILE] [--against FILE] [PATH ...]
    (default paths: ../shared/logs-sample, tests/fixtures and logs/, each ingested alone)

Ingests each PATH into a fresh store (``jobs=1``), decodes every entry of its manifest and
prints one line per input: its entries and the sha256 over every decoded table (the tables as
Arrow IPC, in name order), then a total.  ``--out`` writes the per-entry digests as JSON;
``--against`` compares with a previous ``--out`` and lists every entry that changed (exit 1
when any did).  A parser or table change that must not change what is stored (a speed-up, a
compiled build) shows ``SAME``; an intended fix lists the entries it was meant to change.  The
entry keys hold ``PARSERS_VERSION``: the digests are keyed by input and source instead.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
from fingerprint_file import total_out_against

from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.entry_file import decode

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = [REPO.parent / "shared" / "logs-sample", REPO / "tests" / "fixtures",
                 REPO / "logs"]


def _digest(tables: dict[str, pa.Table]) -> str:
    h = hashlib.sha256()
    for name in sorted(tables):
        table = tables[name]
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        h.update(name.encode() + b"\0" + sink.getvalue().to_pybytes())
    return h.hexdigest()


def fingerprints(paths: list[Path]) -> dict[str, str]:
    """``<input name>/<source>`` -> the digest of that entry's decoded tables."""
    got: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, path in enumerate(paths):
            out = Path(tmp) / f"s{k}"
            ingest([path], out, jobs=1)
            for source, entry in store.read_manifest(out).items():
                data = store.entry_file(out, entry.key).read_bytes()
                got[f"{path.name}/{source}"] = _digest(decode(data, source))
            print(f"{path}: {sum(key.startswith(path.name + '/') for key in got)} entries")
    return got


def main(argv: list[str]) -> int:
    """Print the fingerprints; compare with ``--against``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--against", type=Path)
    args = ap.parse_args(argv)
    got = fingerprints(args.paths or DEFAULT_PATHS)
    return total_out_against(got, "entries", args.out, args.against, lambda ref, got: sorted(
        k for k in set(ref) | set(got) if ref.get(k) != got.get(k)))

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
