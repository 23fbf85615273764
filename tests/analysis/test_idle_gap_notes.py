"""Requests with no idle gap the replay can read (no timestamp, or one before the request
before) are said under diff's, sweep's and check's figures too, not only in replay run's
per-run note: the prefix cache never expires there under any policy."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from analysis.per_run.notes import unknown_gaps
from replay.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()
SAMPLE = SAMPLES / "claude-code" / "tool_heavy.jsonl"


def _messy(tmp_path: Path) -> tuple[Path, int]:
    """The real sample with its second response's records untimed and its last response's
    set back to 2020; returns the file and the requests so made (counted here)."""
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    ids = list(dict.fromkeys(r["message"]["id"] for r in records
                             if r.get("type") == "assistant" and "usage" in r["message"]))
    assert len(ids) >= 3
    for r in records:
        mid = r.get("message", {}).get("id") if isinstance(r.get("message"), dict) else None
        if mid == ids[1]:
            r.pop("timestamp", None)
        elif mid == ids[-1]:
            r["timestamp"] = "2020-01-01T00:00:00.000Z"
    path = tmp_path / "logs" / SAMPLE.name
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path, 2


def test_the_count_of_one_run() -> None:
    assert unknown_gaps([]) == (0, 0)
    assert unknown_gaps(["2026-01-01T00:00:05Z", None, "", "not a date",
                         "2026-01-01T00:00:01Z", "2026-01-01T00:00:09Z"]) == (3, 1)


def test_diff_and_check_say_them(tmp_path: Path) -> None:
    path, made = _messy(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "c")]
    got = runner.invoke(app, ["diff", str(path.parent), "-p", "none", "-p", "two-tier-corrected",
                              "--json", *cache])
    assert got.exit_code == 0, got.output
    assert list(json.loads(got.stdout)["unknown_idle_gap_requests"].values()) == [made]
    said = (f"note: {made} request(s) in 1 run(s) have no idle gap the replay can read")
    table = runner.invoke(app, ["diff", str(path.parent), "-p", "none", "-p",
                                "two-tier-corrected", *cache])
    assert said in " ".join(table.stderr.split())
    base = str(tmp_path / "b.json")
    assert runner.invoke(app, ["check", str(path.parent), "-p", "none", "--baseline", base,
                               "--update-baseline", *cache]).exit_code == 0
    checked = runner.invoke(app, ["check", str(path.parent), "-p", "none", "--baseline", base,
                                  *cache])
    assert checked.exit_code == 0, checked.output
    assert said.removeprefix("note: ") in " ".join(checked.output.split())
    plain = runner.invoke(app, ["diff", str(SAMPLE), "-p", "none", "-p", "two-tier-corrected",
                                "--json", *cache])
    assert json.loads(plain.stdout)["unknown_idle_gap_requests"] == {}
