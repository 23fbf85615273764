"""An ingest loads the parsers and the store, not the policy model, its YAML or the engine.

``replay ingest`` and each of its worker processes import every parser; the Codex parser sizes
an encrypted summary with Codex's byte arithmetic (``replay.codex_bytes``), which it took from
``replay.policy.codex_harness`` until that loaded the whole policy package (the model, the
checks, PyYAML and the presets' reader: ~80 ms of an ingest's imports, in every process).
Checked in a fresh process (a test worker has loaded everything already), over the real
samples of every format (``../shared/logs-sample``) and the Codex fixtures, encrypted
compactions among them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import SAMPLES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "codex"
NOT_FOR_INGEST = ("replay.policy", "replay.engine", "yaml", "pandas", "analysis")

_INGEST = """
import json, sys
from pathlib import Path
from replay.ingest.batch import ingest
report = ingest([Path(p) for p in {inputs!r}], Path({out!r}), jobs=1)
print(json.dumps({{"parsed": len(report.parsed), "failed": len(report.failed),
                  "no_conversation": len(report.no_conversation),
                  "loaded": sorted(m for m in sys.modules if m.startswith({avoid!r}))}}))
"""


def test_an_ingest_loads_no_policy_engine_or_yaml(tmp_path: Path) -> None:
    """Every real sample and Codex fixture ingested in a process that loads none of them."""
    inputs = [str(SAMPLES), str(FIXTURES)]
    code = _INGEST.format(inputs=inputs, out=str(tmp_path / "ds"), avoid=NOT_FOR_INGEST)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    got = json.loads(out.stdout.splitlines()[-1])
    n_files = len([p for p in FIXTURES.iterdir() if p.suffix == ".jsonl"]) + len(
        [p for p in SAMPLES.rglob("*") if p.suffix in (".jsonl", ".json", ".traj")])
    assert got["parsed"] + got["no_conversation"] >= n_files > 0 and got["failed"] == 0, got
    assert got["loaded"] == []
    texts = [t for f in (tmp_path / "ds" / "data").iterdir()
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    assert any(t.startswith("[REDACTED_ENCRYPTED_SUMMARY len=") for t in texts)
