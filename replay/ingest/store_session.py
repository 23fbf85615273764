"""An ingest's hold on a store: one writer at a time, and nothing lost when it is interrupted.

- ``writing(root)``: a real file lock (``DIR/.lock``, ``filelock``) held for the whole ingest,
  so two ingests into one store run one after the other and both end with all their entries
  in the manifest; a process that has to wait says so (``on_wait``, stderr by default).
- The journal (``DIR/journal.jsonl``): one line per entry, written by the worker as soon as the
  entry's files are complete, in whatever order workers finish.  The manifest is written when
  the ingest ends (also on Ctrl-C, with every entry the ingest heard of); the next ingest
  adopts every journalled entry whose files are complete (after a kill -9, or entries of
  workers stopped by Ctrl-C), so finished work is reused.  Each line is checked like a
  manifest entry.
- Temporary files and folders an interrupted ingest left (``.KEY.tmpPID``, ``.KEY.oldPID``,
  ``.manifest.json.tmpPID`` ...) are removed when the next ingest takes the lock.

Not here: the store's layout (``replay.ingest.store``), the ingest loop (``replay.ingest.batch``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from replay.errors import StoreError
from replay.ingest import store
from replay.ingest.entry_state import intact

LOCK_FILE = ".lock"
JOURNAL_FILE = "journal.jsonl"
_STALE_ROOT = re.compile(r"\.(?:manifest\.json|index\.parquet|journal\.jsonl)\.(?:tmp|old)\d+")
_STALE_DATA = re.compile(rf"\.(?:entry|{store.KEY.pattern})\.(?:tmp|old)\d+")
"""Names of the temporary files and folders ``store`` writes (``.NAME.tmpPID``/``.oldPID``), in
the store's folder (its manifest, index, journal) and in ``data`` (an entry's key, or ``entry``):
only these are its own.  Any other name is left, whatever it looks like: the folder named may
hold the user's files (``.thesis.tmp1``)."""


def stale_name(name: str, *, in_data: bool) -> bool:
    """Whether ``name`` is one ``store`` gives a temporary of its own, in the store's folder
    or (``in_data``) in its ``data`` folder."""
    return (_STALE_DATA if in_data else _STALE_ROOT).fullmatch(name) is not None


def _say_waiting(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def writing(root: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the store's lock (waiting for another ingest to finish, and saying so), then
    remove what interrupted ingests left behind.  ``root`` must exist.

    Raises:
        StoreError: the lock's name holds something else than a file (a symlink, a folder, a
            fifo): nothing is read or changed.
    """
    _check_lock_file(root / LOCK_FILE)
    lock = filelock.FileLock(str(root / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        (on_wait or _say_waiting)(f"{root}: another ingest is writing this store; waiting for it "
                                  f"to finish (lock {root / LOCK_FILE})")
        lock.acquire()
    try:
        remove_stale(root)
        yield
    finally:
        lock.release()


def _check_lock_file(path: Path) -> None:
    """Refuse a lock file that is not a regular file (filelock opens it without following a
    symlink: a symlink there failed as "Too many levels of symbolic links", a folder as "Is a
    directory", with no word of what was wrong)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        what = "a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else \
            "not a regular file"
        raise StoreError(f"{path}: damaged store: the lock file is {what}; nothing was read or "
                         "changed (remove it, or ingest into a new directory)")


def remove_stale(root: Path) -> list[Path]:
    """Delete the temporary files and folders interrupted ingests left in ``root`` and
    ``root/data`` (only names ``store`` gives its own files' temporaries: ``_STALE_ROOT``,
    ``_STALE_DATA``; a symlink is unlinked, never followed).
    Call with the lock held.  Returns what was removed."""
    removed = []
    for folder, stale in ((root, _STALE_ROOT), (root / "data", _STALE_DATA)):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for p in folder.iterdir():
            if stale.fullmatch(p.name) is None:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def read_journal(root: Path) -> list[store.Entry]:
    """The entries an interrupted ingest journalled and whose files are complete, in order
    (a later line for the same source wins).  A truncated last line is ignored; a line that
    is not an entry ctxreplay writes makes the store damaged (``StoreError``)."""
    path = root / JOURNAL_FILE
    if path.exists() and not path.is_file() and not path.is_symlink():
        raise StoreError(_not_a_file(path))
    if not path.is_file() or path.is_symlink():
        return []
    entries = []
    with path.open("rb") as f:
        for no, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                break  # the line being written when the ingest was killed
            try:
                doc = json.loads(raw)
                source = doc.pop("source")
                if not isinstance(source, str):
                    raise TypeError("source is not a string")
                entry = store.entry_from_doc(source, doc, path)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                raise StoreError(f"{path}:{no}: damaged store: journal line is not an entry "
                                 f"({exc}); nothing was read or changed") from exc
            if intact(root, entry):
                entries.append(entry)
    return entries


def journal(root: Path, entry: store.Entry) -> None:
    """Record one finished entry (called by whichever process wrote its files).  One
    ``O_APPEND`` write of one line, so lines of concurrent workers never interleave, and a
    killed ingest loses none that was written."""
    fd = _open_journal(root)
    try:
        os.write(fd, _line(entry))
    finally:
        os.close(fd)


class Journal:
    """The journal held open for the entries one process writes one after another (an ingest in
    its own process): opened as ``journal`` opens it (never through a symlink, never a fifo:
    a regular file only) at the first line, then each line is one ``O_APPEND`` write as
    ``journal``'s, without opening the file again (an open, a stat and a close a line, ~5 µs);
    ``close`` when done (before the journal is forgotten)."""

    def __init__(self, root: Path) -> None:
        self.root, self.fd = root, -1

    def add(self, entry: store.Entry) -> None:
        """Record one finished entry (``journal``)."""
        if self.fd < 0:
            self.fd = _open_journal(self.root)
        os.write(self.fd, _line(entry))

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


def _line(entry: store.Entry) -> bytes:
    """An entry's line of the journal."""
    return (json.dumps({"source": entry.source, **store.entry_doc(entry)}) + "\n").encode()


def _open_journal(root: Path) -> int:
    """The journal's descriptor for appending (created when missing).

    Raises:
        StoreError: the journal's name holds something else than a regular file.
    """
    path = os.path.join(root, JOURNAL_FILE)  # (a string: no Path made an entry)
    try:  # (without blocking: opening a fifo to write waits for a reader for ever)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                     0o644)
    except OSError as exc:
        raise StoreError(f"{_not_a_file(path)} ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(_not_a_file(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_a_file(path: Path | str) -> str:
    return (f"{path}: damaged store: the journal is not a regular file; nothing was read from it "
            "(remove it, or re-ingest into a new directory)")


def forget_journal(root: Path) -> None:
    """Remove the journal: the manifest now lists every entry it held."""
    (root / JOURNAL_FILE).unlink(missing_ok=True)
