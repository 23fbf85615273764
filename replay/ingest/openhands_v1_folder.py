"""OpenHands V1 conversation folders: which folders are one, and the one document a folder is
read as.

The OpenHands software-agent-sdk (V1: the SDK, its CLI and agent server) persists a
conversation as a folder, ``<conversation id>/base_state.json`` (the conversation's state: the
agent's configuration and ``stats``, the token usage of every model call) and
``<conversation id>/events/event-NNNNN-<event id>.json``, one JSON event per file, numbered from
0 (``openhands/sdk/conversation/persistence_const.py``; ``events/.eventlog.lock`` is the SDK's
lock file).  The CLI keeps them under ``~/.openhands/conversations/``.

``conversation_parts`` tells such a folder (or its ``events`` folder named alone, read with the
``base_state.json`` beside it when there is one) from any other; ``replay.ingest.discover``
takes it as one input.  ``bundle`` is what reading it gives (``replay.ingest.input_files``
reads a folder so): a JSON Lines document, first a header line ``{"openhands_v1_conversation":
<folder name>, ...}``, then one line per file, ``{"file": <name in the folder>, "text": <its
text>}``, or ``{"file": ..., "refused": <why it was not read>}`` for an entry that is no
regular file (a symlink, which may lead out of the folder, is never followed), not UTF-8 or
unreadable, or that is not named as an event file.  Its bytes are hashed, cached and parsed
(``replay.ingest.parsers.openhands_v1``) as a file's are, so a changed event file is a changed
input.  Files are listed in name order: the same folder is the same bytes.

Not here: what the events mean (``replay.ingest.parsers.openhands_v1``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from replay.safe_text import valid_text

BASE_STATE = "base_state.json"
EVENTS_DIR = "events"
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")
"""An event file's name, as the SDK's ``EVENT_NAME_RE`` (its index padded to 5 digits at least)."""
LOCK_FILE = ".eventlog.lock"
"""The SDK's lock file in the events folder (empty; no event)."""
NOT_FOLLOWED = "a symlink (not followed: it may lead out of the folder)"
"""Why an entry of the folder that is a symlink is not read (seen so, or met when opened)."""
HEADER_KEY = "openhands_v1_conversation"
"""The key of a bundle's first line (the parser's detection)."""


def conversation_parts(path: Path) -> tuple[Path | None, Path] | None:
    """(its ``base_state.json``, its events folder) when ``path`` is an OpenHands V1
    conversation folder (an ``events`` folder holding a file named as an event file,
    ``event-NNNNN-<hex id>.json``: a ``base_state.json`` and an ``events`` folder alone are
    other tools' names too) or such an ``events`` folder itself; None otherwise (also for a
    symlinked ``events`` folder: never followed)."""
    try:
        if not path.is_dir():
            return None
        events = path / EVENTS_DIR
        if _real_dir(events) and _has_event_files(events):
            return path / BASE_STATE, events
        if path.name == EVENTS_DIR and _has_event_files(path):
            return path.parent / BASE_STATE, path
    except OSError:
        return None
    return None


def conversations_in(dirs: Iterable[Path], files: Iterable[Path]) -> set[Path]:
    """The conversation folders among the folders ``dirs`` of a walk whose files are ``files``
    (no symlinked folder: a walk lists them as not followed); an ``events`` folder only when
    its parent is none.  No file access: the walk's lists decide."""
    names: dict[Path, list[str]] = {}
    for f in files:
        names.setdefault(f.parent, []).append(f.name)
    dirset = set(dirs)
    found: set[Path] = set()
    for d in sorted(dirset, key=lambda p: p.parts):  # (a parent before its events folder)
        if d.name == EVENTS_DIR and d.parent in found:
            continue
        events = d / EVENTS_DIR
        own = events in dirset and _named(names, events)
        if own or (d.name == EVENTS_DIR and _named(names, d)):
            found.add(d)
    return found


def _named(names: dict[Path, list[str]], folder: Path) -> bool:
    """Whether a file of ``folder`` is named as an event file."""
    return any(EVENT_NAME.match(n) for n in names.get(folder, ()))


def taken_by(conversation: Path, f: Path) -> bool:
    """Whether file ``f`` of a walk is read as part of ``conversation`` (its ``base_state.json``
    or an entry of its events folder)."""
    if conversation.name == EVENTS_DIR and f.parent == conversation:
        return True
    return f.parent == conversation / EVENTS_DIR or f == conversation / BASE_STATE


class NotConversation(ValueError):
    """A folder ``bundle`` was given that is no OpenHands V1 conversation."""


def bundle(path: Path, max_bytes: int, read: Callable[[Path, int], bytes],
           refused: type[Exception]) -> bytes:
    """The JSON Lines document of conversation folder ``path`` (see the module's docstring);
    its files read with ``read(file, max_bytes)`` (``input_files.read_input``: regular files,
    bounded), whose ``refused`` (``Unreadable``) is the file's reason not to be read.

    Raises:
        NotConversation: ``path`` is no conversation folder.
        OSError: its events folder cannot be listed.
        OverflowError: the document would be over ``max_bytes``.
    """
    parts = conversation_parts(path)
    if parts is None:
        raise NotConversation("not an OpenHands V1 conversation folder")
    base, events = parts
    header = {HEADER_KEY: valid_text(path.name), "events": EVENTS_DIR if events != path else ".",
              "base_state": base is not None and _exists(base)}
    lines = [json.dumps(header, ensure_ascii=False)]
    total = len(lines[0]) + 1
    entries: list[tuple[str, Path]] = []
    if base is not None and _exists(base):
        entries.append((BASE_STATE if events != path else f"../{BASE_STATE}", base))
    prefix = f"{EVENTS_DIR}/" if events != path else ""
    entries += [(prefix + name, events / name) for name in sorted(os.listdir(events))
                if name != LOCK_FILE]
    for name, f in entries:
        rec: dict[str, object] = {"file": valid_text(name)}  # (a name not UTF-8: its bytes
        # as \\xff, as terminal() shows them; such a name is no event file's: refused below)
        why = _not_read(f, name.rsplit("/", 1)[-1], is_base=f == base)
        if not why:
            try:
                rec["text"] = read(f, max_bytes).decode("utf-8")
            except refused as exc:
                why = str(exc)
            except UnicodeDecodeError as exc:
                why = f"not UTF-8 (byte {exc.start})"
        if why:
            rec["refused"] = why
        line = json.dumps(rec, ensure_ascii=False)
        total += len(line.encode("utf-8", "surrogatepass")) + 1
        if total > max_bytes:
            raise OverflowError(f"the conversation's files are over the {max_bytes:,}-byte "
                                "limit per input")
        lines.append(line)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _not_read(f: Path, name: str, *, is_base: bool) -> str:
    """Why an entry of the folder is not read ('' for a regular file to read)."""
    try:
        mode = os.lstat(f).st_mode
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISLNK(mode):
        return NOT_FOLLOWED
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not is_base and not EVENT_NAME.match(name):
        return "not named as an event file (event-NNNNN-<id>.json)"
    return ""


def _real_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def _exists(p: Path) -> bool:
    return os.path.lexists(p)


def _has_event_files(events: Path) -> bool:
    try:
        with os.scandir(events) as it:
            return any(EVENT_NAME.match(e.name) for e in it)
    except OSError:
        return False
