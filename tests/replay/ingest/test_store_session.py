"""The store across ingests: a cached entry keeps its issues, a crafted journal line touches
nothing, a second ingest waits for the lock and says so, two concurrent ingests keep both
batches.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replay.cli import app
from replay.errors import OutputError, StoreError
from replay.ingest import store
from replay.ingest.batch import ingest
from tests.replay.ingest.store_helpers import LOG, REPO, _store, _victim, runner


def _damaged_log(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "damaged.jsonl"
    path.write_text(LOG.read_text() + "{not json\n")
    return path


def test_cached_entries_keep_their_issues(tmp_path: Path) -> None:
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    _damaged_log(logs)
    first = ingest([logs], ds, jobs=1)
    assert first.parsed == ["damaged.jsonl"] and first.issues
    again = ingest([logs], ds, jobs=1)
    assert again.cached == ["damaged.jsonl"]
    assert [str(i) for i in again.issues] == [str(i) for i in first.issues]
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q", "--strict"])
    assert result.exit_code == 1


def test_crafted_journal_line_touches_nothing(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    (entry,) = store.read_manifest(ds).values()
    line = {"source": "a.jsonl", **store.entry_doc(entry), "key": "../../victim"}
    (ds / "journal.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(StoreError, match="damaged store"):
        ingest([logs], ds, jobs=1)
    assert (victim / "precious.txt").exists()


def test_a_second_ingest_waits_for_the_lock_and_says_so(tmp_path: Path) -> None:
    import filelock
    ds, _logs = _store(tmp_path)
    more = tmp_path / "more"
    more.mkdir()
    shutil.copy(REPO / "logs" / "write-heavy.jsonl", more / "b.jsonl")
    said: list[str] = []
    lock = filelock.FileLock(str(ds / ".lock"))
    lock.acquire()

    def waiting(message: str) -> None:
        said.append(message)
        lock.release()  # the other ingest finishes now

    report = ingest([more], ds, jobs=1, on_wait=waiting)
    assert len(said) == 1 and "waiting" in said[0]
    assert report.parsed == ["b.jsonl"]
    assert set(store.read_manifest(ds)) == {"a.jsonl", "b.jsonl"}


def test_two_concurrent_ingests_keep_both_batches(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    import filelock
    ds = tmp_path / "ds"
    ds.mkdir()
    batches = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):
            (folder / f"{name}{i}.jsonl").write_text(LOG.read_text() + "\n" * (i + 1))
        batches.append(folder)
    lock = filelock.FileLock(str(ds / ".lock"))
    lock.acquire()  # both start while the store is busy: both must wait, then both finish
    errs = [tmp_path / f"err{i}.txt" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", "from replay.cli import app; app()", "ingest",
                               str(b), "--out", str(ds), "-q", "--jobs", "1"],
                              stdout=subprocess.DEVNULL, stderr=err.open("w"))
             for b, err in zip(batches, errs)]
    deadline = time.monotonic() + 120  # a bound on a hang, not a timing assertion
    while not all("waiting" in e.read_text() for e in errs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [e.read_text() for e in errs]
        time.sleep(0.1)
    lock.release()
    assert [p.wait(timeout=300) for p in procs] == [0, 0], [e.read_text() for e in errs]
    assert len(store.read_manifest(ds)) == 6


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to count threads")
def test_an_ingest_into_a_store_starts_no_native_threads(tmp_path: Path) -> None:
    """A second ingest reads the store's run index; read with Arrow's thread pool, it left two
    pool threads running, and a process exiting with them sometimes aborted ("terminate called
    without an active exception", exit -6: the Arrow shutdown race of apache/arrow#34314) after
    its work was done — test_two_concurrent_ingests_keep_both_batches failed so on a clean clone.
    Counted in a fresh process (a test worker may have started the pool already)."""
    import subprocess
    import sys
    (tmp_path / "a.jsonl").write_text(LOG.read_text())
    (tmp_path / "b.jsonl").write_text(LOG.read_text() + "\n")
    script = (
        "import os, sys\nfrom pathlib import Path\nfrom replay.ingest.batch import ingest\n"
        "t = Path(sys.argv[1])\nn = lambda: len(os.listdir('/proc/self/task'))\n"
        "ingest([t / 'a.jsonl'], t / 'ds', jobs=1)\nbefore = n()\n"
        "ingest([t / 'b.jsonl'], t / 'ds', jobs=1)\nprint(before, n())\n")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()
    before, after = map(int, out)
    assert after == before, f"{after - before} threads started by the second ingest"


def test_a_journal_held_open_writes_journals_lines_and_never_through_a_symlink(
        tmp_path: Path) -> None:
    """An ingest in one process holds its journal open (``Journal``): each line is the one
    ``journal`` writes, and a symlink planted at its name after it was opened is never written
    through (the lines go to the file opened); one there before is refused, as ``journal``
    refuses it."""
    from replay.ingest import store_session
    ds, _logs = _store(tmp_path)
    (entry,) = store.read_manifest(ds).values()
    apart = tmp_path / "apart"
    apart.mkdir()
    store_session.journal(apart, entry)
    store_session.journal(apart, entry)
    held = store_session.Journal(ds)
    try:
        held.add(entry)
        held.add(entry)
        assert (ds / "journal.jsonl").read_bytes() == (apart / "journal.jsonl").read_bytes()
        victim = _victim(tmp_path)
        (ds / "journal.jsonl").rename(tmp_path / "moved.jsonl")
        (ds / "journal.jsonl").symlink_to(victim / "precious.txt")
        held.add(entry)
    finally:
        held.close()
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (tmp_path / "moved.jsonl").read_bytes().count(b"\n") == 3
    refused = store_session.Journal(ds)
    with pytest.raises(StoreError, match="not a regular file"):
        refused.add(entry)
    refused.close()


def test_entries_written_in_a_data_folder_held_open_are_the_same_files(tmp_path: Path) -> None:
    """An ingest in one process opens the store's data folder once (``DataFolder``): its
    entries are the files ``write_entry`` writes otherwise, and a symlink in the data
    folder's place when it is opened is refused, as ``write_entry`` refuses it."""
    from replay.errors import OutputError
    from replay.ingest.entry_write import DataFolder, write_entry
    ds, _logs = _store(tmp_path)
    (entry,) = store.read_manifest(ds).values()
    tables = store.read_entry(ds, entry.key)
    out = tmp_path / "out"
    out.mkdir()
    folder = DataFolder(out)
    try:
        for name in ("a", "b"):
            write_entry(out, name, tables, folder=folder)
    finally:
        folder.close()
    assert folder.fd == -1
    for name in ("a", "b"):
        assert store.entry_file(out, name).read_bytes() == \
            store.entry_file(ds, entry.key).read_bytes()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "data").symlink_to(out / "data")
    refused = DataFolder(linked)
    with pytest.raises(OutputError, match="symlink"):
        write_entry(linked, "c", tables, folder=refused)
    refused.close()
    assert not store.entry_file(out, "c").exists()


