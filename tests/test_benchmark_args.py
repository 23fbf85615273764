"""The benchmarks that take ``[PATH ...]`` read their command line (``benchmarks/corpus_args``):
``--help`` was once taken for a log path (a benchmark of 0 runs, then a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", ["replay_speed.py", "anchored_scales.py", "per_kind_scales.py",
                                    "sweep_speed.py", "sweep_parts.py"])
def test_help_and_missing_path(script: str, tmp_path: Path) -> None:
    got = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"],
                         capture_output=True, text=True, check=False)
    assert got.returncode == 0 and got.stdout.startswith("usage:") and "PATH" in got.stdout
    missing = tmp_path / "nothing-here"
    got = subprocess.run([sys.executable, str(BENCHMARKS / script), str(missing)],
                         capture_output=True, text=True, check=False)
    assert got.returncode == 2, got.stderr
    assert f"no such file or folder: {missing}" in got.stderr and "Traceback" not in got.stderr


@pytest.mark.parametrize("script", ["replay_speed.py", "sweep_speed.py", "sweep_parts.py"])
def test_a_benchmark_of_no_runs_says_so(script: str, tmp_path: Path) -> None:
    """No replayable run: exit 1 saying so (the sweeps' benchmarks once printed the figures of
    an empty grid, or a ZeroDivisionError)."""
    got = subprocess.run([sys.executable, str(BENCHMARKS / script), str(tmp_path)],
                         capture_output=True, text=True, check=False)
    assert got.returncode == 1
    assert f"no replayable run in {tmp_path}" in got.stderr and "Traceback" not in got.stderr
