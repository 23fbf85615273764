"""Whether a store entry's file is the one written: looked at without following a symlink or
waiting on a fifo, and checked against the checksum the manifest keeps (``store.entry_checksum``).

``entry_state`` says what is wrong in a word (``replay runs``' ``entry`` column); ``intact`` is
its yes or no (an ingest reuses an entry only when it is intact).  A command that reads an entry
checks the checksum of the bytes it reads (``store.read_entry``): no second read.

Not here: where entries live and their checksums (``replay.ingest.store``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from replay.errors import StoreError
from replay.ingest.store import Entry, entry_checksum, entry_file

ENTRY_OK = "ok"
"""``entry_state`` of an entry whose file is the one written."""
SWAPPED = "not the file written (its checksum differs: swapped or edited)"
"""``entry_state`` of a whole Parquet file that is not the entry's (what ``replay run`` refuses)."""
_PARQUET_END = b"PAR1"
"""The last bytes of every Parquet file (and of every entry file)."""


def entry_state(root: Path, key: str, checksum: str = "") -> str:
    """What a look at entry ``key``'s file finds: ``ENTRY_OK`` (a regular file that ends as a
    Parquet file ends and, when ``checksum`` is given, whose bytes match it), or what is wrong:
    'missing', 'a symlink or a crafted key', 'not a regular file', 'cut' (shorter than any
    entry, or its last bytes not Parquet's: truncated or overwritten), ``SWAPPED`` (a whole
    Parquet file, but not the one written: another entry's, or another file) or
    'unreadable (...)'."""
    try:
        path = entry_file(root, key)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except StoreError:
        return "a symlink or a crafted key"
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    try:
        mode, size = (st := os.fstat(fd)).st_mode, st.st_size
        if not stat.S_ISREG(mode):
            return "not a regular file"
        if size < 3 * len(_PARQUET_END):
            return "cut"
        if os.pread(fd, len(_PARQUET_END), size - len(_PARQUET_END)) != _PARQUET_END:
            return "cut"
        if checksum:
            with os.fdopen(fd, "rb", closefd=False) as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            if entry_checksum(key, [digest]) != checksum:
                return SWAPPED
        return ENTRY_OK
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    finally:
        os.close(fd)


def intact(root: Path, entry: Entry) -> bool:
    """Whether ``entry``'s file is stored and matches its checksum (False for an entry written
    before entries had one: ``replay ingest`` parses its file again)."""
    return bool(entry.checksum) and entry_state(root, entry.key, entry.checksum) == ENTRY_OK
