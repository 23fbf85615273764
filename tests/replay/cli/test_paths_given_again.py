"""A log path given again (``a.jsonl a.jsonl``, ``a.jsonl ./a.jsonl``, a folder and a file in it)
is read once, one run (``replay.ingest.discover``): that was silent, so the user who named two
inputs got one run with no word.  Every command that takes log paths now says it on stderr
(``discovery_said``, from the shared ``replay.cli.inputs._discover``) and counts it in its
``--json`` ``inputs`` (``paths_repeated_n``, the same line among ``messages``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.discover import discover

_ODD = "\x1b[31ma.jsonl"
"""A name with a terminal escape: said escaped, as any name from the disk is."""


@pytest.fixture()
def logs(samples: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in (_ODD, "b.jsonl"):
        shutil.copy(samples / "claude-code" / "tool_heavy.jsonl", folder / name)
    return folder


def _cases(logs: Path) -> list[tuple[list[str], int]]:
    """(paths, how many of them are reached again): an independent count by hand."""
    a, b = str(logs / _ODD), str(logs / "b.jsonl")
    dotted = str(logs / "." / _ODD)
    return [([a, a], 1), ([a, dotted], 1), ([str(logs), a], 1), ([str(logs), a, b], 2),
            ([a, a, a], 2), ([str(logs), str(logs)], 2), ([a, b], 0)]


def test_discover_counts_every_path_reached_again(logs: Path) -> None:
    for paths, n in _cases(logs):
        again: list[tuple[Path, Path]] = []
        found = discover([Path(p) for p in paths], repeated=again)
        assert len(again) == n, paths
        assert len(found) + n == sum(2 if Path(p).is_dir() else 1 for p in paths), paths


def _note(n: int) -> str:
    return f"note: {n} input path{'s' if n > 1 else ''} given again, read once ("


@pytest.mark.parametrize("command", ["ingest", "run", "calibrate"])
def test_every_command_says_a_path_given_again(logs: Path, tmp_path: Path, command: str) -> None:
    paths, n = [str(logs), str(logs / _ODD)], 1
    args = {"ingest": ["ingest", *paths, "--out", str(tmp_path / "ds")],
            "run": ["run", "-p", "none", *paths, "--cache-dir", str(tmp_path / "c"), "--out",
                    str(tmp_path / "o")],
            "calibrate": ["calibrate", *paths, "--cache-dir", str(tmp_path / "c")]}[command]
    result = CliRunner().invoke(app, [*args, "-q"] if command != "calibrate" else args)
    assert result.exit_code == 0, result.output
    assert _note(n) in result.stderr and "\x1b" not in result.stderr
    assert "\\x1b[31ma.jsonl" in result.stderr


@pytest.mark.parametrize("command", ["ingest", "calibrate", "redact"])
def test_json_inputs_count_it(logs: Path, tmp_path: Path, command: str) -> None:
    a = str(logs / _ODD)
    args = {"ingest": ["ingest", a, a, a, "--out", str(tmp_path / "ds")],
            "calibrate": ["calibrate", a, a, a, "--cache-dir", str(tmp_path / "c"),
                          "--compactions"],
            "redact": ["redact", a, a, a, "--out", str(tmp_path / "r")]}[command]
    result = CliRunner().invoke(app, [*args, "--json", "-q"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["inputs"]["paths_repeated_n"] == 2
    assert any(m.startswith(_note(2)) for m in doc["inputs"]["messages"])
    if command == "ingest":
        assert doc["repeated"] == [[a, a], [a, a]] and doc["parsed"] == 1


def test_nothing_is_said_when_no_path_is_given_again(logs: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"),
                                      "--json"])
    doc = json.loads(result.stdout)
    assert doc["inputs"]["paths_repeated_n"] == 0 and "given again" not in result.stderr
