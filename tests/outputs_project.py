"""A throwaway project for the output-trust tests (issue 23): the two small logs the ``project``
fixture copies (the fixture is in tests/conftest.py), and running commands in it through the
CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from replay.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
SMALL = sorted((REPO / "logs" / "scenarios").glob("*.jsonl"), key=lambda p: p.stat().st_size)[:2]
"""The two smallest generated logs (a few hundred KB): every command is quick on them."""
AXIS = ["--axis", "tiers.1.keep_messages=8,16"]


@contextmanager
def new_project(folder: Path) -> Iterator[Path]:
    """``folder`` made a project as the ``project`` fixture makes one (the two logs under
    ``logs/``, no cache in the environment) and the current folder while inside: for the
    session fixtures that prepare a state once per worker, which each test copies over its own
    ``project`` (the commands store paths relative to the project, so the copy is the same
    project)."""
    from replay.layout import CACHE_ENV

    (folder / "logs").mkdir(parents=True)
    for log in SMALL:
        shutil.copy(log, folder / "logs" / log.name)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.delenv(CACHE_ENV, raising=False)
        yield folder


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (symlinks as their target) with a digest of its bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _invoke(args: list[str]) -> Result:
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def _one_error_line(result: Result) -> str:
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def _run_json(args: list[str]) -> list[dict[str, object]]:
    result = _invoke([*args, "--json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def _sweep(extra: list[str] = ()) -> dict[str, object]:  # type: ignore[assignment]
    result = _invoke(["sweep", "logs", "-p", "two-tier-corrected", *AXIS, "--out", "o", "-q",
                      "--jobs", "1", "--no-plots", "--json", *extra])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc
