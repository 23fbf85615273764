"""Which files under ``replay redact --out`` are copies a redact wrote: the only files it
replaces.  A redacted copy holds ctxreplay's exact markers (``[REDACTED_CTXREPLAY id=…]``,
``replay.ingest.redaction.EXACT_WORD``): every text of a log becomes one, so every copy redact
writes has at least one, in its bytes or, for an Inspect ``.eval`` zip, in a member's.  A file
of another kind at a copy's name (a log of yours, kept under a session id redact keeps as its
name) is not written over: that copy is not written, one issue, exit 1 (as a symlink planted
at its name, ``replay.atomic_files``).  What else ``--out`` holds once the copies are written
(``others``: an earlier archive's copies under another salt's names, files of the user's) is
said: whoever reads the folder reads those too (each run of two archives twice).

Not here: writing the copies (``replay.redact.archive``).
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Collection
from pathlib import Path

from replay.ingest.input_files import Unreadable, max_document_bytes, read_input
from replay.ingest.parsers.inspect_eval_zip import MAX_ENTRIES, ZIP_ERRORS, read_entry
from replay.ingest.redaction import EXACT_WORD

_MARKER = f"[{EXACT_WORD} ".encode()
"""How every exact marker begins (``format_exact``)."""


def not_a_copy(dest: Path) -> str:
    """Why redact may not replace what is at ``dest`` ('' when it may: nothing there, a copy
    a redact wrote, or a symlink, which the write refuses itself without following it)."""
    try:
        mode = os.lstat(dest).st_mode
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"it cannot be checked ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return ""  # (refused by the write: never followed)
    if not stat.S_ISREG(mode):
        return "something other than a file is there"
    return "" if redacted_copy(dest) else "a file redact did not write is there (it holds no " \
        "ctxreplay marker)"


def redacted_copy(path: Path) -> bool:
    """Whether the regular file ``path`` holds a ctxreplay exact marker: in its bytes, or in a
    member of the zip it is (each read bounded as the ingest reads a member)."""
    try:
        data = read_input(path, follow=False)
    except Unreadable:
        return False
    if _MARKER in data:
        return True
    if not data.startswith(b"PK"):
        return False
    max_bytes = max_document_bytes()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return any(_MARKER in read_entry(z, info, max_bytes, max_bytes)
                       for info in z.infolist()[:MAX_ENTRIES] if not info.is_dir())
    except ZIP_ERRORS:
        return False


def others(out: Path, written: Collection[str]) -> list[str]:
    """Every file (or symlink, not followed) under ``out`` but the copies ``written`` (names
    relative to ``out``, ``/``-separated), sorted."""
    found = []
    for folder, dirs, files in os.walk(out):  # (a symlink to a folder is listed, not entered)
        below = Path(folder).relative_to(out)
        found += [(below / n).as_posix() for n in files]
        found += [(below / n).as_posix() for n in dirs if os.path.islink(os.path.join(folder, n))]
    return sorted(set(found) - set(written))
