"""``--csv`` prints one CSV table on stdout and nothing else: every line a row of the header's
width.  ``fidelity --csv`` printed its eight totals lines after the rows, ``calibrate
--compactions --csv`` its ``restore:`` and ``fitted from:`` lines, ``redact --csv`` its
summary line and its note (the note on stdout even without --csv): each a row of prose to a
CSV reader.  They go to stderr with --csv, as ``check``'s verdict does."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "compacting-session.jsonl"
CLAUDE = SAMPLES / "claude-code"


@pytest.mark.parametrize("args", [
    ["fidelity", str(CLAUDE / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"),
     str(CLAUDE / "tool_heavy.jsonl")],
    ["calibrate", str(CLAUDE / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"),
     str(CLAUDE / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"), "--compactions"],
    ["redact", str(LOG), "--out", "{tmp}/archive"],
    ["runs", "{tmp}/ds"],
], ids=["fidelity", "calibrate-compactions", "redact", "runs"])
def test_csv_is_one_table_on_stdout(tmp_path: Path, args: list[str]) -> None:
    if args[0] == "runs":
        assert runner.invoke(app, ["ingest", str(LOG), "--out", str(tmp_path / "ds")]
                             ).exit_code == 0
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = runner.invoke(app, [*args, "--csv", "--cache-dir", str(tmp_path / "c")]
                           if args[0] in ("fidelity", "calibrate") else [*args, "--csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert len(rows) >= 2, result.stdout
    assert {len(r) for r in rows} == {len(rows[0])}, result.stdout
    if args[0] == "redact":
        assert "note: a replay of the archive" in result.stderr


def test_redact_notes_go_to_stderr(tmp_path: Path) -> None:
    result = runner.invoke(app, ["redact", str(LOG), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "note:" not in result.stdout and "note: a replay of the archive" in result.stderr


def test_diff_csv_is_every_row_with_its_numbers(tmp_path: Path) -> None:
    """``diff --csv`` printed the table's text: the first --top rows per section, numbers as
    shown ("784,418", "from 0"), and with nothing changed the title as its one line.  It is
    now --json's rows, every one, numbers as numbers."""
    cache = ["--cache-dir", str(tmp_path / "c")]
    args = ["diff", str(LOG), "-p", "none", "-p", "two-tier-corrected", *cache]
    got = runner.invoke(app, [*args, "--csv"])
    assert got.exit_code == 0, got.output
    rows = list(csv.DictReader(io.StringIO(got.stdout)))
    records = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["rows"]
    assert len(rows) == len(records) > 20
    for row, record in zip(rows, records):
        assert row["metric"] == record["metric"] and row["run_id"] == record["run_id"]
        for key in ("a", "b", "delta", "rel_delta"):
            assert (float(row[key]) if row[key] else None) == record[key]
    (tmp_path / "none2.yaml").write_text("name: none2\nextends: none\n")
    same = runner.invoke(app, ["diff", str(LOG), "-p", "none", "-p", str(tmp_path / "none2.yaml"),
                               *cache, "--csv"])
    assert same.exit_code == 0, same.output
    lines = list(csv.reader(io.StringIO(same.stdout)))
    assert lines[0][:4] == ["scope", "run", "run_id", "metric"]
    assert {len(r) for r in lines} == {len(lines[0])}


def test_check_json_and_csv_give_the_numbers(tmp_path: Path) -> None:
    """``check --json``'s moved rows and ``check --csv`` were the table's text: "138,868",
    "+138,863 (+2,777,260.0%)" (and --csv only the first 40 rows): a CI job could not read a
    figure back.  Now the baseline and current values as numbers, with their delta."""
    base, cache = tmp_path / "b.json", ["--cache-dir", str(tmp_path / "c")]
    args = ["check", str(LOG), "-p", "none", "--baseline", str(base), *cache]
    assert runner.invoke(app, [*args, "--update-baseline"]).exit_code == 0
    doc = json.loads(base.read_text())
    (key, values), = doc["policies"]["none"]["runs"].items()
    sent = values["tokens_sent"]
    values["tokens_sent"] = 1000
    base.write_text(json.dumps(doc))
    got = runner.invoke(app, [*args, "--json"])
    assert got.exit_code == 1, got.output
    (row,) = [r for r in json.loads(got.stdout)["moved"] if r["metric"] == "tokens_sent"]
    assert (row["baseline"], row["current"], row["delta"]) == (1000, sent, sent - 1000)
    assert row["run_key"] == key and row["status"] == "regressed"
    got = runner.invoke(app, [*args, "--csv"])
    (row,) = [r for r in csv.DictReader(io.StringIO(got.stdout)) if r["metric"] == "tokens_sent"]
    assert (int(row["baseline"]), int(row["current"]), int(row["delta"])) == (1000, sent,
                                                                              sent - 1000)


def test_update_baseline_json_and_csv_give_the_numbers(tmp_path: Path) -> None:
    """``check --update-baseline --json``'s changes were text ('old': '1,000', 'new':
    '15,776,207'), and its --csv the first 200 of them as text."""
    base, cache = tmp_path / "b.json", ["--cache-dir", str(tmp_path / "c")]
    args = ["check", str(LOG), "-p", "none", "--baseline", str(base), *cache,
            "--update-baseline"]
    assert runner.invoke(app, args).exit_code == 0
    doc = json.loads(base.read_text())
    (values,) = doc["policies"]["none"]["runs"].values()
    sent, values["tokens_sent"] = values["tokens_sent"], 1000
    edited = json.dumps(doc)
    for fmt in ("--json", "--csv"):
        base.write_text(edited)
        got = runner.invoke(app, [*args, fmt])
        assert got.exit_code == 0, got.output
        rows = (json.loads(got.stdout)["changes"] if fmt == "--json"
                else list(csv.DictReader(io.StringIO(got.stdout))))
        (row,) = [r for r in rows if r["where"].endswith("/ tokens_sent")]
        assert (int(row["old"]), int(row["new"])) == (1000, sent), row
