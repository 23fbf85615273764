"""``--run`` takes a source path, the path with its folder, a glob or a run id
(``replay.run_select``; issue 16 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayInputError
from replay.run_select import select_runs

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
IDS = ["a-0", "b-0", "c-0"]
SOURCES = ["write-heavy.jsonl", "scenarios/x.jsonl", "scenarios/y.jsonl"]


@pytest.mark.parametrize(("wanted", "want"), [
    (["scenarios/x.jsonl"], ["b-0"]),
    (["logs/scenarios/x.jsonl"], ["b-0"]),
    (["scenarios/*"], ["b-0", "c-0"]),
    (["a-0"], ["a-0"]),
    (["*.jsonl"], IDS),
    (["c-0", "write-heavy.jsonl"], ["a-0", "c-0"]),
])
def test_select_runs(wanted: list[str], want: list[str]) -> None:
    assert select_runs(IDS, SOURCES, wanted, [Path("logs")]) == want


def test_a_value_naming_no_run_is_an_error_with_the_closest() -> None:
    with pytest.raises(ReplayInputError, match="scenarios/x.jsonl"):
        select_runs(IDS, SOURCES, ["scenarios/x.json"])


def test_diff_takes_a_source_path_and_a_glob(tmp_path: Path) -> None:
    args = ["diff", str(REPO / "logs"), "-p", "two-tier-original", "-p", "two-tier-corrected",
            "--cache-dir", str(tmp_path), "-q", "--json"]
    one = runner.invoke(app, [*args, "--run", "write-heavy.jsonl"])
    assert one.exit_code == 0, one.output
    runs = {r["run_id"] for r in json.loads(one.stdout)["rows"] if r["scope"] == "run"}
    assert len(runs) == 1
    many = runner.invoke(app, [*args, "--run", "scenarios/*"])
    assert many.exit_code == 0, many.output
    n_scenarios = len(list((REPO / "logs" / "scenarios").glob("*.jsonl")))
    assert len({r["run_id"] for r in json.loads(many.stdout)["rows"]
                if r["scope"] == "run"}) == n_scenarios
    bad = runner.invoke(app, [*args, "--run", "write-hevy.jsonl"])
    assert bad.exit_code == 2 and "write-heavy.jsonl" in bad.output


@pytest.mark.parametrize(("wanted", "want"), [
    (["x[1].jsonl"], ["a-0"]),  # the file of that name, not also x1.jsonl
    (["x[1].jsonl — A title"], ["a-0"]),  # its label
    (["x[12].jsonl"], ["b-0"]),  # no run of that name: a glob, x1.jsonl
    (["x*"], ["a-0", "b-0"]),
])
def test_a_value_naming_a_run_as_it_is_is_no_glob(wanted: list[str], want: list[str]) -> None:
    """``--run 'x[1].jsonl'`` selected x1.jsonl as well (the name read as a character class):
    a diff or report over a run the user never named, without a word."""
    got = select_runs(["a-0", "b-0"], ["x[1].jsonl", "x1.jsonl"], wanted,
                      labels=["x[1].jsonl — A title", "x1.jsonl — B"])
    assert got == want
