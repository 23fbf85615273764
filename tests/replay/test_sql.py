"""``replay sql`` (issue 27 item 5): every query docs/queries.md documents, run on the sample logs
under two policies and checked against the same figure computed with pandas from the Parquet
files (read here from the manifest and the run folders directly, not through ``replay.sql``);
the exit codes; nothing written; only the manifest's entries read.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.policy_run import run_policy_to
from replay.cli import app
from replay.corpus import Corpus, open_corpus
from replay.engine.trace import TRIM_KINDS
from replay.errors import ReplayInputError
from replay.ingest import store
from replay.policy import load_policy
from replay.sql import sql
from tests.conftest import SAMPLES

pytest.importorskip("duckdb")
REPO = Path(__file__).resolve().parents[2]
QUERIES: dict[str, str] = dict(re.findall(r"^### (\S+)\n.*?```sql\n(.*?)```",
                                          (REPO / "docs" / "queries.md").read_text(),
                                          re.DOTALL | re.MULTILINE))
POLICIES = ("two-tier-original", "two-tier-corrected")
runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, list[Path]]:
    """The samples' dataset and a ``replay run --out`` folder per policy."""
    root = tmp_path_factory.mktemp("sql")
    corpus = open_corpus([SAMPLES], cache_dir=root / "dataset")
    outs = []
    for name in POLICIES:
        outs.append(root / name)
        run_policy_to(corpus, load_policy(name), outs[-1])
    return corpus, outs


def dataset(corpus: Corpus, table: str) -> pd.DataFrame:
    """A dataset table as pandas, from the entries manifest.json lists (the store's layout)."""
    manifest = json.loads((corpus.root / "manifest.json").read_text())
    keys = sorted(e["key"] for e in manifest["entries"].values())
    return pd.concat([getattr(store.read_entry(corpus.root, k), table).to_pandas()
                      for k in keys], ignore_index=True)


def traces(outs: list[Path], table: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(o / "traces" / f"{table}.parquet") for o in outs],
                     ignore_index=True)


def rows(df: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in df.itertuples(index=False)]


def same(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    """Equal rows, in order; floats to 1e-9, null == NaN."""
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want):
        assert len(g) == len(w), (g, w)
        for a, b in zip(g, w):
            if a is None or (isinstance(a, float) and math.isnan(a)):
                assert b is None or (isinstance(b, float) and math.isnan(b)), (g, w)
            elif isinstance(a, float) or isinstance(b, float):
                assert a == pytest.approx(float(b), rel=1e-9, abs=1e-9), (g, w)
            else:
                assert a == b, (g, w)


def test_the_documented_queries_are_the_ones_checked_here() -> None:
    assert set(QUERIES) == {"trims-invalidating-cache", "overshoots-by-run",
                            "reread-loops-per-file", "tokens-by-tool", "cost-per-policy"}
    listed = re.search(r"kind IN \((.*?)\)", QUERIES["trims-invalidating-cache"])
    assert listed and tuple(k.strip(" '") for k in listed.group(1).split(",")) == TRIM_KINDS


def test_trims_invalidating_cache(data: tuple[Corpus, list[Path]]) -> None:
    _, outs = data
    a = traces(outs, "actions")
    a = a[a["kind"].isin(TRIM_KINDS) & ~a["undone"]]
    a = a.sort_values(["invalidated_tokens", "policy", "run_id", "request", "action"],
                      ascending=[False, True, True, True, True], kind="stable").head(10)
    want = rows(a[["policy", "run_id", "request", "tier", "kind", "invalidated_tokens",
                   "reclaimed_tokens"]])
    assert len(want) == 10 and want[0][5] > 0
    same(sql(QUERIES["trims-invalidating-cache"], traces=outs).rows, want)


def test_overshoots_by_run(data: tuple[Corpus, list[Path]]) -> None:
    _, outs = data
    r = traces(outs, "requests")
    g = r.assign(over=r["overshoot_tokens"] > 0).groupby(["run_id", "policy"]).agg(
        overshoots=("over", "sum"), max_overshoot_tokens=("overshoot_tokens", "max"),
        requests=("request", "size")).reset_index()
    g = g[g["overshoots"] > 0].sort_values(["overshoots", "run_id", "policy"],
                                           ascending=[False, True, True], kind="stable")
    want = rows(g)
    assert want, "the samples overshoot under these policies"
    same(sql(QUERIES["overshoots-by-run"], traces=outs).rows, want)


