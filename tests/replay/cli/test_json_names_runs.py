"""Every --json row that is a run's names it by its label and keeps its run id beside it
(README, "Run labels"): replay run --json dropped run_id (and format, policy: every column
is printed as data there, as --csv does), diff --json named runs by their id alone.  The labels
and ids are checked against the labels of the dataset's own runs table."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store
from replay.ingest.run_label import run_labels

REPO = Path(__file__).resolve().parents[3]
LOGS = [REPO / "logs" / "write-heavy.jsonl", REPO / "logs" / "scenarios" / "big-output-at-limit.jsonl"]


def _json(*args: str) -> object:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _labels(cache: Path) -> dict[str, str]:
    """run id → label, from the runs the project cache's dataset holds."""
    return run_labels(store.read_store(cache / "dataset").runs)


def test_run_and_diff_json_keep_the_run_id_beside_the_label(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    common = ["-q", *map(str, LOGS), "--cache-dir", str(cache)]
    rows = _json("run", *common, "-p", "none", "--json", "--out", str(tmp_path / "o"))
    labels = _labels(cache)
    assert isinstance(rows, list) and len(rows) == len(LOGS) == len(labels)
    assert {r["run_id"]: r["run"] for r in rows} == labels
    assert {r["policy"] for r in rows} == {"none"} and {r["format"] for r in rows} == {"claude_code"}
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [r["run_id"] for r in summary["runs"]] == [r["run_id"] for r in rows]
    diff = _json("diff", *common, "-p", "none", "-p", "two-tier-corrected", "--json")
    assert isinstance(diff, dict)
    per_run = [r for r in diff["rows"] if r["scope"] == "run"]
    assert per_run and all(r["run"] == labels[r["run_id"]] for r in per_run)
    assert {r["run"] for r in diff["rows"] if r["scope"] == "total"} == {"(all runs)"}


def test_counts_in_titles_agree_in_number(tmp_path: Path) -> None:
    """'none: 1 runs', 'created baseline 1 runs × 1 policies': one run is one run."""
    one = str(LOGS[0])
    result = CliRunner().invoke(app, ["run", "-q", one, "-p", "none", "--out", str(tmp_path / "o"),
                                      "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0 and "none: 1 run →" in result.output, result.output
    result = CliRunner().invoke(app, ["check", "-q", one, "-p", "none", "--baseline",
                                      str(tmp_path / "b.json"), "--update-baseline",
                                      "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "1 run × 1 policy × " in " ".join(result.output.split())
