"""TRACE_VERSION moves with the traces: the sweep cache, baselines and stored traces are keyed
by it, so an engine change that alters a trace without bumping it would let stale results be
reused silently.  The digest of every preset's traces over the samples, ``logs/`` and the
fixtures (``tests/fixtures``: formats and shapes the samples lack, whose traces an engine change
may move alone) is committed beside the version, with the presets it was taken over; a change
of either without the other fails here (``--update-golden`` rewrites it after the version is
bumped).  A preset added is not an engine change: the known runs are digested over the pinned
presets, and the new one asks for ``--update-golden``, as a run added does."""

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


def _digests(corpora, names: list[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each run's digest of its traces under the presets ``names``, by ``corpus/source#run``: a
    run added to the fixtures is a new key (the golden file updated, no version bump); a known
    run's traces moving is an engine change."""
    out: dict[str, str] = {}
    policies = [load_policy(name) for name in names]  # (each read once, not once a run)
    for label, corpus in corpora:
        sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
        seen: dict[str, int] = {}
        for run_id in corpus.replayable():
            h = hashlib.sha256()
            for policy in policies:
                trace = replay(corpus.prepared(run_id), policy,
                               calibration=corpus.calibration(run_id))
                for table in TRACE_SCHEMAS:
                    values = trace.table(table).drop_columns(["run_id"]).to_pydict()
                    h.update(json.dumps(values, sort_keys=True, default=str).encode())
            key = f"{label}/{sources[run_id]}"
            seen[key] = seen.get(key, 0) + 1
            out[f"{key}#{seen[key]}"] = h.hexdigest()
    return out


def test_traces_change_only_with_the_trace_version(sample_corpus, logs_corpus, update_golden,  # type: ignore[no-untyped-def]
                                                    tmp_path) -> None:
    fixtures = open_corpus([FIXTURES], cache_dir=tmp_path / "fixtures")
    corpora = [("samples", sample_corpus), ("logs", logs_corpus), ("fixtures", fixtures)]
    names = presets()
    if update_golden:
        PINNED.write_text(json.dumps({"digests": _digests(corpora, names), "presets": names,
                                      "trace_version": TRACE_VERSION},
                                     indent=1, sort_keys=True) + "\n")
    pinned = json.loads(PINNED.read_text())
    known = [n for n in pinned.get("presets", names) if n in names]  # one removed: not digested
    got = {"trace_version": TRACE_VERSION, "digests": _digests(corpora, known), "presets": names}
    moved = sorted(k for k, v in got["digests"].items()
                   if k in pinned.get("digests", {}) and pinned["digests"][k] != v)
    if moved:
        assert got["trace_version"] != pinned["trace_version"], (
            f"the traces of {len(moved)} known run(s) changed ({', '.join(moved[:3])}, ...) "
            "but TRACE_VERSION did not: bump it in replay/engine/trace.py (cached sweep rows "
            "and baselines are keyed by it), then run this test with --update-golden")
    assert got == pinned, ("TRACE_VERSION changed, or runs or presets were added or removed: "
                           "run this test with --update-golden and commit "
                           "tests/golden/trace_version.json")
