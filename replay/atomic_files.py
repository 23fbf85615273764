"""Writing files so that a reader never sees half of one: a temporary name, then a rename.

``atomic_write_bytes`` and ``atomic_write_text`` are what every writer of the project uses (the
store, traces, reports, sweeps, baselines); ``make_output_dir`` checks an output folder first,
so a command fails in one line before its work.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from replay.errors import OutputError


def make_output_dir(path: Path) -> Path:
    """Create the folder ``path`` (and its parents) if needed and check it can be written.

    Raises:
        OutputError: ``path`` (or a parent) is a file, or the folder cannot be created or is
            not writable; one line naming it and why.
    """
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: exists and is not a folder; give --out a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create this folder ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: this folder is not writable")
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def atomic_write_text(path: Path, chunks: Iterable[str]) -> None:
    """Write text given in pieces (e.g. ``JSONEncoder.iterencode``) through a temporary file and
    a rename; the whole text is never held in memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
