"""Which files an ingest reads: every log file under the paths given, and the name each is
stored under.

A folder is searched for ``LOG_SUFFIXES`` files (a store's own files excepted); a file named
directly is always taken; a path reached twice (given twice, as ``a.jsonl`` and ``./a.jsonl``,
or a folder and a file in it both given) is listed once, and each time it is reached again is
counted (``discover``'s ``repeated``) so that the command says so.  An OpenHands V1 conversation folder (``base_state.json`` and ``events/event-*.json``;
or its ``events`` folder) is one input, the folder itself, named or met in a walk
(``replay.ingest.openhands_v1_folder``): its files are not inputs of their own, and the
folder and its ``events`` folder both named are one input.  Two paths to the same bytes (a copy, a hard link, a symlink) are two files: each is a run
of its own, under its own name (``replay.ingest.parsers.source.run_id_for``).  The stored name is the path
relative to the folder given, made unique so that two inputs never share a store entry.

Not here: reading or parsing them (``replay.ingest.batch``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from replay.ingest import store
from replay.ingest.openhands_v1_folder import (
    EVENTS_DIR,
    conversation_parts,
    conversations_in,
    taken_by,
)
from replay.safe_text import valid_text

LOG_SUFFIXES = (".jsonl", ".json", ".traj", ".eval")
"""File endings ingest looks at inside folders (files named directly are always tried)."""
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
"""Endings of a compressed copy (``session.jsonl.gz``): inside a folder such a log is passed
over and named (``discover``'s ``compressed``); named directly it is read and refused as
compressed (``replay.ingest.input_files.not_text``)."""
_COMPRESSED_LOGS = tuple(s + z for s in LOG_SUFFIXES for z in COMPRESSED_SUFFIXES)
_SKIP_NAMES = ("manifest.json",)


def discover(paths: Iterable[Path], *, not_followed: list[Path] | None = None,
             compressed: list[Path] | None = None,
             repeated: list[tuple[Path, Path]] | None = None) -> list[tuple[Path, Path]]:
    """Every log file under ``paths`` as (file, root), sorted; roots are the given folders.

    Inside folders, files whose name ends with ``LOG_SUFFIXES`` are taken, except a store's
    own files (a folder holding ``manifest.json`` and ``data/``); files named directly are
    always taken.  A path reached twice is listed once (the same path, not the same bytes:
    a symlink or a copy of a file is listed under its own path).  A symlink to a folder inside
    a folder is not followed (it may lead anywhere, ``/`` or back up: a loop); it is appended
    to ``not_followed`` so that the caller says so (naming the link reads it).  A compressed
    log inside a folder (``session.jsonl.gz``: ``COMPRESSED_SUFFIXES``) is not taken; it is
    appended to ``compressed``, for the same reason.  An OpenHands V1 conversation folder,
    named or found, is one entry, the folder (its ``events`` folder named alone: that folder,
    stored under ``<conversation>/events``), and its files none.  Each path reached again is
    appended to ``repeated`` with the path it was first reached as (``(again, first)``), so that
    the caller says so: it is read once, one run.
    """
    found: list[tuple[Path, Path]] = []
    seen: dict[str, Path] = {}  # (normalised absolute paths: equal strings, equal paths)
    seen_as: dict[Path, str] = {}  # a conversation's events folder named alone: seen as the
    # conversation folder (the same conversation, named both ways, is one input)
    for p in paths:
        if p.is_dir() and (parts := conversation_parts(p)) is not None:
            candidates = [(p, p.parent if parts[1] != p else p.parent.parent)]
            if parts[1] == p:
                seen_as[p] = os.path.abspath(p.parent)
        elif p.is_dir():
            entries = [(f, f.is_dir()) for f in p.rglob("*")]  # (one stat a path, not two)
            if not_followed is not None:
                not_followed.extend(sorted((f for f, folder in entries
                                            if folder and f.is_symlink()), key=_order))
            files = sorted((f for f, folder in entries if not folder), key=_order)  # FIFOs etc.
            # too: they are reported when read (``replay.ingest.input_files``), never opened
            # blocking
            stores = {f.parent for f in files if f.name in _SKIP_NAMES and store.is_store(f.parent)
                      and (f.parent / "data").is_dir()}
            candidates = [(f, p) for f in files if f.name.endswith(LOG_SUFFIXES)
                          and f.name not in _SKIP_NAMES
                          and not (stores and any(d in stores for d in f.parents))]
            events = [f for f, folder in entries if folder and f.name == EVENTS_DIR]
            if events and (conversations := conversations_in(  # (only beside events folders)
                    {d for e in events for d in (e, e.parent) if not d.is_symlink()}, files)):
                candidates = [c for c in candidates
                              if not any(taken_by(d, c[0]) for d in _owners(c[0], conversations))]
                candidates += [(d, p) for d in conversations]  # (one input each)
                candidates.sort(key=lambda c: _order(c[0]))
            if compressed is not None:
                compressed.extend(f for f in files if f.name.endswith(_COMPRESSED_LOGS))
        else:
            candidates = [(p, p.parent)]
        for f, root in candidates:
            key = seen_as[f] if seen_as and f in seen_as else os.path.abspath(f)
            if key not in seen:
                seen[key] = f
                found.append((f, root))
            elif repeated is not None:
                repeated.append((f, seen[key]))
    return found


def _owners(f: Path, conversations: set[Path]) -> list[Path]:
    """The conversation folders that may take file ``f`` (its folder's, or its parent's)."""
    return [d for d in (f.parent, f.parent.parent) if d in conversations]


def _order(path: Path) -> tuple[str, ...]:
    """A path's sort key: its parts, which order paths as paths order themselves (``sorted`` of
    paths compares them pairwise in Python: more CPU than the walk)."""
    return path.parts


def sources(found: list[tuple[Path, Path]]) -> list[str]:
    """The stored source name of each discovered file: its path relative to its root, made
    unique (a later file whose relative path is taken gets its root's name, then its full path,
    in front) so that two inputs never share one store entry."""
    names: list[str] = []
    taken: set[str] = set()
    for path, root in found:
        rel = relative_source(path, root)
        if rel in taken:  # (the full path only then: resolving takes four lstat calls)
            prefixed = f"{root.name}/{rel}" if root.name else rel
            full = prefixed if prefixed not in taken else valid_text(_resolved(path).as_posix())
            rel = full if full not in taken else rel
        taken.add(rel)
        names.append(rel)
    return names


def relative_source(path: Path, root: Path | None) -> str:
    """``path`` relative to the folder it was found in (its name alone when outside it), as
    valid text: a name's bytes that are not UTF-8 are written ``\\xff``
    (``replay.safe_text.valid_text``), so the name can be stored, hashed and printed."""
    if root is None:
        return valid_text(path.name)
    try:
        rel = path.relative_to(root).as_posix() if path != root else path.name
    except ValueError:
        rel = path.name
    return valid_text(rel)


def _resolved(path: Path) -> Path:
    """``path`` resolved, or made absolute as it is when it cannot be (a symlink loop: then
    reading it reports the loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: "Symlink loop" (Python < 3.13)
        return path.absolute()
