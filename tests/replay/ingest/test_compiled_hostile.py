"""The compiled ingest parts read hostile input as the pure-Python ones do: damaged copies of
real logs of every format (``tests/replay/ingest/hostile_logs.py``: lines dropped, repeated,
swapped, cut; values of a wrong type, huge, deeply nested, odd unicode; keys removed; ids
repeated) ingested once here and once under ``CTXREPLAY_PURE=1`` in a process of its own, the
stores equal entry for entry (tables, coverage, issues) and the report said the same.  Such
input takes the parsers' rarely run branches, where code compiled by mypyc can differ from
CPython's (identity of boxed values, declared types checked at run time).  The runs so
stored are replayed too (a sweep's table, the metric parts and the engine compiled or pure):
the same to the bit."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from replay.compiled_engine import PURE_ENV
from replay.ingest._build import BUILD
from tests.replay.ingest.hostile_logs import describe, metrics, write_variants

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(not BUILD.compiled, reason=f"no compiled ingest parts to compare with the "
                    f"pure ones: {BUILD.describe()}")
def test_compiled_and_pure_ingests_of_hostile_logs_are_equal(tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    n = write_variants(folder, seed=0)
    out, metrics_out = tmp_path / "pure.json", tmp_path / "pure.pkl"
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    pure = subprocess.run([sys.executable, "-m", "tests.replay.ingest.hostile_logs", str(folder),
                           str(out), str(metrics_out)], capture_output=True, text=True,
                          env={**env, PURE_ENV: "1"}, cwd=REPO, check=False)
    assert pure.returncode == 0, pure.stderr
    want = json.loads(out.read_text())
    got = describe(folder, tmp_path / "compiled")
    assert len(got) > n // 2 and sorted(got) == sorted(want)
    assert got["(report)"] == want["(report)"]
    assert {k: got[k] for k in got if got[k] != want[k]} == {}
    # the metric parts and the engine over those runs: the sweep tables equal to the bit
    (table,), (pure_table,) = (pickle.loads(metrics(tmp_path / "compiled" / "dataset")),
                               pickle.loads(metrics_out.read_bytes()))
    assert len(table) > 1000
    pd.testing.assert_frame_equal(table, pure_table, check_exact=True)
