"""Every table ingest stores, digested, for the samples, ``logs/`` and the test fixtures, in a
process of its own.

    CTXREPLAY_PURE=1 python -m tests.replay.ingest.pure_stores OUT.json

``test_compiled_ingest.py`` runs this under the pure-Python ingest parts and compares its
digests with those this module makes in the test's process with the compiled parts
(``setup.py``'s ``INGEST_MODULES``).  An entry's digest covers every table decoded from its
file (their values, column by column), its format, runs, coverage and issues.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.entry_file import decode
from tests.conftest import REPO, SAMPLES

INPUTS = {"samples": SAMPLES, "logs": REPO / "logs", "fixtures": REPO / "tests" / "fixtures"}
"""What is ingested: every parser's real and made-up files, the odd ones included."""


def digests(work: Path) -> dict[str, str]:
    """``input/entry`` -> the sha256 of what its entry holds, one jobs=1 ingest an input."""
    out = {}
    for name, folder in INPUTS.items():
        dataset = work / name
        report = ingest([folder], dataset, jobs=1)
        out[f"{name}/(report)"] = hashlib.sha256(repr(
            (sorted(report.parsed), sorted(report.failed), report.n_runs, report.n_tokens,
             sorted((i.path, i.line, i.reason) for i in report.issues))).encode()).hexdigest()
        for key, entry in store.read_manifest(dataset).items():
            h = hashlib.sha256(repr((entry.format, entry.n_runs, sorted(entry.coverage.items()),
                                     entry.issues)).encode())
            tables = decode((dataset / "data" / f"{entry.key}.parquet").read_bytes(), key)
            for table in sorted(tables):
                h.update(table.encode())
                h.update(repr(tables[table].to_pydict()).encode())
            out[f"{name}/{key}"] = h.hexdigest()
    return out


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as work:
        out.write_text(json.dumps(digests(Path(work)), indent=0, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
