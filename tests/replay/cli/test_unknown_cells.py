"""A number a table cannot give is ``unknown``, never blank, even when no row of the table has
it: a column's kind was told from its values, so a log that recorded no usage showed blank
``recorded``, ``gap`` and ``reasoning before`` cells in ``inspect`` and blank
``overhead_tokens``, ``scale``, ``mean_abs_error`` and held-out errors in ``calibrate``, while
the same unknowns beside a known value in another row read ``unknown``.  A column with a unit
(``Layout.units``) is a number column; the others are named (``Layout.numeric``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()


def _no_usage(tmp_path: Path) -> Path:
    """The tool_heavy sample with every response's usage removed."""
    path = tmp_path / "logs" / "no-usage.jsonl"
    path.parent.mkdir()
    lines = []
    for line in (SAMPLES / "claude-code" / "tool_heavy.jsonl").read_text().splitlines():
        record = json.loads(line)
        if isinstance(record.get("message"), dict):
            record["message"].pop("usage", None)
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def _cells(output: str, first: str) -> list[list[str]]:
    """The cells of the table rows of ``output`` starting with ``first`` (the header too)."""
    return [[c.strip() for c in line.split("│" if "│" in line else "┃")[1:-1]]
            for line in output.splitlines()
            if line[:1] in "│┃" and line[1:].strip().startswith(first)]


def test_inspect_says_unknown_for_what_no_request_recorded(tmp_path: Path) -> None:
    done = runner.invoke(app, ["inspect", str(_no_usage(tmp_path)), "--wide"],
                         env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    (header,) = _cells(done.stdout, "request ")
    rows = [r for r in _cells(done.stdout, "") if len(r) == len(header) and r[0].isdigit()]
    assert header[:6] == ["request", "output msg", "counted", "recorded", "gap",
                          "reasoning before"], header
    assert len(rows) == 4  # the sample's four requests (its four usage records, gone)
    for row in rows:
        assert row[3:6] == ["unknown"] * 3, row


def test_calibrate_says_unknown_for_a_fit_it_could_not_make(tmp_path: Path) -> None:
    done = runner.invoke(app, ["calibrate", str(_no_usage(tmp_path)), "--wide",
                               "--cache-dir", str(tmp_path / "c")], env={"COLUMNS": "400"})
    assert done.exit_code == 0, done.output
    (header,) = _cells(done.stdout, "run ")
    (row,) = [r for r in _cells(done.stdout, "no-usage.jsonl")]
    got = dict(zip(header, row))
    assert got["fit"] == "none (no recorded usage)", got
    for column in ("overhead_tokens", "scale", "mean_abs_error", "held_out_fitted_error",
                   "held_out_anchored_error"):
        assert got[column] == "unknown", (column, got)
