"""A Gemini CLI session's history as its records build it: messages by id (the last copy wins
and keeps the first copy's place), rewinds, ``$set`` checkpoints split into epochs at
compactions, and what of the records is wrong (said once per file: ``Notes``).

A message with no string ``id`` is read in file order under a key of its type and timestamp
(so the copies Gemini CLI appends as the message changes are still one message; with no
timestamp, its line).  A ``$rewindTo`` naming no message of the history is ignored.  A field
of the wrong type (``toolCalls`` an object, ``$set.messages`` a string, …) is said.

Coverage counts each record once: a ``$set`` under its keys together; a message's records
(its copies) under ``message/<type>``, moved to ``message (rewound: …)`` when a rewind drops the
message; a record written twice (the same JSON as the record before it, or a message the same
as its current copy: it changes nothing) under ``<kind> (repeat)``, skipped and said
(``repeat``).

Not here: the file's records and sessions (``replay.ingest.parsers.gemini_cli``), the run made
of a history (``replay.ingest.parsers.gemini_cli_emit``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.builder import MAX_BRANCHES
from replay.ingest.parsers.source import Issue, Source

MODELLED_TYPES = ("user", "gemini")
SKIPPED_TYPES = ("info", "error", "warning")
_SHAPES = (("toolCalls", list, "a list"), ("thoughts", list, "a list"),
           ("tokens", dict, "an object"))
"""Message fields read only with their type: (key, type, what it should be)."""

Messages = dict[str, dict[str, Any]]
"""Message key (its id; ``message_key`` for one without) -> the message's last copy."""


class Notes(dict[str, list[int]]):
    """Problem -> [first line, records]: each said once for the file (``said``)."""

    def note(self, no: int, why: str) -> None:
        self.setdefault(why, [no, 0])[1] += 1

    def said(self, path: str) -> list[Issue]:
        return [Issue(path, no, why if n == 1 else f"{why} ({n} records, the first here)")
                for why, (no, n) in self.items()]


def is_message(m: Any) -> bool:
    """A message record: an object with a string ``type`` (its ``id`` may be missing)."""
    return isinstance(m, dict) and isinstance(m.get("type"), str)


def record_kind(rec: dict[str, Any]) -> str:
    """What a record is, as coverage names it: ``$rewindTo``, ``$set``, ``message/<type>``,
    ``metadata`` or ``record``."""
    if "$rewindTo" in rec:
        return "$rewindTo"
    if "$set" in rec:
        return "$set"
    if is_message(rec):
        return f"message/{rec['type']}"
    return "metadata" if isinstance(rec.get("sessionId"), str) else "record"


def message_key(m: dict[str, Any], no: int) -> str:
    """The key a message is held under: its id, else its type and timestamp (its line when it
    has none), which no id can be (they begin with a NUL)."""
    if isinstance(m.get("id"), str):
        return str(m["id"])
    ts = m.get("timestamp")
    return f"\0{m['type']}\0{ts}" if isinstance(ts, str) and ts else f"\0line {no}"


def tool_calls(m: dict[str, Any]) -> list[Any]:
    """A message's tool calls: its ``toolCalls`` list, or the one call an object is (said when
    the message was read: ``History.message``)."""
    calls = m.get("toolCalls")
    return calls if isinstance(calls, list) else [calls] if isinstance(calls, dict) else []


