"""`replay runs` lists a dataset from its run index, which holds every run whether or not its
entry's file is still there: a dataset whose entry file was deleted listed all its runs and
exited 0, and only `replay run` then failed on it. Now each entry's file is looked at (there, a
regular file, ending as a Parquet file ends, its bytes those the manifest's checksum was made of;
not followed through a symlink, never opened in a way that waits on a fifo): the listing's
``entry`` column says what is wrong, a line on stderr names the files, and the command exits
1."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from replay.cli import app

LOGS = Path(__file__).resolve().parents[3] / "logs"


@pytest.fixture(scope="module")
def dataset(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three small real logs ingested: three entries, one run each."""
    folder = tmp_path_factory.mktemp("in")
    for name in ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"):
        shutil.copyfile(samples / "claude-code" / name, folder / name)
    out = tmp_path_factory.mktemp("ds") / "ds"
    res = CliRunner().invoke(app, ["ingest", str(folder), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def _entry_of(ds: Path, source: str) -> Path:
    """The independent mapping: the manifest's key for ``source``, as a file under data/."""
    doc = json.loads((ds / "manifest.json").read_text())
    return ds / "data" / f"{doc['entries'][source]['key']}.parquet"


def _listed(ds: Path) -> tuple[int, list[dict[str, object]], str]:
    res = CliRunner().invoke(app, ["runs", str(ds), "--json"])
    return res.exit_code, json.loads(res.stdout), " ".join(res.stderr.split())


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _last_byte_changed(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _removed(path: Path) -> None:
    path.unlink()


def _symlink(path: Path) -> None:
    target = path.with_name("elsewhere.bin")
    path.rename(target)
    path.symlink_to(target)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _swapped(path: Path) -> None:
    """Another entry's file of the same dataset in its place: a whole, valid entry file."""
    other = next(p for p in path.parent.iterdir() if p != path)
    shutil.copyfile(other, path)


def _other_parquet(path: Path) -> None:
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)


SWAPPED = "not the file written (its checksum differs: swapped or edited)"
DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "deleted": (_removed, "missing"),
    "cut in half": (_cut, "cut"),
    "last byte changed": (_last_byte_changed, "cut"),
    "emptied": (_empty, "cut"),
    "a symlink": (_symlink, "a symlink or a crafted key"),
    "a fifo": (_fifo, "not a regular file"),
    "a folder": (_folder, "not a regular file"),
    "another entry's file": (_swapped, SWAPPED),
    "another Parquet file": (_other_parquet, SWAPPED),
}


def test_an_intact_dataset_lists_every_entry_ok(dataset: Path) -> None:
    code, rows, err = _listed(dataset)
    assert code == 0, err
    assert {r["source"] for r in rows} == {"short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"}
    for r in rows:  # the independent check: each entry file is a Parquet file pyarrow reads
        pq.read_metadata(_entry_of(dataset, str(r["source"])))
        assert r["entry"] == "ok", r
    assert "not readable" not in err


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_entry_is_named_and_exits_1(dataset: Path, tmp_path: Path,
                                              damage: str) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(dataset, ds)
    make, state = DAMAGES[damage]
    make(_entry_of(ds, "tool_heavy.jsonl"))
    code, rows, err = _listed(ds)
    assert code == 1, err
    assert {r["source"]: r["entry"] for r in rows} == {
        "short.jsonl": "ok", "tool_heavy.jsonl": state, "subagent.jsonl": "ok"}
    assert (f"1 of 3 run(s) are listed from the run index, but the entries of 1 file(s) "
            f"holding them are not readable (tool_heavy.jsonl: {state})") in err
    # what the line says is what a replay then finds: it refuses that entry
    res = CliRunner().invoke(app, ["run", str(ds), "-p", "none", "-q"])
    assert res.exit_code == 1, res.output
    assert "tool_heavy.jsonl" in " ".join(res.output.split())


def test_more_than_five_files_are_counted_not_all_named(samples: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(7):
        (folder / f"s{k}.jsonl").write_bytes((samples / "claude-code" / "short.jsonl")
                                              .read_bytes() + b"\n" * k)  # 7 distinct files
    ds = tmp_path / "ds"
    assert CliRunner().invoke(app, ["ingest", str(folder), "--out", str(ds), "-q"]).exit_code == 0
    for k in range(7):
        _entry_of(ds, f"s{k}.jsonl").unlink()
    code, rows, err = _listed(ds)
    assert code == 1
    assert [r["entry"] for r in rows] == ["missing"] * 7
    assert "7 of 7 run(s)" in err and "entries of 7 file(s)" in err
    assert "; and 2 more (--json: entry)" in err and err.count(": missing") == 5


def test_no_dataset_is_a_usage_error_a_damaged_one_an_input_that_failed(
        dataset: Path, tmp_path: Path) -> None:
    """``replay runs`` of a folder holding no dataset exited 1, as an input that failed, where
    every other command taking a dataset (sql, inspect, diff --traces) says 2: the wrong
    argument.  A dataset whose manifest is damaged is still 1."""
    (tmp_path / "logs").mkdir()
    res = CliRunner().invoke(app, ["runs", str(tmp_path / "logs")])
    assert res.exit_code == 2, res.output
    assert "not a ctxreplay dataset (no manifest.json)" in " ".join(res.output.split())
    ds = tmp_path / "ds"
    shutil.copytree(dataset, ds)
    (ds / "manifest.json").write_text("{not json")
    res = CliRunner().invoke(app, ["runs", str(ds)])
    assert res.exit_code == 1, res.output
