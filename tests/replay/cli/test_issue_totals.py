"""The totals row of ``replay runs`` and ``replay run`` counts the issues stored for the logs
(``source_issues_n``) once per log file, as the ingest counts them.

The column is a value of a run's log file, repeated in the row of each of its runs: ``replay
runs`` summed it over the rows (a file of two runs and one issue: 2), and ``replay run`` left
its total blank.  Checked against the ingest's own count of the files' issues (its summary
line), on a fixture file holding two runs (a session and its integrated sidechain)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_code"
TWO_RUNS = FIXTURES / "ccl-sidechain-integrated-2.0.46.jsonl"  # 2 runs, its issue in both rows
ONE_RUN = FIXTURES / "handmade_2_1_attachments_microcompact.jsonl"  # 1 run

runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A dataset of the two files, and the issues its ingest counted."""
    d = tmp_path_factory.mktemp("issues")
    (d / "logs").mkdir()
    for f in (TWO_RUNS, ONE_RUN):
        shutil.copy(f, d / "logs" / f.name)
    res = runner.invoke(app, ["ingest", str(d / "logs"), "--out", str(d / "ds"), "-q"])
    assert res.exit_code == 0, res.output
    said = re.search(r"(\d+) runs from 2 files parsed, .* (\d+) issues", res.output)
    assert said, res.output
    assert int(said[1]) == 3  # the file of two runs, and the other
    return d / "ds", int(said[2])


def _total(output: str, column: str) -> str:
    """The totals row's cell of ``column`` in a printed table."""
    lines = output.splitlines()
    head = next(line for line in lines if line.startswith("┃"))
    total = next(line for line in lines if line.startswith("│ total ("))
    names = [c.strip() for c in head.strip("┃").split("┃")]
    return [c.strip() for c in total.strip("│").split("│")][names.index(column)]


def test_runs_totals_each_files_issues_once(dataset: tuple[Path, int]) -> None:
    ds, issues = dataset
    rows = runner.invoke(app, ["runs", str(ds), "--json"])
    per_row = [r["source_issues_n"] for r in json.loads(rows.stdout)]
    assert sum(per_row) > issues > 0  # the file of two runs' issues are in both its rows
    res = runner.invoke(app, ["runs", str(ds), "--columns", "run,source,source_issues_n"],
                        env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert _total(res.stdout, "source_issues_n") == f"{issues:,}"


def test_run_totals_each_files_issues_once(dataset: tuple[Path, int], tmp_path: Path) -> None:
    ds, issues = dataset
    for how in (["--wide"], ["--columns", "run,n_requests,source_issues_n"]):
        res = runner.invoke(app, ["run", str(ds), "-p", "none", "--out", str(tmp_path / "o"),
                                  "-q", *how], env={"COLUMNS": "300"})
        assert res.exit_code == 0, res.output
        assert _total(res.stdout, "source_issues_n") == f"{issues:,}", how


def test_a_total_per_file_is_unknown_when_a_row_names_no_file() -> None:
    from replay.cli.tables import Layout, totals_row

    layout = Layout(totals={"n": "per_source"})
    rows = [{"source": "a", "n": 2}, {"source": "a", "n": 2}, {"source": "b", "n": 1}]
    assert totals_row(rows, ["source", "n"], layout)["n"] == 3
    assert totals_row([*rows, {"source": "", "n": 0}], ["source", "n"], layout)["n"] is None
    # two rows of one file that disagree: no figure is chosen between them
    assert totals_row([*rows, {"source": "b", "n": 5}], ["source", "n"], layout)["n"] is None
    assert totals_row([*rows, {"source": "c", "n": None}], ["source", "n"], layout)["n"] is None
