"""stdout and stderr on one pipe (``replay runs ds --csv 2>&1 | less``) come in the order the
command wrote them: a warning or note said after the rows is read after them.

On a pipe Python buffers stdout in blocks and not stderr; ``--csv`` and ``--json`` are written
through ``sys.stdout`` (rich's consoles flush their own prints, not it), so a note said after the
rows came out before them.  Run in a fresh process without ``PYTHONUNBUFFERED`` (which this
workplace's shell sets, and which hides it): the user's shell does not set it."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "test-fix-loop.jsonl"


def _merged(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    """``replay ARGS 2>&1``, as lines, in a process whose stdout is block-buffered."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env["CI"] = "1"
    got = subprocess.run([sys.executable, "-m", "replay", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env, check=False)
    return got.returncode, got.stdout.splitlines()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of one good log and one that no parser reads (a warning at ingest, a failed
    file in the summary line), and a dataset ingested from it (which remembers the failure)."""
    d = tmp_path_factory.mktemp("order")
    (d / "logs").mkdir()
    shutil.copy(LOG, d / "logs" / LOG.name)
    (d / "logs" / "broken.jsonl").write_text('{"not json\n')
    code, lines = _merged(["ingest", "logs", "--out", "ds", "-q"], d)
    assert code == 1, lines
    return d


def _index(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


@pytest.mark.parametrize("fmt", ["--csv", "--json"])
def test_runs_warns_after_its_rows(mixed: Path, fmt: str) -> None:
    code, lines = _merged(["runs", "ds", fmt], mixed)
    assert code == 0, lines
    rows_end = max(i for i, line in enumerate(lines) if LOG.name in line)
    assert _index(lines, "warning: 1 input file failed at ingest") > rows_end, lines


def test_calibrate_says_its_failed_input_after_its_rows(mixed: Path) -> None:
    code, lines = _merged(["calibrate", "logs", "--csv", "--cache-dir", "cache"], mixed)
    assert code == 1, lines
    # the ingest's warning comes before the rows (it is said before they are made), the
    # summary of failed inputs after them
    header = _index(lines, "run,run_id,")
    assert _index(lines, "warning: logs/broken.jsonl") < header, lines
    assert _index(lines, "inputs: 1 of 2 files failed") > header + 1, lines


def test_every_stderr_line_flushes_stdout_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one place: ``say(err=True)``, ``warn`` and ``error`` (and the progress bar) flush
    stdout before they write."""
    from replay.cli import output

    events: list[str] = []

    class Out(io.StringIO):
        def flush(self) -> None:
            events.append("flush")

    class Err(io.StringIO):
        def write(self, s: str) -> int:
            events.append("stderr")
            return len(s)

    monkeypatch.setattr(sys, "stdout", Out())
    monkeypatch.setattr(sys, "stderr", Err())
    for name in ("say", "warn", "error"):
        events.clear()
        if name == "say":
            output.say("x", err=True)
        else:
            getattr(output, name)("x")
        assert events and events[0] == "flush", (name, events)
