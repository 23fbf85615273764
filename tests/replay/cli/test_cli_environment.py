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


def test_a_document_over_its_limit_names_the_variable_that_raises_it(tmp_path: Path) -> None:
    """With ``CTXREPLAY_MAX_DOCUMENT_BYTES`` below a dataset's manifest, a baseline or a run's
    summary, the refusal said "raise it with CTXREPLAY_MAX_FILE_BYTES" (which does not raise
    it), and called the dataset damaged, to be removed."""
    from typer.testing import CliRunner

    from replay.cli import app
    from tests.conftest import SAMPLES

    runner = CliRunner()
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "s.jsonl").write_bytes((SAMPLES / "claude-code" / "short.jsonl").read_bytes())
    baseline, cache, out = tmp_path / "b.json", tmp_path / "c", tmp_path / "o"
    made = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                               "--update-baseline", "--out", str(cache), "-q"])
    assert made.exit_code == 0, made.output
    assert runner.invoke(app, ["run", "-p", "none", str(logs), "--out", str(out), "--cache-dir",
                               str(cache), "-q"]).exit_code == 0
    for argv, what in ((["runs", str(cache / "dataset")], "manifest.json"),
                       (["check", str(logs), "-p", "none", "--baseline", str(baseline), "--out",
                         str(cache), "-q"], "b.json"),
                       (["diff", "--traces", str(out), str(out)], "summary.json")):
        got = runner.invoke(app, argv, env={"CTXREPLAY_MAX_DOCUMENT_BYTES": "100"})
        assert got.exit_code == 2, (argv, got.output)
        assert what in got.stderr and "over the 100-byte limit of a JSON document read whole" \
            in got.stderr and "CTXREPLAY_MAX_DOCUMENT_BYTES=BYTES" in got.stderr, got.stderr
        assert "MAX_FILE_BYTES" not in got.stderr and "damaged" not in got.stderr, got.stderr
