"""``replay run --out DIR`` overwrites only what a ``replay run`` wrote there
(``replay.run_folder.foreign_outputs``): a user's own ``summary.json`` or a file of theirs
named like a trace is refused (exit 2, nothing written, the file as it was); a folder an earlier
run wrote, of this engine or an older one, is replaced as ever."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.run_folder import foreign_outputs

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOG = str(REPO / "logs" / "write-heavy.jsonl")


def _run(out: Path, tmp_path: Path) -> object:
    return runner.invoke(app, ["run", LOG, "-p", "none", "--out", str(out), "-q",
                               "--cache-dir", str(tmp_path / "cache")])


@pytest.mark.parametrize("planted", ["summary.json", "traces/requests.parquet",
                                     "traces/evictions.parquet"])
@pytest.mark.parametrize("content", [b'{"mine": [1, 2, 3]}\n', b"my notes\n", b"",
                                     b"PAR1 not really PAR1"])
def test_a_users_own_file_is_not_overwritten(tmp_path: Path, planted: str,
                                             content: bytes) -> None:
    out = tmp_path / "mine"
    (out / "traces").mkdir(parents=True)
    (out / planted).write_bytes(content)
    result = _run(out, tmp_path)
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert "did not write" in result.output  # type: ignore[attr-defined]
    assert (out / planted).read_bytes() == content
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == \
        sorted(["traces", planted])


def test_a_parquet_file_of_the_users_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    (out / "traces").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2]}), out / "traces" / "actions.parquet")
    before = (out / "traces" / "actions.parquet").read_bytes()
    result = _run(out, tmp_path)
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert (out / "traces" / "actions.parquet").read_bytes() == before


def test_a_folder_a_run_wrote_is_replaced_also_from_an_older_engine(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert _run(out, tmp_path).exit_code == 0  # type: ignore[attr-defined]
    assert foreign_outputs(out) == []
    doc = json.loads((out / "summary.json").read_text())
    doc["trace_version"] = "1"  # an older engine's summary: replaced, not refused
    (out / "summary.json").write_text(json.dumps(doc))
    result = _run(out, tmp_path)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert json.loads((out / "summary.json").read_text())["trace_version"] != "1"


def test_an_empty_or_new_folder_is_written(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new"):
        assert _run(out, tmp_path).exit_code == 0  # type: ignore[attr-defined]
        assert (out / "summary.json").is_file()