def test_reread_loops_per_file(data: tuple[Corpus, list[Path]]) -> None:
    corpus, _ = data
    m, rq = dataset(corpus, "messages"), dataset(corpus, "requests")
    reads = m[(m["kind"] == "tool_call") & (m["op"] == "read") & (m["path"] != "")]
    found = []
    for (run, path), g in reads.groupby(["run_id", "path"]):
        out_msgs = np.sort(rq.loc[rq["run_id"] == run, "output_msg"].to_numpy())
        idx = np.searchsorted(out_msgs, g["msg"].to_numpy(), side="left")  # first output ≥ msg
        reqs = [int(i) for i in idx if i < len(out_msgs)]  # requests are 0..n-1 in order
        window = [sum(1 for q in reqs if r - 9 <= q <= r) for r in reqs]
        if window and max(window) >= 3:
            found.append((run, path, len(reqs), max(window)))
    found.sort(key=lambda t: (-t[3], -t[2], t[0], t[1]))
    assert found, "the samples hold re-read loops"
    same(sql(QUERIES["reread-loops-per-file"], corpus=corpus).rows, found)


def test_tokens_by_tool(data: tuple[Corpus, list[Path]]) -> None:
    corpus, _ = data
    m = dataset(corpus, "messages")
    m = m[m["kind"].isin(["tool_call", "tool_result"])]
    call, res = m["kind"] == "tool_call", m["kind"] == "tool_result"
    g = pd.DataFrame({
        "calls": call.groupby(m["tool"]).sum(),
        "call_tokens": m["tokens_o200k"].where(call).groupby(m["tool"]).sum(min_count=1),
        "result_tokens": m["tokens_o200k"].where(res).groupby(m["tool"]).sum(min_count=1),
        "tokens": m["tokens_o200k"].groupby(m["tool"]).sum(min_count=1),
    }).reset_index().sort_values(["tokens", "tool"], ascending=[False, True], kind="stable")
    want = rows(g[["tool", "calls", "call_tokens", "result_tokens", "tokens"]])
    assert len(want) > 10
    same(sql(QUERIES["tokens-by-tool"], corpus=corpus).rows, want)


def test_cost_per_policy(data: tuple[Corpus, list[Path]]) -> None:
    _, outs = data
    r = traces(outs, "requests")
    want = []
    for policy, g in r.groupby("policy"):
        want.append((policy, g["run_id"].nunique(), len(g), int(g["truth_tokens"].sum()),
                     int(g["cached_tokens"].sum()),
                     round(g["cached_tokens"].sum() / g["truth_tokens"].sum(), 4),
                     round(float(g["cost_usd"].sum()), 4)))
    want.sort(key=lambda t: (t[6], t[0]))
    assert [w[0] for w in want] and len(want) == 2
    same(sql(QUERIES["cost-per-policy"], traces=outs).rows, want)


def test_only_the_manifests_entries_are_read(data: tuple[Corpus, list[Path]],
                                             tmp_path: Path) -> None:
    """A stale entry file under data/ (a changed log's old version) is not counted twice."""
    corpus, _ = data
    copy = tmp_path / "ds"
    shutil.copytree(corpus.root, copy)
    first = min((copy / "data").iterdir())
    shutil.copy(first, copy / "data" / f"{first.stem}-old.parquet")
    n = len(dataset(corpus, "messages"))
    again = open_corpus([copy])
    assert sql("SELECT count(*) FROM messages", corpus=again).rows == [(n,)]
    for view in ("runs", "requests"):
        m = len(dataset(corpus, view))
        assert sql(f"SELECT count(*) FROM {view}", corpus=again).rows == [(m,)]
    globbed = len(pd.concat([pd.read_parquet(p) for p in (copy / "data").glob("*.parquet")]))
    assert globbed > n


def test_cli_prints_the_rows_and_exits_2_for_what_it_refuses(
        data: tuple[Corpus, list[Path]], tmp_path: Path) -> None:
    _, outs = data
    t = [a for o in outs for a in ("-t", str(o))]
    done = runner.invoke(app, ["sql", QUERIES["cost-per-policy"], *t, "--json"])
    assert done.exit_code == 0, done.output
    assert [r["policy"] for r in json.loads(done.stdout)] == [
        r[0] for r in sql(QUERIES["cost-per-policy"], traces=outs).rows]
    target = tmp_path / "x.csv"
    for query in (f"COPY trace_requests TO '{target}'", "SELEC 1",
                  "SELECT * FROM read_csv('/etc/passwd')", "SELECT 1; SELECT 2",
                  f"ATTACH '{tmp_path / 'db.duckdb'}'", "SELECT * FROM messages"):
        done = runner.invoke(app, ["sql", query, *t])
        assert done.exit_code == 2, (query, done.output)
        assert "error:" in done.output
    assert list(tmp_path.iterdir()) == []
    done = runner.invoke(app, ["sql", "SELECT 1", "-t", str(tmp_path)])
    assert done.exit_code == 2 and "not a `replay run --out` folder" in done.output


def test_a_query_needs_something_to_read() -> None:
    with pytest.raises(ReplayInputError, match="nothing to query"):
        sql("SELECT 1")


