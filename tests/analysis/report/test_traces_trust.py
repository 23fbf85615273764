"""``--traces DIR`` (``diff``, ``report``) reads a ``replay run`` output folder as any input:
a summary.json or trace file that is not what ``replay run`` writes — not JSON, no policy,
another engine's, not Parquet, other columns — is one line naming it and exit 2, never a
traceback nor figures of another engine compared as this one's."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from replay.cli import app

LOG = Path(__file__).parents[3] / "logs" / "test-fix-loop.jsonl"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traces") / "none"
    res = CliRunner().invoke(app, ["run", str(LOG), "-p", "none", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def _summary(text: str) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        (d / "summary.json").write_text(text)
        return d / "summary.json"
    return damage


def _other_version(d: Path) -> Path:
    path = d / "summary.json"
    path.write_text(path.read_text().replace('"trace_version": "', '"trace_version": "0', 1))
    return path


def _requests(table: pa.Table) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        pq.write_table(table, d / "traces" / "requests.parquet")
        return d / "traces" / "requests.parquet"
    return damage


def _garbage(d: Path) -> Path:
    (d / "traces" / "actions.parquet").write_bytes(b"PAR1 not parquet")
    return d / "traces" / "actions.parquet"


def _old_trace(d: Path) -> Path:
    path = d / "traces" / "evictions.parquet"
    t = pq.read_table(path)
    meta = {**t.schema.metadata, b"trace_version": b"1"}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return path


def _column_dropped(d: Path) -> Path:
    path = d / "traces" / "requests.parquet"
    t = pq.read_table(path)
    pq.write_table(t.drop_columns(["truth_tokens"]).replace_schema_metadata(t.schema.metadata),
                   path)
    return path


DAMAGES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "truncated json": (_summary('{"policy": '), "not a `replay run` summary (not JSON"),
    "no policy": (_summary('{"runs": []}'), "not a `replay run` summary (no policy mapping)"),
    "digits": (_summary('{"policy": 1' + "0" * 5000 + "}"), "(not JSON: Exceeds the limit"),
    "nested too deeply": (_summary("[" * 100_000 + "]" * 100_000),
                          "(not JSON: maximum recursion depth"),
    "other engine's summary": (_other_version, "this ctxreplay writes"),
    "not parquet": (_garbage, "not a `replay run` trace"),
    "foreign parquet": (_requests(pa.table({"x": [1]})), "trace version ''"),
    "older engine's trace": (_old_trace, "trace version '1'"),
    "a column dropped": (_column_dropped, "its columns are not the requests table's"),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_run_folder_is_one_line_and_exit_2(good: Path, tmp_path: Path,
                                                     damage: str) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    make, message = DAMAGES[damage]
    path = make(bad)
    res = CliRunner().invoke(app, ["diff", "--traces", str(bad), str(good)])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert f"{path}: " in res.output and message in " ".join(res.output.split())


def test_report_refuses_a_damaged_run_folder(good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    path = _other_version(bad)
    res = CliRunner().invoke(app, ["report", "--traces", str(bad), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2, res.output
    assert f"{path}: trace version" in res.output
    assert not (tmp_path / "r" / "report.html").exists()


def test_an_intact_run_folder_still_reads(good: Path) -> None:
    res = CliRunner().invoke(app, ["diff", "--traces", str(good), str(good), "--json"])
    assert res.exit_code == 0, res.output
