"""The static checks CI runs with the tests (issue 14 item 6): ``ruff check .`` and ``mypy``
(strict on ``replay/`` and ``analysis/``, configured in ``pyproject.toml``) pass.

Both come with the test extras (``pip install -e ".[test]"``), need no network and write no
cache (a run of the suite checks a checkout once, so mypy's cache would only be written, never
read: ``--cache-dir`` set to the null device skips writing it, ~7 % of mypy's CPU; a cold run
takes ~25-30 s of CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=900, check=False)


def test_ruff_check_passes() -> None:
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, f"ruff check . failed:\n{done.stdout}{done.stderr}"


def test_mypy_strict_passes() -> None:
    done = _run("mypy", "--cache-dir", os.devnull)
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"
    assert "no issues found" in done.stdout, done.stdout
