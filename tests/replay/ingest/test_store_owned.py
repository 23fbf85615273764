"""An ingest writes only a new or empty folder, or a store ``replay ingest`` wrote
(``replay.ingest.store_owned``): ``ingest logs --out proj`` into a folder of the user's
overwrote their ``index.parquet``, ``manifest.json``, ``journal.jsonl`` and filled their
``data/``, exit 0.  Now exit 2 naming the folder and what is not the store's, nothing written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from replay.cli import app
from replay.errors import OutputError
from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.store_older import older_store
from tests.replay.ingest.store_helpers import LOG, runner

_KEY = "0123456789abcdef01234567-89abcdef-o200k-v5"


def _logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "a.jsonl")
    return logs


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every path below ``folder`` with its bytes (a folder: 'dir', a symlink: its target)."""
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else "dir" if p.is_dir() else \
            p.read_bytes()
    return out


def _user_folder(proj: Path, case: str, outside: Path) -> None:
    proj.mkdir()
    if case == "index":
        (proj / "index.parquet").write_bytes(b"PAR1 my own table PAR1")
    elif case == "manifest_of_another_tool":
        (proj / "manifest.json").write_text(json.dumps({"name": "my-app", "version": "1.0"}))
    elif case == "journal":
        (proj / "journal.jsonl").write_text('{"day": 1}\n')
    elif case == "data_folder":
        (proj / "data").mkdir()
        (proj / "data" / "results.csv").write_text("a,b\n1,2\n")
    elif case == "data_file":
        (proj / "data").write_text("my data")
    elif case == "index_symlink":
        outside.write_text("elsewhere")
        (proj / "index.parquet").symlink_to(outside)
    elif case == "lock_with_content":
        (proj / ".lock").write_text("mine")
    elif case == "notes":
        (proj / "notes.txt").write_text("mine")
    elif case == "crafted_manifest_beside_files":  # a manifest of our shape, among the user's
        store.write_manifest(proj, {})
        (proj / "thesis.tex").write_text("mine")
    elif case == "crafted_manifest_user_data":
        store.write_manifest(proj, {})
        (proj / "data").mkdir()
        (proj / "data" / "thesis").mkdir()
        (proj / "data" / "thesis" / "ch1.tex").write_text("mine")
    elif case == "ours_but_a_symlinked_manifest":
        outside.write_text(json.dumps({"schema_version": "6", "entries": {}}))
        (proj / "manifest.json").symlink_to(outside)


CASES = ["index", "manifest_of_another_tool", "journal", "data_folder", "data_file",
         "index_symlink", "lock_with_content", "notes", "crafted_manifest_beside_files",
         "crafted_manifest_user_data", "ours_but_a_symlinked_manifest"]


@pytest.mark.parametrize("case", CASES)
def test_ingest_into_a_folder_not_a_store_writes_nothing(tmp_path: Path, case: str) -> None:
    logs, proj, outside = _logs(tmp_path), tmp_path / "proj", tmp_path / "outside.txt"
    _user_folder(proj, case, outside)
    before, outside_before = _tree(proj), outside.read_bytes() if outside.exists() else None
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(proj), "-q"])
    assert result.exit_code == 2, result.output
    assert f"--out {proj}: not empty and not a store" in result.output
    assert _tree(proj) == before
    assert (outside.read_bytes() if outside.exists() else None) == outside_before


def test_the_project_cache_s_dataset_is_held_to_the_same_rule(tmp_path: Path) -> None:
    """``replay calibrate logs`` fills ``.ctxreplay/dataset``: a folder of the user's there is refused
    as ``--out`` is."""
    logs, cache = _logs(tmp_path), tmp_path / "cache"
    (cache / "dataset").mkdir(parents=True)
    (cache / "dataset" / "index.parquet").write_bytes(b"mine")
    result = runner.invoke(app, ["calibrate", str(logs), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    assert "the project cache's dataset" in result.output and "index.parquet" in result.output
    assert (cache / "dataset" / "index.parquet").read_bytes() == b"mine"
    assert sorted(os.listdir(cache / "dataset")) == ["index.parquet"]


def test_a_new_an_empty_folder_and_a_store_are_written(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    (tmp_path / "empty").mkdir()
    for ds in (tmp_path / "new", tmp_path / "empty"):
        assert ingest([logs], ds, jobs=1).parsed == ["a.jsonl"]
        again = ingest([logs], ds, jobs=1)  # a store: written again, its entry reused
        assert again.cached == ["a.jsonl"]
        assert sorted(os.listdir(ds)) == [".lock", "data", "index.parquet", "manifest.json"]


def test_an_ingest_killed_at_once_leaves_a_store(tmp_path: Path) -> None:
    """A new store's manifest is written first: a folder with a lock and a manifest only (an
    ingest killed before its first entry) is a store to the next ingest."""
    logs, ds = _logs(tmp_path), tmp_path / "ds"
    ds.mkdir()
    (ds / ".lock").touch()  # (the lock alone: another ingest starting)
    store.write_manifest(ds, {})
    assert ingest([logs], ds, jobs=1).parsed == ["a.jsonl"]


def test_a_foreign_store_check_names_what_is_not_ours(tmp_path: Path) -> None:
    logs, proj = _logs(tmp_path), tmp_path / "proj"
    proj.mkdir()
    for name in ("index.parquet", "data", "a", "b"):
        (proj / name).write_text("mine")
    with pytest.raises(OutputError) as exc:
        ingest([logs], proj, jobs=1)
    assert "a, b, data (not a folder) and 1 more are not the store's" in str(exc.value)


def test_an_older_manifest_s_keys_of_another_shape_are_not_removed(tmp_path: Path) -> None:
    """A rebuild removes an older store's entries: only keys of the shape ctxreplay gives
    (a crafted ``schema_version: 1`` manifest naming ``thesis`` never removes ``data/thesis``)."""
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "manifest.json").write_text(json.dumps(
        {"schema_version": "1", "entries": {"a": {"key": "thesis"}, "b": {"key": _KEY}}}))
    older = older_store(ds)
    assert older is not None and older[1] == {"b": _KEY}
