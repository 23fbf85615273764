"""The benchmarks that take ``[PATH ...]`` read their command line (``benchmarks/corpus_args``):
``--help`` was once taken for a log path (a benchmark of 0 runs, then a traceback).

Each script is run as ``python benchmarks/SCRIPT ARGS`` runs it (``runpy`` as ``__main__``, its
folder first on ``sys.path``, ``sys.argv`` its command line), every case in one process of its
own made once for the session (``_outcomes``): a process a case cost ~0.15 s of start-up, and
~1.5 s for ``sweep_speed.py``, which imports the sweep before it reads its arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.shared_results import SharedResults

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
HELP_AND_MISSING = ["replay_speed.py", "anchored_scales.py", "per_kind_scales.py",
                    "sweep_speed.py", "sweep_parts.py"]
NO_RUNS = ["replay_speed.py", "sweep_speed.py", "sweep_parts.py"]

RUN_EACH = """
import contextlib, io, json, runpy, sys, traceback
folder, cases = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, folder)  # as `python benchmarks/SCRIPT` has it
out = []
for script, args in cases:
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [f"{folder}/{script}", *args]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if not isinstance(stop.code, (int, type(None))):
                print(stop.code, file=sys.stderr)
        except BaseException:  # what the interpreter prints for an uncaught exception
            traceback.print_exc()
            code = 1
    out.append([code, stdout.getvalue(), stderr.getvalue()])
print(json.dumps(out))
"""
"""Runs each (script, args) as the interpreter runs ``python SCRIPT ARGS``: its exit code (a
``SystemExit``'s, 1 and the traceback on stderr for any other exception), stdout, stderr."""


@pytest.fixture(scope="module")
def _outcomes(shared_results: SharedResults) -> tuple[Path, dict[tuple[str, str], Any]]:
    """(the cases' folder, each (script, case)'s [exit code, stdout, stderr]): ``missing`` names
    a path that does not exist, ``no runs`` an empty folder."""
    root = shared_results.files("benchmark-args")

    def run() -> dict[tuple[str, str], Any]:
        (root / "empty").mkdir(parents=True)
        cases = [(s, "help", ["--help"]) for s in HELP_AND_MISSING] \
            + [(s, "missing", [str(root / "nothing-here")]) for s in HELP_AND_MISSING] \
            + [(s, "no runs", [str(root / "empty")]) for s in NO_RUNS]
        done = subprocess.run([sys.executable, "-c", RUN_EACH, str(BENCHMARKS),
                               json.dumps([[s, args] for s, _, args in cases])],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout.splitlines()[-1])
        return {(s, case): outcome for (s, case, _), outcome in zip(cases, got, strict=True)}

    return root, shared_results.get("benchmark-args", run)


@pytest.mark.parametrize("script", HELP_AND_MISSING)
def test_help_and_missing_path(script: str,
                               _outcomes: tuple[Path, dict[tuple[str, str], Any]]) -> None:
    root, outcomes = _outcomes
    code, stdout, _ = outcomes[script, "help"]
    assert code == 0 and stdout.startswith("usage:") and "PATH" in stdout
    code, _, stderr = outcomes[script, "missing"]
    assert code == 2, stderr
    assert f"no such file or folder: {root / 'nothing-here'}" in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("script", NO_RUNS)
def test_a_benchmark_of_no_runs_says_so(script: str,
                                        _outcomes: tuple[Path, dict[tuple[str, str], Any]]) -> None:
    """No replayable run: exit 1 saying so (the sweeps' benchmarks once printed the figures of
    an empty grid, or a ZeroDivisionError)."""
    root, outcomes = _outcomes
    code, _, stderr = outcomes[script, "no runs"]
    assert code == 1
    assert f"no replayable run in {root / 'empty'}" in stderr and "Traceback" not in stderr
