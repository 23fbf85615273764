"""The static checks CI runs with the tests (issue 14 item 6): ``ruff check .`` and ``mypy``
(strict on ``replay/`` and ``analysis/``, configured in ``pyproject.toml``) pass.

Both come with the test extras (``pip install -e ".[test]"``), need no network and write no
cache into the checkout (mypy's goes to the test's temporary folder; a cold run takes ~30-70 s
on a 2-core machine).
"""

from __future__ import annotations

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


def test_mypy_strict_passes(tmp_path: Path) -> None:
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy-cache"))
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"
    assert "no issues found" in done.stdout, done.stdout
