"""Every preset's trace over ``logs/`` and the samples, digested, in a process of its own.

    CTXREPLAY_PURE=1 python -m tests.replay.pure_traces OUT.json [logs=DATASET samples=DATASET]

``test_compiled_engine.py`` runs this under the pure engine and compares its digests with
those of the session's compiled replays (``preset_run``: ``replay.apply_policy.run`` over each
corpus, as here), so the compiled side costs no replay of its own.  It passes the session's
datasets of both corpora (``logs_corpus``, ``sample_corpus``: the same logs, ingested), which
are opened as they are instead of ingesting the logs again: the ingest runs no engine code,
so both engines replay the same stored runs either way.  A digest is the sha256 of a
trace table written as Arrow IPC, as ``benchmarks/trace_fingerprint.py`` takes it: the bytes,
schema and metadata included.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

from replay.engine.trace import TRACE_SCHEMAS, Trace
from tests.conftest import REPO, SAMPLES, corpus_kept_prepared

CORPORA = {"logs": REPO / "logs", "samples": SAMPLES}
"""The corpora ``preset_run`` replays (``tests/conftest.py``: ``logs_corpus``, ``sample_corpus``)."""


def digests(trace: Trace) -> dict[str, str]:
    """``{table: sha256 of its Arrow IPC stream}`` for each trace table."""
    out = {}
    for name in TRACE_SCHEMAS:
        table = trace.table(name)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        out[name] = hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
    return out


def key(which: str, policy: str) -> str:
    return f"{which}|{policy}"


def main(out: Path, datasets: dict[str, Path]) -> None:
    """Write ``{"corpus|policy": digests}`` for every preset over both corpora to ``out``
    (a corpus in ``datasets``: its ingested dataset, opened as it is; else ingested here)."""
    from analysis.per_run.rollup import RUN_ROLLUP
    from replay.apply_policy import run
    from replay.corpus import Corpus, open_corpus
    from replay.policy import load_policy, presets

    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which, folder in CORPORA.items():
            if which in datasets:
                opened = open_corpus([datasets[which]])
                corpus = Corpus(opened.root, opened.entries, opened.report,
                                keep_prepared=len(opened.run_ids))  # as corpus_kept_prepared
            else:
                corpus = corpus_kept_prepared(folder, Path(tmp) / which)  # as preset_run's
            for name in presets():
                got[key(which, name)] = digests(run(corpus, load_policy(name),
                                                    rollup=RUN_ROLLUP).trace)
    out.write_text(json.dumps(got, sort_keys=True, indent=0))


if __name__ == "__main__":
    main(Path(sys.argv[1]), {k: Path(v) for k, v in (a.split("=", 1) for a in sys.argv[2:])})
