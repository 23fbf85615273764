"""``replay sql --csv/--json`` without ``--limit`` writes the rows as DuckDB gives them, a batch
(``replay.sql.BATCH_ROWS``) at a time, never the whole result in memory (it was read whole
with ``fetchall`` first: 3 million rows of 60 bytes took 1.3 GiB for --csv, 1.9 GiB for
--json, 162 MiB streamed).  The output is the very bytes the in-memory path writes
(``--limit`` larger than the result), for a result of several batches, in order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import replay.sql
from replay.cli import app

pytest.importorskip("duckdb")
runner = CliRunner()
LOG = Path(__file__).resolve().parents[2] / "logs" / "compacting-session.jsonl"
BATCH = 1000
N = 2 * BATCH + 500  # three batches, the last one short
QUERY = (f"SELECT range AS n, 'row ' || range AS text, CASE WHEN range % 7 = 0 THEN 1.0 / 0 "
         f"ELSE range / 2 END AS x, range AS n FROM range({N})")  # (a repeated name; ±inf)


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the batches fetched, each at most ``BATCH`` rows."""
    sizes: list[int] = []
    fetch = replay.sql._batches

    def counted(cur: Any, n: int, error: type[Exception]) -> Iterator[list[tuple[Any, ...]]]:
        for batch in fetch(cur, n, error):
            sizes.append(len(batch))
            yield batch

    monkeypatch.setattr(replay.sql, "BATCH_ROWS", BATCH)
    monkeypatch.setattr(replay.sql, "_batches", counted)
    return sizes


def _sql(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    done = runner.invoke(app, ["sql", *args, str(LOG), "--cache-dir", str(tmp_path / "c"),
                               "-q"])
    return done.exit_code, done.stdout, " ".join(done.stderr.split())


@pytest.mark.parametrize("fmt", ["--csv", "--json"])
def test_a_result_of_several_batches_is_written_whole_and_in_order(
        tmp_path: Path, batches: list[int], fmt: str) -> None:
    code, out, err = _sql(tmp_path, QUERY, fmt)
    assert code == 0, err
    assert batches == [BATCH, BATCH, N - 2 * BATCH]  # streamed, never all at once
    if fmt == "--csv":
        lines = out.splitlines()
        assert lines[0] == "n,text,x,n_1" and len(lines) == N + 1
        assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(N))
        assert lines[1 + 7] == "7,row 7,inf,7"
    else:
        rows = json.loads(out)
        assert [r["n"] for r in rows] == list(range(N)) and rows[7]["x"] is None
        # the note counts every batch's NaN and ±inf, said once the rows are written
        n_inf = len(range(0, N, 7))
        assert f"note: {n_inf:,} values NaN or ±infinity printed as null" in err
    assert "note: columns of one name renamed so that none is lost: n → n_1" in err
    batches.clear()
    code, held, _ = _sql(tmp_path, QUERY, fmt, "--limit", str(10 * N))  # in memory, as before
    assert code == 0 and held == out  # the same bytes


@pytest.mark.parametrize("fmt", ["--csv", "--json"])
def test_no_rows_is_csv_or_json_too(tmp_path: Path, fmt: str) -> None:
    """A result of no rows is still the format asked for: JSON's ``[]``, and CSV's header
    line (it printed the table's ``no rows (columns: n)`` on stdout, which a CSV reader took as
    a column named ``no rows (columns: n)``), streamed or with ``--limit``; ``--columns``
    picks among the columns, as with rows."""
    query = "SELECT range AS n, '=x' AS \"=cmd\" FROM range(0)"
    code, out, _ = _sql(tmp_path, query, fmt)
    assert code == 0
    assert out == _sql(tmp_path, query, fmt, "--limit", "5")[1]
    assert out == ("[]\n" if fmt == "--json" else "n,'=cmd\n")  # (a formula's name escaped)
    if fmt == "--csv":
        assert _sql(tmp_path, query, fmt, "--columns", "n")[:2] == (0, "n\n")
        code, _, err = _sql(tmp_path, query, fmt, "--columns", "nope")
        assert code == 2 and "no column nope" in err


def test_a_query_failing_part_way_stops_there(tmp_path: Path, batches: list[int]) -> None:
    """The rows read before the failure are written, in order (how many: as far as DuckDB
    computed ahead of the fetch, none to most); the error and exit 2 say the output is not
    whole."""
    at = 400_000
    query = f"SELECT range AS n, CASE WHEN range >= {at} THEN error('boom') END AS e FROM " \
            f"range({2 * at})"
    code, out, err = _sql(tmp_path, query, "--csv")
    assert code == 2 and "error: query failed:" in err and "boom" in err, err
    lines = out.splitlines()
    assert lines[1:] == [f"{n}," for n in range(len(lines) - 1)] and len(lines) - 1 < at
    assert lines[:1] in ([], ["n,e"])
    assert all(n <= BATCH for n in batches)


