"""The static checks CI runs with the tests (issue 14 item 6): ``ruff check .`` and ``mypy``
(strict on ``replay/`` and ``analysis/``, configured in ``pyproject.toml``) pass.

Both come with the test extras (``pip install -e ".[test]"``), need no network and write no
cache (a run of the suite checks a checkout once, so mypy's cache would only be written, never
read: ``--cache-dir`` set to the null device skips writing it, ~7 % of mypy's CPU; a cold run
takes ~15-18 s of CPU since the packages only third-party code imports are skipped, 33-35 s
before).  mypy skips those packages (``follow_imports = "skip"`` in ``pyproject.toml``): a
package our code imports must never be among them, or mypy would take it as ``Any`` unsaid.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
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


def _skipped_by_mypy() -> list[str]:
    """The module patterns mypy does not follow into (``follow_imports = "skip"``)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    return [pattern for override in config.get("overrides", [])
            if override.get("follow_imports") == "skip" for pattern in override["module"]]


def _imported(package: str) -> set[str]:
    """Every absolute module name an import statement under ``package/`` names, anywhere."""
    names: set[str] = set()
    for path in (REPO / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module)
    return names


def test_mypy_skips_no_package_our_code_imports() -> None:
    skipped = _skipped_by_mypy()
    assert skipped and all(p.endswith(".*") for p in skipped), skipped
    imported = _imported("replay") | _imported("analysis")
    assert "bokeh.models" in imported  # the walk sees the third-party imports
    wrong = sorted(name for name in imported for p in skipped
                   if name == p[:-2] or name.startswith(p[:-1]))
    assert not wrong, f"mypy skips these, so it would check their uses as Any: {wrong}"
