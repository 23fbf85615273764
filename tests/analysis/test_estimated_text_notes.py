"""Redacted text sized by its declared length (``replay.ingest.redaction``: an estimate) is
said by every command that gives figures made of it, as the other estimates are: only
``replay runs`` (estimated_blocks) and ``calibrate`` (points_estimated) said it, so a replay
of a redacted Codex rollout, every token of it an estimate, carried no word of it in ``run``,
``diff``, ``sweep``, ``check`` or the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import REPO, SAMPLES

runner = CliRunner()
REDACTED = SAMPLES / "codex" / "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
PLAIN = REPO / "logs" / "write-heavy.jsonl"
NOTE = re.compile(r"([\d,]+) block\(s\) in ([\d,]+) run\(s\) are sized as estimates")


def _markers(path: Path) -> int:
    """Redaction markers with a declared length in the log, counted by hand."""
    return len(re.findall(r"\[REDACTED_[A-Z]+ len=\d+", path.read_text()))


def test_run_diff_sweep_check_and_report_say_the_estimated_text(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "c")]
    runs = json.loads(runner.invoke(app, ["ingest", str(REDACTED), "--out", str(tmp_path / "d"),
                                          "--json"]).stdout)
    assert runs["runs"] == 1
    (row,) = json.loads(runner.invoke(app, ["runs", str(tmp_path / "d"), "--json"]).stdout)
    blocks = row["estimated_blocks"]
    assert 0 < blocks <= _markers(REDACTED)
    said = f"{blocks:,} block(s) in 1 run(s) are sized as estimates (redacted text"
    got = runner.invoke(app, ["run", str(REDACTED), "-p", "none", "--out", str(tmp_path / "o"),
                              *cache])
    assert said in " ".join(got.stderr.split()), got.stderr
    assert any(said in n for n in json.loads((tmp_path / "o" / "summary.json").read_text())[
        "notes"])
    diff = json.loads(runner.invoke(app, ["diff", str(REDACTED), "-p", "none", "-p",
                                          "two-tier-corrected", "--json", *cache]).stdout)
    assert diff["estimated_text_blocks"] == {row["run_id"]: blocks}
    sweep = json.loads(runner.invoke(app, [
        "sweep", str(REDACTED), "-p", "two-tier-corrected", "--axis",
        "tiers.1.trigger.at_tokens=40000,80000", "--out", str(tmp_path / "s"), "--no-plots",
        "--jobs", "1", "--json", *cache]).stdout)
    assert sweep["estimated_text_blocks"] == {row["run_id"]: blocks}
    base = ["check", str(REDACTED), "-p", "none", "--baseline", str(tmp_path / "b.json"), *cache]
    assert runner.invoke(app, [*base, "--update-baseline"]).exit_code == 0
    check = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    assert any(said in n for n in check["notes"])
    assert runner.invoke(app, ["report", str(REDACTED), "-p", "none", "--out",
                               str(tmp_path / "r"), "--max-timelines", "0", *cache]
                         ).exit_code == 0
    assert said in (tmp_path / "r" / "report.md").read_text()


def test_a_log_with_no_redacted_text_says_none(tmp_path: Path) -> None:
    got = runner.invoke(app, ["run", str(PLAIN), "-p", "none", "--out", str(tmp_path / "o"),
                              "--cache-dir", str(tmp_path / "c")])
    assert got.exit_code == 0 and not NOTE.search(got.stderr)