def test_columns_of_one_name_are_all_kept(data: tuple[Corpus, list[Path]]) -> None:
    """Rows were keyed by name: of ``r.n_requests, q.n_requests`` the table, CSV and JSON
    showed one column, the other's values under its name."""
    _, outs = data
    query = ("SELECT r.run_id, r.request AS n_requests, q.n_requests, 0 AS n_requests_1 "
             "FROM trace_requests r, (SELECT 7 AS n_requests) q WHERE r.request = 3 LIMIT 1")
    got = sql(query, traces=outs[:1])
    assert got.columns == ("run_id", "n_requests", "n_requests_2", "n_requests_1")
    assert got.renamed == (("n_requests", "n_requests_2"),)
    done = runner.invoke(app, ["sql", query, "-t", str(outs[0]), "--json"])
    assert done.exit_code == 0, done.output
    row = json.loads(done.stdout)[0]
    assert (row["n_requests"], row["n_requests_2"], row["n_requests_1"]) == (3, 7, 0)
    assert "note: columns of one name renamed so that none is lost: n_requests → " \
           "n_requests_2" in done.stderr


def test_json_holds_only_numbers_json_has(data: tuple[Corpus, list[Path]]) -> None:
    """A ratio over zero (NaN, ±inf) was written NaN / Infinity: no JSON reader takes it."""
    _, outs = data
    query = ("SELECT 0.0 / 0.0 AS nan, 1.0 / 0.0 AS inf, [1.5, -1.0 / 0.0] AS l, "
             "{'x': 0.0 / 0.0} AS s FROM trace_requests LIMIT 1")
    done = runner.invoke(app, ["sql", query, "-t", str(outs[0]), "--json"])
    assert done.exit_code == 0, done.output

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    rows = json.loads(done.stdout, parse_constant=refuse)
    assert rows == [{"nan": None, "inf": None, "l": [1.5, None], "s": {"x": None}}]
    assert "note: 4 values NaN or ±infinity printed as null" in done.stderr
    table = runner.invoke(app, ["sql", query, "-t", str(outs[0]), "--csv"])
    assert table.exit_code == 0 and "nan,inf" in table.stdout


NUMBER_CASTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "UBIGINT",
                "FLOAT", "DOUBLE", "DECIMAL(10,2)", "DECIMAL(38, 4)")


@pytest.mark.parametrize("kind", NUMBER_CASTS)
def test_an_unknown_number_is_unknown_even_in_a_column_of_nulls_only(
        data: tuple[Corpus, list[Path]], kind: str) -> None:
    """A null in a number column shows ``unknown``; the table told a column's kind from its
    values, so a column all of whose rows were null (a ``CASE`` that never matched, an
    aggregate over nothing) showed blank cells, and a DECIMAL (no Python int or float) blank
    cells for its nulls beside its values. A text column's null stays blank."""
    _, outs = data
    query = (f"SELECT request, CAST(NULL AS {kind}) AS all_null, CAST(CASE WHEN request > 0 "
             f"THEN NULL ELSE 2 END AS {kind}) AS some_null, CAST(NULL AS VARCHAR) AS txt "
             "FROM (VALUES (0), (1)) t(request) ORDER BY request")
    done = runner.invoke(app, ["sql", query, "-t", str(outs[0]), "--wide"],
                         env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in done.stdout.splitlines()
            if line.startswith("│")]
    assert [r[1:3] for r in rows] == [["unknown", r[2]] for r in rows]
    assert rows[0][2] != "unknown" and float(rows[0][2]) == 2 and rows[1][2] == "unknown"
    assert [r[3] for r in rows] == ["", ""]  # the text column's nulls: blank


