"""A dataset folder an older ctxreplay wrote (a lower schema version) is rebuilt by the next
ingest into it, and said so, instead of stopping every command until the user deletes the
cache by hand; a store of a newer version is still refused, and nothing outside its ``data/``
folder is removed whatever the older manifest names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replay.corpus import open_corpus
from replay.errors import StoreError
from replay.ingest.batch import ingest
from replay.ingest.schema import SCHEMA_VERSION
from replay.layout import CACHE_ENV, dataset_dir
from tests.replay.ingest.store_helpers import LOG, _store, _victim, runner


def _make_older(ds: Path, version: str, extra: dict[str, str]) -> list[str]:
    """Rewrite ``ds`` as a store of ``version``: its entries' files moved into folders (the
    layout up to version 5) named by keys of that version, plus ``extra`` (source -> key)
    entries whose folders exist.  The keys written."""
    doc = json.loads((ds / "manifest.json").read_text())
    keys = []
    for entry in doc["entries"].values():
        old = entry["key"].replace(f"-v{SCHEMA_VERSION}", f"-v{version}")
        (ds / "data" / old).mkdir()
        (ds / "data" / f"{entry['key']}.parquet").rename(ds / "data" / old / "messages.parquet")
        entry["key"] = old
        keys.append(old)
    for source, key in extra.items():
        if "/" not in key and key not in (".", ".."):
            (ds / "data" / key).mkdir()
            (ds / "data" / key / "runs.parquet").write_bytes(b"old")
            keys.append(key)
        doc["entries"][source] = {"key": key, "sha256": "0" * 64, "format": "claude_code",
                                  "n_runs": 1}
    doc["schema_version"] = version
    (ds / "manifest.json").write_text(json.dumps(doc))
    return keys


def test_an_older_store_is_rebuilt_and_said(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    older = str(int(SCHEMA_VERSION) - 1)
    old_keys = _make_older(ds, older, {"gone.jsonl": "feedbeef" * 3 + "-00000000-o200k-p1-v" + older})
    with pytest.raises(StoreError):  # what every command did before: refused the cache
        open_corpus([ds])
    report = ingest([logs], ds, jobs=1)
    assert report.rebuilt_from_schema == older
    assert report.parsed == ["a.jsonl"] and report.cached == []
    assert report.dropped_older == 1  # gone.jsonl was not given
    left = {p.name for p in (ds / "data").iterdir()}
    assert not left & set(old_keys)  # the older entries' folders are gone
    corpus = open_corpus([ds])
    assert len(corpus.run_ids) == report.n_runs > 0
    doc = json.loads((ds / "manifest.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and list(doc["entries"]) == ["a.jsonl"]
    again = ingest([logs], ds, jobs=1)  # now an ordinary store: reused, nothing rebuilt
    assert again.rebuilt_from_schema is None and again.cached == ["a.jsonl"]


def test_the_commands_say_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay.cli import app

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "a.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert runner.invoke(app, ["run", "--policy", "none", "logs"]).exit_code == 0
    ds = dataset_dir(tmp_path / "cache")
    _make_older(ds, str(int(SCHEMA_VERSION) - 1), {})
    result = runner.invoke(app, ["run", "--policy", "none", "logs"])
    assert result.exit_code == 0, result.output
    assert "written by an older ctxreplay" in result.output
    out = tmp_path / "ds"  # (not "out": the run's outputs are there, not a store's files)
    runner.invoke(app, ["ingest", "logs", "--out", str(out)])
    _make_older(out, str(int(SCHEMA_VERSION) - 1), {})
    result = runner.invoke(app, ["ingest", "logs", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    assert doc["rebuilt_from_schema"] == str(int(SCHEMA_VERSION) - 1)
    assert doc["parsed"] == 1 and doc["dropped_older"] == 0


def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    before = (ds / "manifest.json").read_bytes()
    doc = json.loads(before)
    doc["schema_version"] = str(int(SCHEMA_VERSION) + 1)
    (ds / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="schema version"):
        ingest([logs], ds, jobs=1)


@pytest.mark.parametrize("key", ["..", "../../victim", "/tmp", "a/../../victim"])
def test_an_older_manifest_removes_nothing_outside_data(tmp_path: Path, key: str) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    _make_older(ds, str(int(SCHEMA_VERSION) - 1), {"evil.jsonl": key})
    report = ingest([logs], ds, jobs=1)
    assert report.rebuilt_from_schema is not None
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (ds / "manifest.json").is_file() and (ds / "data").is_dir()
