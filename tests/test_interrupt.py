"""Interrupted runs leave the previous good state intact (kill -9 midway through real commands).

The command killed is a process; the previous good state each test starts from is made in this
process (``_previous``: the same command through the CLI's entry point, without a new
interpreter's ~1.25 s of imports), since making it is not what is tested, and so is the command
that resumes after the kill (``_resumed``): it reads what the killed process left on disk.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store

REPO = Path(__file__).resolve().parents[1]


def _replay_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", "from replay.cli import app; app()", *args]


def _previous(*args: str) -> None:
    """The command ``replay args`` run in this process, to its end (the state a test kills a
    later command over)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output


def _resumed(*args: str) -> dict[str, Any]:
    """The command ``replay args`` run again after the kill, in this process (a command reads
    what a killed one left as it reads it in a process of its own), to its end: its ``--json``
    report."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _wait_for(predicate, proc: subprocess.Popen, seconds: float = 120) -> None:  # type: ignore[type-arg,no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, "the command finished before it could be interrupted"
        time.sleep(0.05)
    raise AssertionError("the interruption point was never reached")


def test_killed_ingest_keeps_the_previous_store_readable(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(REPO / "logs" / "explore-rereads.jsonl", good / "a.jsonl")
    _previous("ingest", str(good), "--out", str(ds), "-q")
    before = store.read_manifest(ds)
    runs_before = store.read_store(ds).runs["run_id"].to_pylist()
    # a long second ingest into the same store: many distinct files, one worker
    many = tmp_path / "many"
    many.mkdir()
    source = (REPO / "logs" / "write-heavy.jsonl").read_text()
    for i in range(40):
        (many / f"copy{i:02d}.jsonl").write_text(source + "\n" * (i + 1))
    shutil.copy(good / "a.jsonl", many / "a.jsonl")
    entries_before = set((ds / "data").iterdir())
    proc = subprocess.Popen(_replay_cmd("ingest", str(good), str(many), "--out", str(ds), "-q",
                                        "--jobs", "1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: len(set((ds / "data").iterdir()) - entries_before) >= 2, proc)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    # the manifest is the old one or a complete new one, and everything it lists is readable
    after = store.read_manifest(ds)
    assert set(before) <= set(after)
    for entry in after.values():
        store.read_entry(ds, entry.key)
    assert set(runs_before) <= set(store.read_store(ds).runs["run_id"].to_pylist())
    # and a re-run completes, reusing what was already there
    report = _resumed("ingest", str(good), str(many), "--out", str(ds), "-q", "--json")
    assert report["failed"] == [] and report["cached"] >= 1
    assert len(store.read_manifest(ds)) == 1 + 41


def test_killed_run_keeps_the_previous_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    logs = str(REPO / "logs")
    _previous("run", "--policy", "two-tier-corrected", logs, "--out", str(out), "-q")
    summary = (out / "summary.json").read_bytes()
    traces = {p.name: p.read_bytes() for p in (out / "traces").glob("*.parquet")}
    proc = subprocess.Popen(_replay_cmd("run", "--policy", "corecoder", logs, "--out", str(out), "-q"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: any(p.name.startswith(".") for p in (out / "traces").iterdir()), proc)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert (out / "summary.json").read_bytes() == summary
    for name, data in traces.items():
        assert (out / "traces" / name).read_bytes() == data


def test_killed_sweep_keeps_the_previous_table(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    logs = str(REPO / "logs" / "explore-rereads.jsonl")
    _previous("sweep", "-p", "two-tier-corrected", "--axis", "tiers.1.trigger.at_tokens=60000,80000",
              logs, "--out", str(out), "--jobs", "1", "--no-plots", "-q")
    kept = {name: (out / "sweep" / name).read_bytes() for name in ("sweep.parquet", "sweep.csv")}
    start = time.monotonic()
    # a sweep long enough to be killed midway (three times the points: a faster engine made the
    # single axis finish inside the 4 s some of the time)
    proc = subprocess.Popen(_replay_cmd("sweep", "-p", "two-tier-corrected", "--axis",
                                        "tiers.1.trigger.at_tokens=40000:120000:1500", "--axis",
                                        "tiers.0.protect.frac=0.2,0.3,0.4", logs,
                                        "--out", str(out), "--jobs", "1", "--no-plots", "-q",
                                        "--no-cache"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: time.monotonic() - start > 4, proc)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    for name, data in kept.items():
        assert (out / "sweep" / name).read_bytes() == data


def _many_logs(folder: Path, n: int) -> None:
    folder.mkdir()
    source = (REPO / "logs" / "write-heavy.jsonl").read_text()
    for i in range(n):
        (folder / f"copy{i:02d}.jsonl").write_text(source + "\n" * (i + 1))


def _complete_keys(ds: Path) -> set[str]:
    return {p.name.removesuffix(store.ENTRY_SUFFIX) for p in (ds / "data").iterdir()
            if not p.name.startswith(".") and p.name.endswith(store.ENTRY_SUFFIX) and p.is_file()}


def test_killed_ingest_journal_reuses_every_finished_entry(tmp_path: Path) -> None:
    ds, many = tmp_path / "ds", tmp_path / "many"
    _many_logs(many, 40)
    proc = subprocess.Popen(_replay_cmd("ingest", str(many), "--out", str(ds), "-q", "--jobs",
                                        "1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: (ds / "data").is_dir() and len(_complete_keys(ds)) >= 3, proc)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    journalled = [json.loads(line) for line in (ds / "journal.jsonl").read_text().splitlines()]
    assert len(journalled) >= 2
    stale = f".{journalled[0]['key']}.tmp12345"  # as a killed ingest leaves them (a key's
    (ds / "data" / stale).mkdir()  # temporary: only the store's own names are removed)
    (ds / ".manifest.json.tmp777").write_text("{")
    report = _resumed("ingest", str(many), "--out", str(ds), "-q", "--json")
    assert report["cached"] == len(journalled) and report["failed"] == []
    assert len(store.read_manifest(ds)) == 40
    assert not (ds / "journal.jsonl").exists()
    assert not (ds / "data" / stale).exists()
    assert not (ds / ".manifest.json.tmp777").exists()


def test_interrupted_ingest_lists_every_finished_entry(tmp_path: Path) -> None:
    ds, many = tmp_path / "ds", tmp_path / "many"
    _many_logs(many, 40)
    proc = subprocess.Popen(_replay_cmd("ingest", str(many), "--out", str(ds), "-q", "--jobs",
                                        "2"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: (ds / "data").is_dir() and len(_complete_keys(ds)) >= 4, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    listed = {e.key for e in store.read_manifest(ds).values()}
    assert len(listed) >= 2 and "Traceback" not in err.decode()  # 2 workers: <= 2 unheard
    assert not [p for p in (ds / "data").iterdir() if p.name.startswith(".")]
    complete = _complete_keys(ds)
    assert listed <= complete
    # a worker may finish a file after the parent stopped listening: the journal has it
    assert _resumed("ingest", str(many), "--out", str(ds), "-q", "--json")["cached"] == \
        len(complete)


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_of_a_killed_ingest_exit(tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        import pytest
        pytest.skip("needs /proc to find the worker processes")
    ds, many = tmp_path / "ds", tmp_path / "many"
    _many_logs(many, 40)
    proc = subprocess.Popen(_replay_cmd("ingest", str(many), "--out", str(ds), "-q", "--jobs",
                                        "2"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        def started() -> bool:
            workers.update(_children(proc.pid))
            return len(workers) >= 2 and (ds / "data").is_dir() and len(_complete_keys(ds)) >= 1
        _wait_for(started, proc)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing assertion
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)]
