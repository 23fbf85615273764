"""``replay sql``'s row limit: a table shows what it can print and says there was more; the
query stops once the rows asked for are read (``select range from range(1e11)`` ran until
killed and a huge result was printed whole)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

pytest.importorskip("duckdb")
runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
LOG = REPO / "logs" / "compacting-session.jsonl"
# endless rows, and one that fails past the ten millionth: reading on that far is an error
ENDLESS = ("SELECT range AS n, CASE WHEN range >= 10000000 THEN error('read on past 10^7') "
           "END AS past FROM range(100000000000)")


def _sql(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    done = runner.invoke(app, ["sql", *args, str(LOG), "--cache-dir", str(tmp_path / "c"),
                               "-q"])
    return done.exit_code, done.stdout, " ".join(done.stderr.split())


def test_a_table_stops_the_query_at_the_rows_it_shows(tmp_path: Path) -> None:
    code, out, err = _sql(tmp_path, ENDLESS)
    assert code == 0, out + err
    shown = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert shown[0] == "0" and shown[-1] == "499" and len(shown) == 500
    assert "first 500 rows (more not shown)" in " ".join(out.split())
    assert ("note: the first 500 rows; the query gives more (--limit N for N, --limit 0 for "
            "all; --csv and --json print all)") in err


@pytest.mark.parametrize("fmt", ["--csv", "--json", None])
def test_limit_caps_every_output_and_says_so(tmp_path: Path, fmt: str | None) -> None:
    code, out, err = _sql(tmp_path, ENDLESS, "--limit", "3", *([fmt] if fmt else []))
    assert code == 0, out + err
    if fmt == "--json":
        assert [r["n"] for r in json.loads(out)] == [0, 1, 2]
    elif fmt == "--csv":
        assert out.splitlines() == ["n,past", "0,", "1,", "2,"]
    else:
        assert "first 3 rows (more not shown)" in " ".join(out.split())
    assert "note: the first 3 rows; the query gives more (--limit N for N, --limit 0 for all)" \
        in err


# an export writes its rows as it reads them (tests/replay/test_sql_stream.py): endless rows
# failing past 10^7 would be written up to there; this one fails past 25,000 (beyond a batch,
# within what DuckDB computes ahead of the first fetch)
FAILS_LATE = ("SELECT range AS n, CASE WHEN range >= 25000 THEN error('read on past 25000') "
              "END AS past FROM range(100000000000)")


@pytest.mark.parametrize("args", [["--csv"], ["--json"], ["--limit", "0"]])
def test_an_export_or_limit_0_reads_every_row(tmp_path: Path, args: list[str]) -> None:
    export = args != ["--limit", "0"]
    code, out, err = _sql(tmp_path, FAILS_LATE if export else ENDLESS, *args)  # every row:
    assert code == 2 and ("read on past 25000" if export else "read on past 10^7") in err, \
        out[-300:] + err  # on past the last row asked for, the error
    code, out, err = _sql(tmp_path, "SELECT range AS n FROM range(600)", *args)
    assert code == 0 and "more" not in err, err
    if args == ["--csv"]:
        assert out.splitlines()[1:] == [str(n) for n in range(600)]
    elif args == ["--json"]:
        assert [r["n"] for r in json.loads(out)] == list(range(600))
    else:  # all read; the table shows what fits, as every table
        assert "… 100 more rows not shown" in out


def test_a_result_of_exactly_the_limit_says_nothing_more(tmp_path: Path) -> None:
    code, out, err = _sql(tmp_path, "SELECT range AS n FROM range(3)", "--limit", "3")
    assert code == 0 and "3 rows" in " ".join(out.split()) and "more" not in out + err


def test_a_negative_limit_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = _sql(tmp_path, "SELECT 1", "--limit", "-1")
    assert code == 2 and "--limit" in out + err
