"""Whether an ingest may write a folder as its store: only a new or empty folder, or one that is
already a store ``replay ingest`` wrote.  Checked once, before the ingest writes anything
(``check_ours``), for every ingest: ``replay ingest --out DIR`` and the project cache's dataset
that every command reading logs fills (``.ctxreplay/dataset``).

A store writes ``manifest.json``, ``index.parquet``, ``journal.jsonl``, ``.lock`` and ``data/``
and replaces them at will: a user's own files of those names (``--out proj`` with their
``index.parquet`` there) would be overwritten, their ``data/`` filled with entries.  So a folder
is the store's when

- it is missing, or holds nothing but a lock file (empty: ``filelock`` writes none) and the
  store's temporaries (``store_session.stale_name``): a new store; or
- its ``manifest.json`` is a regular file whose document is a ctxreplay manifest — its fields
  are the manifest's only (``schema_version``, ``entries`` of objects with a ``key``,
  ``index_sha256``, ``failed``) — and every other name in it is one the store writes, and
  every name in its ``data`` folder an entry's key (the shape ``store.KEY``) or a temporary of
  the store's.  A store file of the wrong kind there (a symlinked lock or entry, a manifest that
  is not JSON) is the store's damage, refused by the store's own checks when read (nothing
  changed); a manifest that is a symlink is refused here (before the lock is made beside it).

Anything else is refused (``OutputError``, exit 2), naming the folder and the first names that
are not the store's; nothing is written.  A manifest crafted to look like ours in a folder of
nothing but the store's names cannot be told from a store: it is one.

Not here: the store's layout (``replay.ingest.store``), its lock and temporaries
(``replay.ingest.store_session``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from replay.errors import OutputError
from replay.ingest import store, store_session
from replay.ingest.input_files import Unreadable, read_document
from replay.output_targets import shown_names

_FILES = ("manifest.json", "index.parquet", store_session.JOURNAL_FILE, store_session.LOCK_FILE)
"""The regular files a store keeps in its folder (beside ``data``)."""
_FIELDS = frozenset({"schema_version", "index_sha256", "entries", "failed"})
_PROBE = re.compile(r"\.write-check-\d+")
"""The file ``atomic_files.make_output_dir`` makes and removes to see that a folder is writable
(another ingest's, checking the same folder)."""


def check_ours(root: Path, option: str) -> None:
    """Refuse ``root`` unless an ingest may write it as its store (module doc).  A path that is
    not a folder is left to ``atomic_files.make_output_dir`` (it says so).

    Raises:
        OutputError: one line naming ``root``, ``option`` and what in it is not the store's.
    """
    try:
        names = sorted(os.listdir(root)) if root.is_dir() else []
    except OSError as exc:
        raise OutputError(f"{option} {root}: cannot list this folder ({exc.strerror or exc})"
                          ) from None
    manifest = "manifest.json" in names
    if manifest and os.path.islink(root / "manifest.json"):  # (no lock made beside it)
        _refuse(root, option, ["manifest.json (a symlink)"])
    if manifest and _foreign_manifest(root / "manifest.json"):
        _refuse(root, option, ["manifest.json (not a ctxreplay manifest)"])
    foreign = [n for n in (_not_ours(root, name, manifest) for name in names) if n]
    if manifest and not foreign and (root / "data").is_dir():
        foreign = [f"data/{n}" for n in (_not_entry(root / "data", name)
                                         for name in sorted(os.listdir(root / "data"))) if n]
    if foreign:
        _refuse(root, option, foreign)


def _refuse(root: Path, option: str, foreign: list[str]) -> None:
    shown = shown_names(foreign)
    raise OutputError(
        f"{option} {root}: not empty and not a store `replay ingest` wrote: {shown} "
        f"{'is' if len(foreign) == 1 else 'are'} not the store's; an ingest writes "
        "manifest.json, index.parquet, journal.jsonl and data/ there and would overwrite or "
        "mix with what is yours. Nothing was written: name a new or empty folder, or a store")


def _kind(path: Path) -> int:
    return os.lstat(path).st_mode


def _not_ours(root: Path, name: str, manifest: bool) -> str | None:
    """``name`` (with why) when it is not a name the store keeps in ``root``, else None."""
    if store_session.stale_name(name, in_data=False) or _PROBE.fullmatch(name):
        return None
    if manifest:  # a store: a file of its of the wrong kind is its damage, said when read
        return None if name in (*_FILES, "data") else name
    mode = _kind(root / name)
    if name == store_session.LOCK_FILE:  # (the lock alone: a new store whose ingest runs)
        return None if stat.S_ISREG(mode) and os.lstat(root / name).st_size == 0 else \
            f"{name} ({'a symlink' if stat.S_ISLNK(mode) else 'not an empty file'})"
    return f"{name} (a symlink)" if stat.S_ISLNK(mode) else \
        f"{name} (not a folder)" if name == "data" and not stat.S_ISDIR(mode) else name


def _not_entry(data: Path, name: str) -> str | None:
    """``name`` (with why) when it is not an entry's file, an older store's entry folder or a
    temporary of the store's in its ``data`` folder, else None."""
    if store_session.stale_name(name, in_data=True):
        return None
    # (an older ctxreplay kept an entry in a folder of its key's name; an entry's file of the
    # wrong kind is the store's damage, said when read)
    return None if store.KEY.fullmatch(name.removesuffix(store.ENTRY_SUFFIX)) else name


def _foreign_manifest(path: Path) -> bool:
    """Whether ``path`` is a regular file holding a JSON document that is not a ctxreplay
    manifest (of any schema version: an older store is rebuilt).  A manifest that cannot be
    read, is not JSON or not a regular file is a damaged store's (``store.read_manifest``
    refuses it, nothing written); its entries are checked in full when read."""
    if not stat.S_ISREG(_kind(path)):
        return False
    try:
        doc = json.loads(read_document(path))
    except (Unreadable, ValueError, RecursionError):
        return False
    return not _manifest_shape(doc)


def _manifest_shape(doc: Any) -> bool:
    if not isinstance(doc, dict) or not set(doc) <= _FIELDS or not {"schema_version",
                                                                     "entries"} <= set(doc):
        return False
    version, entries = doc["schema_version"], doc["entries"]
    return isinstance(version, str) and isinstance(entries, dict) and all(
        isinstance(e, dict) and "key" in e for e in entries.values())
