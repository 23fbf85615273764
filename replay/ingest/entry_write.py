"""One store entry's file written atomically: under a temporary name, then renamed to its key.

``write_entry`` writes a file's tables at once; ``NewEntry`` an entry whose runs come one at a
time (a big Claude Code file's, each tokenised and written before the next is made:
``replay.ingest.parse_file``'s ``sink``).  Either leaves nothing but a complete entry: the file
is renamed to ``KEY.parquet`` once every byte is written (and journalled: ``before_rename``),
and a file not finished is removed.

Not here: the entry file's bytes (``replay.ingest.entry_file``), where entries live and their
checksums (``replay.ingest.store``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Self

from replay.atomic_files import open_folder
from replay.ingest.entry_file import EntryWriter, write
from replay.ingest.store import (
    ENTRY_SUFFIX,
    TABLES,
    RunTables,
    entry_checksum,
    entry_file,
    remove_name,
)
from replay.safe_names import is_segment


def write_entry(root: Path, key: str, tables: RunTables,
                before_rename: Callable[[str], None] | None = None, *,
                folder: DataFolder | None = None) -> str:
    """Write one entry's tables into ``root/data/KEY.parquet`` atomically (written under a
    temporary name, then renamed), never through a symlink (a symlink in the entry's place is
    replaced, never followed); returns the entry's checksum (``entry_checksum``, of the bytes
    just written).  ``before_rename`` is called with that checksum once the bytes are written,
    before the rename: a journal line made there is never missing for a complete entry (a
    process killed between the two leaves a line whose file is not there, which the journal's
    reader skips).  ``folder``: ``root/data`` held open for entries written one after another
    (``DataFolder``)."""
    if not is_segment(key):
        entry_file(root, key)  # raises: the key is no plain file name
    with NewEntry(root, f".{key}.tmp{os.getpid()}", folder) as entry:
        entry.digest = write({name: getattr(tables, name) for name in TABLES}, entry.open())
        return entry.commit(key, before_rename)


class DataFolder:
    """``root/data`` held open for the entries one process writes one after another (an
    ingest in its own process: ``NewEntry``'s ``folder``): opened as ``NewEntry`` opens it
    (never through a symlink; made when missing) when the first entry's file is made, then
    each entry's file is made and renamed in it without opening the folder again (a stat, two
    opens and a close an entry, ~10 µs); ``close`` when done."""

    def __init__(self, root: Path) -> None:
        self.root, self.fd = root, -1

    def open(self) -> int:
        """The folder's descriptor (opened at the first call)."""
        if self.fd < 0:
            self.fd = open_folder(self.root, ("data",))
        return self.fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


class NewEntry:
    """An entry's file being written (``with NewEntry(root) as e``): under a temporary name in
    ``root/data`` (``open``; or its runs' tables given one run at a time to ``add``, written
    as they come: ``entry_file.EntryWriter``), then ``commit`` renames it to its key as
    ``write_entry`` does; an entry left without ``commit`` (its file failed, or an exception)
    leaves nothing.  No file is made before ``open`` or ``add``.  ``folder``: ``root/data``
    held open by the caller (``DataFolder``), else opened here for the file and closed with it."""

    def __init__(self, root: Path, tmp: str = "", folder: DataFolder | None = None) -> None:
        self.root, self.tmp, self.folder = root, tmp or f".entry.tmp{os.getpid()}", folder
        self.digest, self.data, self.renamed = "", -1, False  # (data: ``root/data``'s
        # descriptor while the file is open, else -1)
        self.file: BinaryIO | None = None
        self.writer: EntryWriter | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.file is not None and not self.renamed:
                self._remove()
        finally:
            self._release()

    def _release(self) -> None:
        """The file closed, then the folder's descriptor."""
        data, self.data = self.data, -1
        try:
            if self.file is not None:
                self.file.close()
        finally:
            if data >= 0 and self.folder is None:  # (a ``DataFolder``'s: its holder's)
                os.close(data)

    def _remove(self) -> None:
        """The unfinished file closed and removed."""
        assert self.file is not None
        if self.writer is not None:
            self.writer.abandon()
        self.file.close()
        remove_name(self.tmp, self.data)

    def open(self) -> BinaryIO:
        """The temporary file (made at the first call)."""
        if self.file is None:
            data = open_folder(self.root, ("data",)) if self.folder is None \
                else self.folder.open()
            try:
                self.file = os.fdopen(_create(self.tmp, data), "wb")
            except BaseException:
                if self.folder is None:
                    os.close(data)
                raise
            self.data = data
        return self.file

    def add(self, tables: RunTables) -> None:
        """The next run's (or runs') tables."""
        if self.writer is None:
            self.writer = EntryWriter(self.open())
        self.writer.add({name: getattr(tables, name) for name in TABLES})

    def restart(self) -> None:
        """Forget every run given so far (the file's parse starts over): the temporary file
        is removed, and the next ``add`` or ``open`` starts a new one."""
        if self.file is not None:
            try:
                self._remove()
            finally:
                self._release()
        self.file, self.writer = None, None

    def commit(self, key: str, before_rename: Callable[[str], None] | None = None) -> str:
        """Finish the file and rename it ``KEY.parquet`` (``write_entry``); its checksum."""
        if not is_segment(key):
            entry_file(self.root, key)  # raises: the key is no plain file name
        if self.writer is not None:
            self.digest = self.writer.close()
        self.open().close()
        checksum = entry_checksum(key, [self.digest])
        name, data = f"{key}{ENTRY_SUFFIX}", self.data
        if before_rename is not None:
            before_rename(checksum)
        try:  # over a file or a symlink: replaced
            os.rename(self.tmp, name, src_dir_fd=data, dst_dir_fd=data)
        except IsADirectoryError:  # a folder in the file's place: no file's place, removed
            shutil.rmtree(name, ignore_errors=True, dir_fd=data)
            os.rename(self.tmp, name, src_dir_fd=data, dst_dir_fd=data)
        self.renamed = True
        return checksum


def _create(name: str, folder: int) -> int:
    """A new file ``name`` in ``folder`` (a descriptor), never through a symlink: what is there
    under that name (a file a killed ingest left, with this process's id; a symlink; a folder)
    is removed first.  Created first and removed only when that fails: no look-up an entry."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        return os.open(name, flags, 0o644, dir_fd=folder)
    except FileExistsError:
        remove_name(name, folder)
    return os.open(name, flags, 0o644, dir_fd=folder)
