"""Ingest starts worker processes only for work worth them: with the workers left to it
(``jobs=0``), files that hold under ``MIN_POOL_BYTES`` in all are parsed in the process itself;
at the bound, or with ``jobs`` given, a pool parses them.  The store is the same either way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import batch, store
from replay.ingest.batch import ingest

SMALL = sorted((Path(__file__).resolve().parents[3] / "logs" / "scenarios").glob("*.jsonl"),
               key=lambda p: p.stat().st_size)[:2]


def test_small_inputs_are_parsed_without_workers(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in SMALL:
        shutil.copy(log, logs / log.name)
    size = sum(p.stat().st_size for p in SMALL)
    assert size < batch.MIN_POOL_BYTES
    pools: list[int] = []
    real = batch.ProcessPoolExecutor

    def counted(workers: int, **kw: Any) -> Any:
        pools.append(workers)
        return real(workers, **kw)

    monkeypatch.setattr(batch, "ProcessPoolExecutor", counted)
    inline = ingest([logs], tmp_path / "inline")
    assert pools == [] and len(inline.parsed) == 2 and not inline.failed
    pooled = ingest([logs], tmp_path / "jobs", jobs=2)  # asked for: a pool
    assert pools == [2] and len(pooled.parsed) == 2
    monkeypatch.setattr(batch, "MIN_POOL_BYTES", size)  # at the bound: a pool
    at_bound = ingest([logs], tmp_path / "bound")
    assert pools[1:] == ([2] if (batch.os.cpu_count() or 1) > 1 else [])  # one core: none
    assert len(at_bound.parsed) == 2
    entries = [sorted((k, e.key, e.checksum) for k, e in store.read_manifest(tmp_path / d).items())
               for d in ("inline", "jobs", "bound")]
    assert entries[0] == entries[1] == entries[2]


V1 = Path(__file__).resolve().parents[2] / "fixtures" / "openhands_v1"


def test_a_conversation_folder_counts_its_files(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenHands V1 conversation is a folder read as one input: it was sized by the
    folder's own entry (4 KB whatever its events held), so a batch of big conversations was
    parsed in one process.  Its files count now (never a symlink's target)."""
    conv = next(p for p in V1.iterdir() if p.is_dir())
    logs = tmp_path / "logs"
    shutil.copytree(conv, logs / conv.name)
    held = sum(p.stat().st_size for p in (logs / conv.name).rglob("*") if p.is_file())
    assert held > (logs / conv.name).stat().st_size
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (held * 4))
    (logs / conv.name / "events" / "stray-link").symlink_to(big)  # not followed, not counted
    assert batch.input_size(logs / conv.name) == held
    assert batch.holds_at_least([logs / conv.name], held)
    assert not batch.holds_at_least([logs / conv.name], held + 1)
    pools: list[int] = []
    real = batch.ProcessPoolExecutor

    def counted(workers: int, **kw: Any) -> Any:
        pools.append(workers)
        return real(workers, **kw)

    shutil.copy(SMALL[0], logs / SMALL[0].name)  # two inputs: a pool has two to share
    monkeypatch.setattr(batch, "ProcessPoolExecutor", counted)
    monkeypatch.setattr(batch, "MIN_POOL_BYTES", held)
    report = ingest([logs], tmp_path / "out")
    assert len(report.parsed) == 2
    assert pools == ([2] if (batch.os.cpu_count() or 1) > 1 else [])
