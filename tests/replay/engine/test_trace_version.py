"""TRACE_VERSION moves with the traces: the sweep cache, baselines and stored traces are keyed
by it, so an engine change that alters a trace without bumping it would let stale results be
reused silently.  The digest of every preset's traces over the samples, ``logs/`` and the
fixtures (``tests/fixtures``: formats and shapes the samples lack, whose traces an engine change
may move alone) is committed beside the version; a change of either without the other fails
here (``--update-golden`` rewrites it after the version is bumped)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.engine.trace import TRACE_SCHEMAS, TRACE_VERSION
from replay.policy import load_policy, presets

PINNED = Path(__file__).resolve().parents[2] / "golden" / "trace_version.json"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _digest(corpora) -> str:  # type: ignore[no-untyped-def]
    h = hashlib.sha256()
    for name in presets():
        policy = load_policy(name)
        for corpus in corpora:
            for run_id in corpus.replayable():
                trace = replay(corpus.prepared(run_id), policy,
                               calibration=corpus.calibration(run_id))
                for table in TRACE_SCHEMAS:
                    values = trace.table(table).drop_columns(["run_id"]).to_pydict()
                    h.update(json.dumps(values, sort_keys=True, default=str).encode())
    return h.hexdigest()


def test_traces_change_only_with_the_trace_version(sample_corpus, logs_corpus, update_golden,  # type: ignore[no-untyped-def]
                                                    tmp_path) -> None:
    fixtures = open_corpus([FIXTURES], cache_dir=tmp_path / "fixtures")
    got = {"trace_version": TRACE_VERSION,
           "digest": _digest([sample_corpus, logs_corpus, fixtures])}
    if update_golden:
        PINNED.write_text(json.dumps(got, indent=1) + "\n")
    pinned = json.loads(PINNED.read_text())
    if got["digest"] != pinned["digest"]:
        assert got["trace_version"] != pinned["trace_version"], (
            "the traces changed but TRACE_VERSION did not: bump it in replay/engine/trace.py "
            "(cached sweep rows and baselines are keyed by it), then run this test with "
            "--update-golden")
    assert got == pinned, ("TRACE_VERSION or the traces changed: run this test with "
                           "--update-golden and commit tests/golden/trace_version.json")
