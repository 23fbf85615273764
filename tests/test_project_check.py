"""The project's own regression gate: ``replay check`` on ``logs/`` against the committed baseline.

A change to the engine, the analyses, a preset or the embedded corpus that moves any number
must come with the updated baseline in the same commit.  To update it (and review the diff
it prints), run the command in ``README.md`` with ``--update-baseline``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("two-tier-original", "two-tier-corrected", "corecoder", "claude-code")
COMMAND = ("replay check logs/ " + " ".join(f"-p {p}" for p in POLICIES)
           + " --baseline baselines/logs.json --tolerances baselines/tolerances.yaml --strict-logs")
"""Exactly what this test runs (from the repository root), as the README states it."""


def test_logs_hold_their_committed_baseline(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    args = [*COMMAND.split()[1:], "--out", str(tmp_path), "--junit", str(tmp_path / "check.xml"),
            "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (
        f"{result.output}\nThe baseline no longer matches. If the change is intended, run\n"
        f"    {COMMAND} --update-baseline\nreview the diff it prints and commit "
        f"baselines/logs.json with the change.")
    assert result.output.startswith("check: PASS — ")


def test_the_readme_states_the_gate_command() -> None:
    assert COMMAND in (REPO / "README.md").read_text()