@dataclass(slots=True)
class History:
    """The session's history as the records build it: epochs split at compactions."""

    src: Source
    issues: list[Issue]
    notes: Notes = field(default_factory=Notes)
    live: Messages = field(default_factory=dict)
    epochs: list[tuple[Messages, Messages]] = field(default_factory=list)
    """(the history before a compaction, the messages the compaction added)."""
    meta: dict[str, Any] = field(default_factory=dict)
    branches: list[tuple[Messages, set[str]]] = field(default_factory=list)
    """Each rewind's abandoned branch: the history it was made in, and the keys it dropped."""
    counted: dict[str, dict[str, int]] = field(default_factory=dict)
    """Message key -> its records counted as ``message/<type>`` modelled, by type (what a
    rewind moves to ``message (rewound: …)``)."""
    lines: dict[int, int] = field(default_factory=dict)
    """``id`` of a message copy held -> the line of its record (0: a single-document file, or
    a record of no line), for what is said about it (``gemini_cli_emit``)."""

    def repeat(self, rec: dict[str, Any], no: int) -> None:
        """Record ``rec`` (of line ``no``) is the same as the record before it (a line written
        twice): skipped, counted as a repeat of its kind and said once for the file."""
        self.src.coverage.skipped(f"{record_kind(rec)} (repeat)")
        self.notes.note(no, "record the same as the record before it (written twice: skipped "
                            "as a repeat)")

    def record(self, rec: dict[str, Any], no: int = 0) -> None:
        """Take record ``rec`` (of line ``no``; 0: the whole document) into the history."""
        cov = self.src.coverage
        if "$rewindTo" in rec:
            self.rewind(rec["$rewindTo"], no)
        elif "$set" in rec:
            update = rec["$set"]
            if not isinstance(update, dict):
                cov.unknown("$set (not an object)")
                self.notes.note(no, f"$set is {type(update).__name__}, not an object (ignored)")
                return
            if "messages" not in update:  # (else counted as the checkpoint it is)
                cov.skipped("$set/" + "+".join(sorted(update)) if update else "$set (empty)")
            if isinstance(update.get("messages"), list):
                self.checkpoint(update["messages"], no)
            elif "messages" in update:
                cov.unknown("$set/messages (not a list)")
                self.notes.note(no, f"$set.messages is {type(update['messages']).__name__}, not "
                                    "a list (ignored: the history is left as it was)")
            if isinstance(update.get("model"), str):
                self.meta.setdefault("model", update["model"])
        elif is_message(rec):
            self.message(rec, no)
        elif isinstance(rec.get("sessionId"), str) or isinstance(rec.get("messages"), list):
            cov.skipped("metadata")
            self.meta.update({k: v for k, v in rec.items() if k != "messages"})
            messages = rec.get("messages")
            if messages is not None and not isinstance(messages, list):
                cov.unknown("messages (not a list)")
                self.issues.append(Issue(self.src.path, no, "'messages' is not a list but a "
                                         f"{type(messages).__name__}: no message read from it"))
                return
            for m in messages or []:
                if is_message(m):
                    self.message(m, no)
                else:
                    cov.unknown("message (malformed)")
                    self.notes.note(no, "message that is no object with a string 'type' "
                                        "(skipped)")
        else:
            cov.unknown("record (unrecognised)")
            self.notes.note(no, "record of no kind Gemini CLI writes (skipped)")

    def rewind(self, target: Any, no: int) -> None:
        """``$rewindTo``: drop message ``target`` and everything after it (a branch of its own)."""
        cov = self.src.coverage
        if not isinstance(target, str):
            cov.unknown("$rewindTo (not a message id)")
            self.notes.note(no, f"$rewindTo is {type(target).__name__}, not a message id "
                                "(ignored)")
            return
        if target not in self.live:
            cov.skipped("$rewindTo (names no message of the history)")
            self.notes.note(no, "$rewindTo names no message of the history (ignored: nothing "
                                "rewound)")
            return
        cov.modelled("$rewindTo")
        ids = list(self.live)
        drop = ids[ids.index(target):]
        kept = len(self.branches) < MAX_BRANCHES
        for i in drop:  # the records of the messages dropped: counted as rewound instead
            for t, n in self.counted.pop(i, {}).items():
                cov.recount(f"message/{t}", "modelled", *(
                    ("message (rewound: in the abandoned branch's run)", "modelled") if kept
                    else ("message (rewound: in no run)", "skipped")), n)
        if kept:  # the abandoned branch was sent and paid for: a run
            self.branches.append((dict(self.live), set(drop)))
        else:  # (a copy of the history each: bounded as Claude Code's and Codex's)
            self.issues.append(Issue(self.src.path, no, f"$rewindTo: the {len(drop)} message(s) "
                                     f"rewound are in no run (the session has more than "
                                     f"{MAX_BRANCHES} rewinds: {MAX_BRANCHES} are runs)"))
        for i in drop:
            del self.live[i]

    def message(self, m: dict[str, Any], no: int) -> None:
        t = m["type"]
        fate = "modelled" if t in MODELLED_TYPES else "skipped" if t in SKIPPED_TYPES else \
            "unknown"
        if fate == "modelled" and self.live.get(message_key(m, no)) == m:
            self.src.coverage.skipped(f"message/{t} (repeat)")  # (it changes nothing)
            self.notes.note(no, "message the same as its copy before (written again "
                                "unchanged: skipped as a repeat)")
            return
        self.src.coverage.count(f"message/{t}", fate)
        if fate == "unknown":
            self.notes.note(no, f"message of type {t[:40]!r}, not one Gemini CLI writes "
                                "(skipped)")
        if fate == "modelled":
            key = self.key(m, no)
            self.live[key] = m
            self.lines[id(m)] = no
            by_type = self.counted.setdefault(key, {})
            by_type[t] = by_type.get(t, 0) + 1

    def key(self, m: dict[str, Any], no: int) -> str:
        """``message_key``; a message without an id and a field of the wrong type are said."""
        if not isinstance(m.get("id"), str):
            self.notes.note(no, "message with no string 'id' (read in file order; a copy with "
                                "the same type and timestamp is taken as that message updated)")
        for name, want, what in _SHAPES:
            value = m.get(name)
            if value is not None and not isinstance(value, want):
                self.notes.note(no, f"message {name} is {type(value).__name__}, not {what} ("
                                + ("read as one call)" if name == "toolCalls"
                                   and isinstance(value, dict) else "ignored)"))
        return message_key(m, no)

    def checkpoint(self, messages: list[Any], no: int) -> None:
        new = {self.key(m, no): m for m in messages
               if is_message(m) and m["type"] in MODELLED_TYPES}
        self.lines.update((id(m), no) for m in new.values())
        if any(i not in new for i in self.live):
            self.src.coverage.modelled("$set/messages (compaction)")
            self.epochs.append((self.live, {i: m for i, m in new.items() if i not in self.live}))
        else:
            self.src.coverage.modelled("$set/messages (update)")
        self.live = new

    def close(self) -> None:
        self.epochs.append((self.live, {}))