@pytest.mark.parametrize("fmt", ["--csv", "--json"])
def test_a_real_query_failing_part_way_leaves_no_whole_json(tmp_path: Path, fmt: str) -> None:
    """As above, in either format, the note saying how many rows were written (none: no note,
    nothing written): --json's rows are a prefix of the result in an array left unclosed."""
    at = 400_000
    query = f"SELECT range AS n FROM range({2 * at}) WHERE CASE WHEN range >= {at} " \
            "THEN error('boom') ELSE true END"
    code, out, err = _sql(tmp_path, query, fmt)
    assert code == 2 and "boom" in err, err
    if fmt == "--json" and out:
        with pytest.raises(json.JSONDecodeError):
            json.loads(out)
        rows = [r["n"] for r in json.loads(out + "]")]
    else:
        rows = [int(line) for line in out.splitlines()[1:]]
    assert rows == list(range(len(rows))) and len(rows) < at
    assert (f"note: the query failed after {len(rows):,} rows were written" in err) == bool(rows)


@pytest.mark.parametrize(("fmt", "error", "exit_code"), [
    ("--json", "ReplayInputError", 2), ("--csv", "ReplayInputError", 2),
    ("--json", "DamagedInputError", 1), ("--csv", "DamagedInputError", 1)])
def test_a_query_failing_after_two_batches_says_the_rows_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, error: str,
        exit_code: int) -> None:
    """A failure after rows were written (here: the third fetch) is never output a reader can
    take for the whole result: --json's array is left unclosed (the rows before are whole), a
    note says how many rows were written, the error follows; exit 2 for the query's error, 1
    for a damaged input (as before the first row)."""
    import replay.errors

    fetch = replay.sql._batches

    def failing(cur: Any, n: int, err: type[Exception]) -> Iterator[list[tuple[Any, ...]]]:
        got = fetch(cur, n, err)
        yield next(got)
        yield next(got)
        raise getattr(replay.errors, error)("query failed: boom")

    monkeypatch.setattr(replay.sql, "BATCH_ROWS", BATCH)
    monkeypatch.setattr(replay.sql, "_batches", failing)
    code, out, err = _sql(tmp_path, "SELECT range AS n FROM range(10000)", fmt)
    assert code == exit_code, err
    assert "note: the query failed after 2,000 rows were written: the output stops there" in err
    assert err.index("note: the query failed") < err.index("error: query failed: boom")
    if fmt == "--json":
        with pytest.raises(json.JSONDecodeError):
            json.loads(out)
        assert [r["n"] for r in json.loads(out + "]")] == list(range(2 * BATCH))
        assert "JSON array left unclosed" in err
    else:
        assert out.splitlines() == ["n", *map(str, range(2 * BATCH))]


def test_streamed_rows_are_read_once() -> None:
    from replay.cli.sql_command import _Streamed

    rows = _Streamed(("n",), iter([[(1,), (2,)], [(3,)]]), finite=False)
    assert next(iter(rows)) == {"n": 1}  # a look at the first row, then the whole
    assert [r["n"] for r in rows] == [1, 2, 3]
    with pytest.raises(RuntimeError, match="read once"):
        list(rows)


def test_a_reader_gone_ends_the_stream_quietly(tmp_path: Path) -> None:
    """``replay sql … --csv | head -1``: the closed pipe ends the command as click ends one
    (exit 1, nothing said), not as an output that cannot be written (it said "error: Broken
    pipe", exit 2, once the rows were written as read)."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "replay", "sql",
                             "SELECT range AS n FROM range(2000000)", str(LOG), "--csv",
                             "--cache-dir", str(tmp_path / "c"), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"n\n"
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait() == 1 and b"error" not in err, err


def test_a_table_keeps_the_rows_it_shows_and_counts_the_others(tmp_path: Path,
                                                               batches: list[int]) -> None:
    """``--limit 0`` in a table: every row read, a batch at a time; the first 500 shown, the
    others counted (it held the whole result, as --csv did)."""
    code, out, err = _sql(tmp_path, QUERY, "--limit", "0")
    assert code == 0, err
    assert batches == [BATCH, BATCH, N - 2 * BATCH]
    shown = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert shown == [f"{n:,}" for n in range(500)]
    assert f"{N:,} rows" in out and f"… {N - 500:,} more rows not shown" in out
    batches.clear()
    code, out, err = _sql(tmp_path, QUERY)  # the default: 500 rows and one more, at once
    assert code == 0 and batches == [501], (batches, err)
    assert "first 500 rows (more not shown)" in " ".join(out.split())
