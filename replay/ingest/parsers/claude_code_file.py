"""Claude Code transcript files as a whole: detection, and the files beside one.

``sniff`` / ``evidence`` recognise a transcript from its head (a user/assistant record with
Claude Code's keys decides; its other record types never do); ``copied`` tells whether a
session's records belong to that session's own file beside this one (a resumed or forked
session); ``parent_run_id`` finds the session a ``subagents/agent-*.jsonl`` file belongs to;
``metadata_only`` and ``companion`` name files of a project folder that hold no conversation.

Not here: the records (``replay.ingest.parsers.claude_code_records``), the walk over a file
(``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any

from replay.ingest.parsers.claude_code_records import NON_MESSAGE_TYPES
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.source import run_id_for, stored_source

_MESSAGE_TYPES = ("user", "assistant")
"""Record types that decide the format (with Claude Code's keys around a ``message`` object)."""
NAME_MAX_BYTES = 255
"""The longest file name, in bytes, that common file systems take (ext4, XFS, APFS, NTFS)."""
_LINK_KEYS = ("sessionId", "parentUuid", "logicalParentUuid", "uuid", "leafUuid", "messageId")
_SIDE_KEYS = ("isSidechain", "userType", "agentId", "requestId", "cwd", "gitBranch")
"""Keys of Claude Code records besides the links (subagent files may lack the links)."""
_HEAD_TYPE = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"')
_HEAD_LINK = re.compile(rb'"(?:' + b"|".join(k.encode() for k in _LINK_KEYS + _SIDE_KEYS)
                        + rb')"\s*:')
_HEAD_START = re.compile(rb'^\s*\{\s*"(?:type|parentUuid|logicalParentUuid|leafUuid|sessionId|uuid'
                         rb'|isSidechain)"\s*:')


def sniff(filename: str, head: bytes) -> bool:
    """True when some record of the head is a Claude Code message (see ``evidence``).

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    return _scan(head, first_only=True)[0] > 0


def evidence(filename: str, head: bytes) -> str:
    """What of Claude Code the head shows: its message records (which decide) or only its
    non-message records (which never do); '' when neither."""
    n_msg, others = _scan(head)
    kinds = ", ".join(f"{t} x{n}" for t, n in others.most_common(4))
    if n_msg:
        return (f"{n_msg} user/assistant record(s) with Claude Code keys in the first 64 KiB"
                + (f" (besides {kinds})" if kinds else ""))
    if others:
        return (f"only non-message Claude Code records ({kinds}) in the first 64 KiB, "
                "no user/assistant record to decide on")
    return ""


def metadata_only(filename: str, head: bytes) -> str:
    """What a head made only of Claude Code's own non-message records holds (a session file of
    ``summary`` or ``file-history-snapshot`` records: common in ``~/.claude/projects``), '' when
    it holds anything else (then it is no Claude Code file, or ``sniff`` took it)."""
    n_msg, others = _scan(head)
    lines = [x for x in head.split(b"\n") if x.strip()]
    complete = lines[:-1] if not head.endswith(b"\n") and len(lines) > 1 else lines
    if n_msg or not others or sum(others.values()) != len(complete):
        return ""
    return "only non-message Claude Code records (" + ", ".join(
        f"{t} x{n}" for t, n in others.most_common(4)) + ")"


def companion(path: PurePath) -> str:
    """Why a file of a Claude Code project folder is no transcript: a subagent's
    ``agent-*.meta.json`` beside its ``agent-*.jsonl``, or the project's
    ``sessions-index.json`` (its sessions' titles and paths) ('' for any other file)."""
    if path.name.startswith("agent-") and path.name.endswith(".meta.json") \
            and "subagents" in path.parts[:-1]:
        return "Claude Code subagent metadata (agent-*.meta.json), not a transcript"
    if path.name == "sessions-index.json":
        return "Claude Code's index of the project's sessions (sessions-index.json), not a " \
               "transcript"
    return ""


def _scan(head: bytes, *, first_only: bool = False) -> tuple[int, Counter[str]]:
    """(message records with Claude Code keys, non-message Claude Code record types) among the
    head's lines; an unparsable line (the head's cut-off last line, a first record longer than
    the head) counts as a message when it opens like one and has its type and a link key.
    ``first_only``: stop at the first message record, and decode only lines that could be one
    (what ``sniff`` needs)."""
    n_msg, others = 0, Counter[str]()
    if first_only and (b'"message"' not in head or not _says_message_type(head)):
        return n_msg, others  # no line could be one: not split and tested line by line (a
    # pretty-printed document's thousands of lines; a Codex rollout's lines, which say
    # "type": "message" but never "type": "user"): one search of the head instead
    for raw in _candidates(head) if first_only else head.split(b"\n"):
        if not raw.strip():  # (a candidate never is blank: this copies only a line of others)
            continue
        if n_msg and first_only:
            break
        try:
            rec = loads(raw)
        except JSON_REFUSED:
            if _HEAD_START.match(raw) and _HEAD_TYPE.search(raw) and _HEAD_LINK.search(raw) \
                    and b'"payload"' not in raw[:200]:
                n_msg += 1
            continue
        if not isinstance(rec, dict) or "payload" in rec:
            continue
        kind = rec.get("type")
        if kind in _MESSAGE_TYPES and _is_message(rec):
            n_msg += 1
        elif isinstance(kind, str) and kind in NON_MESSAGE_TYPES and (
                any(k in rec for k in _LINK_KEYS) or kind != "summary" and kind != "result"
                or kind == "result" and "agentId" in rec and "key" in rec):  # workflow journal
            others[kind] += 1
        elif kind == "system" and isinstance(rec.get("subtype"), str) \
                and any(k in rec for k in _LINK_KEYS):
            others["system"] += 1
    return n_msg, others


def _says_message_type(head: bytes) -> bool:
    """Whether ``_HEAD_TYPE`` matches somewhere in ``head``: tried at each ``"type"`` the head
    holds, found by a plain search (a pretty-printed trajectory's few: ~0.5 instructions a
    byte where the regex's own scan costs ~6), the rest of the head searched by the regex
    after ``_TYPE_TRIES`` of them (a Codex rollout's hundreds)."""
    pos = head.find(b'"type"')
    for _ in range(_TYPE_TRIES):
        if pos < 0:
            return False
        if _HEAD_TYPE.match(head, pos):
            return True
        pos = head.find(b'"type"', pos + 1)
    return pos >= 0 and _HEAD_TYPE.search(head, pos) is not None


_TYPE_TRIES = 16


def _candidates(head: bytes) -> Iterator[bytes]:
    """The lines of ``head`` that could be a message record (they say ``"message"`` and a
    user/assistant ``"type"``), in order: found by searching for ``"message"`` and testing
    the line around each hit in place, so lines without it are passed over inside one search
    (not each line tested in Python: a pretty-printed document's hundreds) and only these are
    copied out."""
    size = len(head)
    hit = head.find(b'"message"')
    while hit >= 0:
        start = head.rfind(b"\n", 0, hit) + 1
        end = head.find(b"\n", hit)
        end = size if end < 0 else end
        if _HEAD_TYPE.search(head, start, end):
            yield head[start:end]
        hit = head.find(b'"message"', end + 1)


def _is_message(rec: dict[str, Any]) -> bool:
    """A user/assistant record shaped as Claude Code writes it: a ``message`` object and a link
    key, or (subagent files) other Claude Code keys, or an Anthropic response (``msg_`` id)."""
    msg = rec.get("message")
    if not isinstance(msg, dict) or not ("content" in msg or "role" in msg):
        return False
    if any(k in rec for k in _LINK_KEYS) or any(k in rec for k in _SIDE_KEYS):
        return True
    mid = msg.get("id")
    return isinstance(mid, str) and mid.startswith("msg_")


def sibling(path: Path, sid: str) -> Path | None:
    """The file of session ``sid`` beside the transcript ``path`` (``<sid>.jsonl`` in its
    folder), or None when ``sid`` is this file's own, or no plain file name (a separator, a
    leading dot, a NUL: a session id from the file never leaves its folder; a lone surrogate
    or more than ``NAME_MAX_BYTES``: no file system names it)."""
    if not sid or sid == path.stem or any(c in sid for c in "/\\\x00") or sid.startswith("."):
        return None
    name = f"{sid}.jsonl"
    try:
        if len(os.fsencode(name)) > NAME_MAX_BYTES:
            return None
    except UnicodeError:
        return None
    return path.parent / name


def copied(path: Path, sid: str, cache: dict[str, bool]) -> bool:
    """Whether records of session ``sid`` belong to its own file beside this one."""
    if sid not in cache:
        file = sibling(path, sid)
        try:
            cache[sid] = file is not None and file.is_file()
        except OSError:  # (not a name this file system takes: never one of its files)
            cache[sid] = False
    return cache[sid]


def session_folder(path: Path) -> Path | None:
    """``<session>`` of a subagent file ``<session>/subagents/[workflows/<id>/…]agent-*.jsonl``
    (the nearest ``subagents`` folder's parent, at most 6 levels up: subagents nest and
    workflows keep theirs deeper), None when the file is in no ``subagents`` folder."""
    for up, folder in enumerate(path.parents):
        if up > 6:
            break
        if folder.name == "subagents":
            return folder.parent
    return None


def parent_run_id(path: Path, rel: str) -> str:
    """Run id of the ``<session>.jsonl`` beside the folder of a subagent file
    (``session_folder``) stored as ``rel``."""
    session = session_folder(path)
    if session is None:
        return ""
    return _session_run_id(session.parent / f"{session.name}.jsonl", path, rel)


def fork_parent_run_id(path: Path, sid: str, rel: str) -> str:
    """Run id of the session ``sid`` a forked session was copied from (``forkedFrom``), when
    its file is beside this one ('' otherwise, or for a name that is no plain file name)."""
    file = sibling(path, sid)
    return "" if file is None else _session_run_id(file, path, rel)


def _session_run_id(parent: Path, path: Path, rel: str) -> str:
    """Run id of the session file ``parent``, stored beside ``path`` (stored as ``rel``)."""
    try:
        st = parent.stat()
        return _run_id_of(str(parent), st.st_ino, st.st_size, st.st_mtime_ns,
                          stored_source(path, rel, parent))
    except OSError:
        return ""


@functools.lru_cache(maxsize=64)
def _run_id_of(path: str, inode: int, size: int, mtime_ns: int, source: str) -> str:
    """Run id of the session file at ``path`` (hashed once for all its subagents, again
    whenever the file changes: the file's identity, size and time are part of the key)."""
    with open(path, "rb") as f:
        return run_id_for(hashlib.file_digest(f, "sha256").hexdigest(), 0, source)
