"""Tables that fit the terminal (``replay.cli.tables``; issue 16 item 6): no line wider than
``COLUMNS``, numbers never split, every run shown by its source path, a totals row, and
``--columns`` / ``--wide`` / ``--csv`` for the rest."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.tables import fit

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "logs"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tables") / "ds"
    assert runner.invoke(app, ["ingest", str(LOGS), "--out", str(out), "-q"]).exit_code == 0
    return out


def _sources() -> list[str]:
    return sorted(p.relative_to(LOGS).as_posix() for p in LOGS.rglob("*.jsonl"))


def _invoke(args: list[str], columns: int) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_runs_run_and_diff_fit_the_width(dataset: Path, tmp_path: Path, columns: int) -> None:
    outputs = {
        "runs": _invoke(["runs", str(dataset)], columns),
        "run": _invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                        str(tmp_path / "o"), "-q"], columns),
        "diff": _invoke(["diff", str(dataset), "-p", "two-tier-original", "-p",
                         "two-tier-corrected", "-q"], columns),
    }
    for name, text in outputs.items():
        widest = max(len(line) for line in text.splitlines())
        assert widest <= columns, f"{name}: a line of {widest} characters at COLUMNS={columns}"


def test_every_run_shows_its_source_and_numbers_are_whole(dataset: Path, tmp_path: Path) -> None:
    text = _invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                    str(tmp_path / "o"), "-q"], 100)
    rows = json.loads(_invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                               str(tmp_path / "o"), "-q", "--json"], 100))
    for source in _sources():
        assert source in text or source[:20] in text  # shortened only at its end
    for r in rows:  # every number of the default columns printed whole, on one line
        for col in ("n_requests", "tokens_sent", "peak_tokens", "overshoots_n"):
            assert f"{r[col]:,}" in text, (col, r[col])
    total_line = next(line for line in text.splitlines() if "total (" in line)
    assert f"{sum(r['tokens_sent'] for r in rows):,}" in total_line  # an independent sum
    assert f"{sum(r['n_requests'] for r in rows):,}" in total_line
    assert f"{max(r['peak_tokens'] for r in rows):,}" in total_line


def test_columns_wide_and_csv(dataset: Path) -> None:
    picked = _invoke(["runs", str(dataset), "--columns", "source,messages"], 100)
    header = next(line for line in picked.splitlines() if "source" in line)
    assert "messages" in header and "model" not in header
    wide = _invoke(["runs", str(dataset), "--wide"], 100)
    assert "coverage" in wide and "run_id" in wide
    rows = list(csv.DictReader(io.StringIO(_invoke(["runs", str(dataset), "--csv"], 100))))
    assert sorted(r["source"] for r in rows) == _sources()
    assert {"run_id", "coverage", "tokens"} <= set(rows[0])
    bad = runner.invoke(app, ["runs", str(dataset), "--columns", "sourc"])
    assert bad.exit_code == 2 and "source" in bad.output


def test_hidden_columns_are_said(dataset: Path) -> None:
    text = _invoke(["runs", str(dataset), "--columns",
                    "source,model,requests,tokens,recorded_input_tokens,compactions,tool_calls"],
                   60)
    assert "not shown" in text and "--wide" in text
    assert max(len(line) for line in text.splitlines()) <= 60


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=12), st.booleans(),
                          st.lists(st.integers(0, 80), min_size=3, max_size=3)),
                min_size=1, max_size=8),
       st.integers(30, 200))
def test_fit_never_exceeds_the_width_and_keeps_numbers_whole(cols, width: int) -> None:
    header = [f"{name}{i}" for i, (name, _, _) in enumerate(cols)]
    numeric = [n for _, n, _ in cols]
    cells = [["9" * lens[r] if numeric[i] else "x" * lens[r] for i, (_, _, lens) in
              enumerate(cols)] for r in range(3)]
    keep, dropped, widths = fit(header, cells, numeric, width)
    assert keep and sorted(keep) == keep
    assert [header[i] for i in range(len(header)) if i not in keep] == dropped
    used = 1 + sum(3 + (max(len(header[i]), *(len(r[i]) for r in cells)) if numeric[i]
                        else widths[i]) for i in keep)
    if len(keep) > 1:  # one column too wide on its own is shown anyway (and cut by rich)
        assert used <= width

