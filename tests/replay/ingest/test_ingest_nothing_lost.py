"""Ingest never loses stored runs: garbage over a good file keeps its old runs, an interrupted
ingest or a failed write leaves the previous store consistent.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import entry_write, store
from replay.ingest.batch import ingest
from tests.replay.ingest.ingest_helpers import _claude, _cli, _cli_runs, _runs, _write


def test_garbage_over_a_good_file_keeps_the_old_runs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    good = _write(logs / "s.jsonl", _claude(3, tag="s"))
    other = _write(logs / "t.jsonl", _claude(1, tag="t"))
    out = tmp_path / "store"
    assert ingest([logs], out, jobs=1).failed == []
    before = sorted(_cli_runs(out), key=lambda r: r["run_id"])
    old_key = store.read_manifest(out)["s.jsonl"].key

    good.write_bytes(random.Random(1).randbytes(5000).replace(b"\n", b" ") + b"\x00")
    _write(other, _claude(2, tag="t2"))  # the other file changes for real
    report = ingest([logs], out, jobs=1)
    assert report.failed == ["s.jsonl"] and report.parsed == ["t.jsonl"]
    assert str(report.issues[0]).startswith(f"{good}: ")
    manifest = store.read_manifest(out)
    assert manifest["s.jsonl"].key == old_key
    after = {r["source"]: r for r in _cli_runs(out)}
    (old_s,) = [r for r in before if r["source"] == "s.jsonl"]
    assert after["s.jsonl"] == old_s  # same run, same counts
    assert after["t.jsonl"]["requests"] == 3

    result = _cli("ingest", str(logs), "--out", str(out), "-q")
    assert result.exit_code == 1 and "s.jsonl" in result.stderr
    assert {r["source"]: r for r in _cli_runs(out)}["s.jsonl"] == old_s


@pytest.mark.parametrize("jobs", [1, 2])
def test_interrupted_ingest_leaves_a_consistent_store(tmp_path: Path, jobs: int) -> None:
    logs = tmp_path / "logs"
    for k in range(2):
        _write(logs / f"a{k}.jsonl", _claude(2, tag=f"a{k}"))
    out = tmp_path / "store"
    ingest([logs], out, jobs=jobs)
    first = {r["run_id"] for r in _runs(out)}
    for k in range(4):
        _write(logs / f"b{k}.jsonl", _claude(1, tag=f"b{k}"))

    seen: list[str] = []

    def interrupt(source: str) -> None:
        seen.append(source)
        if len([s for s in seen if s.startswith("b")]) == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest([logs], out, jobs=jobs, on_file=interrupt)
    manifest = store.read_manifest(out)
    # the old entries and every file finished before the interruption (with 2 workers, every b
    # is submitted at once, so any of the others may have finished before the first result was
    # taken: each is kept too, #13); nothing half-done (each listed entry is read below)
    first_b = next(s for s in seen if s.startswith("b"))  # with 2 workers: any b, in any order
    assert {"a0.jsonl", "a1.jsonl", first_b} <= set(manifest)
    assert set(manifest) <= {"a0.jsonl", "a1.jsonl"} | {f"b{k}.jsonl" for k in range(4)}
    if jobs == 1:
        assert len(manifest) == 3
    for entry in manifest.values():
        store.read_entry(out, entry.key)  # every listed entry is readable
    runs = _runs(out)
    assert first <= {r["run_id"] for r in runs} and len(runs) == len(manifest)
    # and the next ingest completes the job
    report = ingest([logs], out, jobs=jobs)
    assert report.failed == [] and len(_runs(out)) == 6


def test_failure_while_writing_keeps_the_previous_manifest(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    _write(logs / "a.jsonl", _claude(2, tag="a"))
    out = tmp_path / "store"
    ingest([logs], out, jobs=1)
    manifest_before = (out / "manifest.json").read_bytes()
    _write(logs / "b.jsonl", _claude(2, tag="b"))

    def disk_full(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(entry_write, "write", disk_full)  # writing the entry of b.jsonl fails
    with pytest.raises(OSError):
        ingest([logs], out, jobs=1)
    assert (out / "manifest.json").read_bytes() == manifest_before
    assert [r["source"] for r in _runs(out)] == ["a.jsonl"]
    assert not [p.name for p in (out / "data").iterdir() if ".tmp" in p.name]  # (removed)
