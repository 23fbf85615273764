"""The CLI under a hostile environment: what the shell hands every command (``COLUMNS``)
never silences what it says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("columns", ["0", "00"])
def test_columns_of_zero_still_prints_every_error_and_note(tmp_path: Path, columns: str) -> None:
    """``COLUMNS=0`` made rich's stderr console 0 characters wide, and it printed nothing:
    ``replay run -p nosuch`` exited 2 without a word, warnings and notes vanished."""
    env = dict(os.environ, COLUMNS=columns,
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, "-m", "replay", "show-policy", "no-such-policy"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert got.returncode == 2
    assert "error: no-such-policy: no such file or preset" in got.stderr


def test_a_console_is_never_made_zero_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    from replay.cli.output import console_width

    class Tty:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    monkeypatch.setenv("COLUMNS", "0")
    assert (console_width(Tty()) or 0) > 0 and (console_width(None) or 0) > 0
    monkeypatch.setenv("COLUMNS", "132")
    assert console_width(Tty()) is None and console_width(None) is None  # rich reads it
    assert console_width(Pipe()) == 10_000  # a table's rows never wrapped in a pipe
