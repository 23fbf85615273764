"""Usage errors and help text of every command (issue #16 items 6 and 10)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayInputError
from replay.ingest import ingest
from replay.parsers import PARSERS

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "logs" / "compacting-session.jsonl"
_COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
_WITH_FORMAT = sorted(name for name, cmd in _COMMANDS.items()
                      if any("--format" in p.opts for p in cmd.params))


def _args(name: str, tmp_path: Path) -> list[str]:
    """The least each command needs besides --format."""
    extra = {"ingest": ["--out", str(tmp_path / "d")], "check": ["--baseline",
                                                                 str(tmp_path / "b.json")]}
    policy = [] if name in ("ingest", "inspect", "calibrate") else ["-p", "none"]
    return [name, str(LOG), *policy, *extra.get(name, [])]


def test_every_command_that_reads_logs_takes_format() -> None:
    assert {"ingest", "run", "calibrate", "report", "diff", "sweep", "inspect"} <= set(
        _WITH_FORMAT)


@pytest.mark.parametrize("name", _WITH_FORMAT)
def test_an_unknown_format_is_a_usage_error_listing_the_formats(name: str,
                                                                tmp_path: Path) -> None:
    result = runner.invoke(app, [*_args(name, tmp_path), "--format", "claud"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "'claud' is not a format" in text
    for fmt in PARSERS:
        assert fmt in text
    assert not (tmp_path / "out").exists() and not (tmp_path / "d").exists()


def test_the_library_refuses_an_unknown_format_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ReplayInputError, match="unknown format 'claud'; one of claude_code"):
        ingest([LOG], tmp_path / "d", fmt="claud")
    assert not (tmp_path / "d").exists()


def test_a_known_format_is_still_taken(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(LOG), "--format", "claude_code"])
    assert result.exit_code == 0, result.output