def test_inputs_it_cannot_open_are_one_line(tmp_path: Path) -> None:
    """Before: a project cache refused (a symlink at its dataset) or a dataset given directly
    with a damaged entry was an OutputError / StoreError traceback, exit 1, on ``sql`` alone.
    Now one line each: the cache a folder to fix (exit 2), the damaged entry an input that
    failed (exit 1), as on every command."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "claude-code" / "short.jsonl", logs / "a.jsonl")
    (tmp_path / "c").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "c" / "dataset").symlink_to(tmp_path / "elsewhere")
    ds = tmp_path / "ds"
    assert runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q"]).exit_code == 0
    (entry,) = store.read_manifest(ds).values()
    store.entry_file(ds, entry.key).write_bytes(b"PAR1 damaged")
    for args, code in ((["SELECT 1", str(logs), "--cache-dir", str(tmp_path / "c")], 2),
                       (["SELECT count(*) FROM runs", str(ds)], 1)):
        done = runner.invoke(app, ["sql", *args])
        assert done.exit_code == code, done.output
        lines = [ln for ln in done.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), done.output
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_entry_swapped_for_another_entrys_file_is_refused(data: tuple[Corpus, list[Path]],
                                                            tmp_path: Path) -> None:
    """An entry's file replaced by another entry's (a whole, valid entry file): the views were
    built from it without a word, the other run's rows twice and this entry's runs gone (two
    entries' runs: ``source`` +b twice, exit 0). Now the file is checked against the checksum
    the manifest keeps, as a replay checks it: one line, exit 1, as for a damaged entry."""
    corpus, _ = data
    copy = tmp_path / "ds"
    shutil.copytree(corpus.root, copy)
    a, b = list(store.read_manifest(copy).values())[:2]
    shutil.copyfile(store.entry_file(copy, a.key), store.entry_file(copy, b.key))
    done = runner.invoke(app, ["sql", "SELECT source, count(*) FROM runs GROUP BY source",
                               str(copy)])
    assert done.exit_code == 1, done.output
    lines = [ln for ln in done.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.output
    assert store.entry_file(copy, b.key).name in " ".join(done.output.split()).replace(" ", "")


def test_a_trace_file_that_is_no_parquet_is_one_line(data: tuple[Corpus, list[Path]],
                                                      tmp_path: Path) -> None:
    """``-t`` a run folder whose ``traces/requests.parquet`` is no Parquet file (cut, edited)
    ended in DuckDB's InvalidInputException traceback (exit 1): the view was made outside
    the query's guard.  A damaged input: one line naming the file, exit 1 (not 2, a usage
    error)."""
    _, outs = data
    out = tmp_path / "run"
    shutil.copytree(outs[0], out)
    (out / "traces" / "requests.parquet").write_bytes(b"not parquet\n")
    done = runner.invoke(app, ["sql", "SELECT count(*) FROM trace_requests", "-t", str(out)])
    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    lines = [ln for ln in done.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {out / 'traces' / 'requests.parquet'}: not a `replay run` trace"), done.output


def test_a_run_folder_given_twice_is_refused(data: tuple[Corpus, list[Path]]) -> None:
    """``-t out -t out/`` read the folder twice: every trace row, and every sum over them,
    counted twice, without a word."""
    _, outs = data
    for again in (outs[0], Path(f"{outs[0]}/"), outs[0] / "traces" / ".."):
        done = runner.invoke(app, ["sql", "SELECT count(*) FROM trace_requests", "-t",
                                   str(outs[0]), "-t", str(again)])
        assert done.exit_code == 2, done.output
        assert "given twice" in done.stderr, done.output
    with pytest.raises(ReplayInputError, match="given twice"):
        sql("SELECT 1", traces=[outs[0], outs[0]])


def test_two_folders_of_one_run_under_one_policy_are_refused(data: tuple[Corpus, list[Path]],
                                                             tmp_path: Path) -> None:
    """A copy of a run folder (or the same policy replayed into another folder) beside it:
    every row of its runs read twice under one policy name, which is all the views tell folders
    apart by, exit 0 (the folder named twice was refused, its copy was not).  Now exit 2 naming
    both; folders of other policies, or of other runs, are still read together."""
    _, outs = data
    copy = tmp_path / "copy"
    shutil.copytree(outs[0], copy)
    done = runner.invoke(app, ["sql", "SELECT count(*) FROM trace_requests", "-t",
                               str(outs[0]), "-t", str(copy)])
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    assert f"{copy}: holds run " in said and f"as {outs[0]} does" in said, said
    assert len(sql("SELECT * FROM trace_requests", traces=outs).rows) == sum(
        len(traces([o], "requests")) for o in outs)


@pytest.mark.parametrize("limit", [[], ["--limit", "5"]], ids=["streamed", "limited"])
def test_json_writes_decimals_as_numbers_when_exact(data: tuple[Corpus, list[Path]],
                                                    limit: list[str]) -> None:
    """DuckDB's ``0.5 * n`` is a DECIMAL: ``--json`` wrote it as the string "76.0", which a
    reader's ``> 50`` does not compare as a number.  A DECIMAL a double holds exactly is a
    number; one of more digits stays its exact string, counted and said (never rounded)."""
    _, outs = data
    query = ("SELECT 0.5 * request AS half, CAST('0.3' AS DECIMAL(3,1)) AS small, "
             "CAST('1.23456789012345678901' AS DECIMAL(38,20)) AS big, "
             "[CAST('2.5' AS DECIMAL(4,1))] AS l FROM trace_requests WHERE request = 3 LIMIT 1")
    done = runner.invoke(app, ["sql", query, "-t", str(outs[0]), "--json", *limit])
    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout)
    assert rows == [{"half": 1.5, "small": 0.3, "big": "1.23456789012345678901", "l": [2.5]}]
    assert "note: 1 DECIMAL values printed as strings" in done.stderr