def test_an_ingest_removes_only_its_own_temporaries(tmp_path: Path) -> None:
    """An ingest removes what an interrupted ingest left: the store's own temporary names only
    (``.manifest.json.tmpPID``, ``.KEY.tmpPID``).  It removed any ``.NAME.tmpN`` or
    ``.NAME.oldN``, file or folder, of the folder named: ``ingest logs --out proj`` into a
    folder of the user's deleted their ``.thesis.tmp1/`` and ``.draft.old2``; now such a folder
    is not written at all (``replay.ingest.store_owned``)."""
    logs, proj, ds = tmp_path / "logs", tmp_path / "proj", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(LOG, logs / "a.jsonl")
    (proj / ".thesis.tmp1").mkdir(parents=True)
    (proj / ".thesis.tmp1" / "thesis.tex").write_text("mine")
    (proj / ".draft.old2").write_text("mine")
    with pytest.raises(OutputError, match="not a store"):
        ingest([logs], proj, jobs=1)
    assert (proj / ".thesis.tmp1" / "thesis.tex").read_text() == "mine"
    assert (proj / ".draft.old2").read_text() == "mine"
    assert sorted(p.name for p in proj.iterdir()) == [".draft.old2", ".thesis.tmp1"]
    ingest([logs], ds, jobs=1)
    # an interrupted ingest's leftovers, then the next ingest
    (ds / ".manifest.json.tmp99999").write_text("{")
    [key] = [e.key for e in store.read_manifest(ds).values()]
    (ds / "data" / f".{key}.tmp99999").write_text("half")
    (ds / "data" / ".entry.tmp99999").write_text("half")
    ingest([logs], ds, jobs=1)
    assert not (ds / ".manifest.json.tmp99999").exists()
    assert not (ds / "data" / f".{key}.tmp99999").exists()
    assert not (ds / "data" / ".entry.tmp99999").exists()
