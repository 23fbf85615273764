"""One log record's JSON → its redacted copy: which string leaves are kept, hashed or replaced.

Default deny: a string leaf is kept only under a key known to hold an id, an enum, a tool or
model name or a timestamp (``replay.redact.keep_list``: one of another shape gets a stand-in,
``Redactor.ident``); a path (under ``PATH_KEYS``) becomes a stable hash
(``path_hash``: the same path always gives the same hash, its extension kept so a file stays
a file); a shell command becomes a stand-in that names the same operation on the hashed path
(``echo <marker>; cat <hash>``): a string under any key the ingest reads a command from
(``replay.shell_line.COMMAND_KEYS``; one that is no command, an error code under ``code``,
becomes an ``exec``'s: ``echo <marker>; run``), an argument vector joined as the ingest joins
it (``unwrap_argv``), a patch keeps its ``*** Update File:`` lines with hashed
paths; every other string is text and becomes a *draft* marker (``[REDACTED_CTXREPLAY
id=…]``), which ``replay.redact.archive`` turns into the exact marker of the block that shows
it; an ``encrypted_content`` becomes a marker declaring its length (with a salted digest).
Keys that are names, numbers, booleans and nulls are kept (a key that is not a name, such
as the file paths a Claude Code file-history snapshot is keyed by, is hashed like a path);
timestamps are shifted by whole days when asked (``replay.redact.time_shift``; so are the
moments inside kept ids, ``Redactor.kept_id``).  Formats whose parser reads text for its structure get the
little it needs kept (``Redactor`` fields, set per file by ``replay.redact.archive``).  Tool arguments that are a JSON text (Codex ``arguments``) are redacted inside and
written back as JSON.  A tool-input object left with no text gets one extra key,
``ctxreplay_redacted``, holding a marker, so the block still carries its original size.

Not here: the stand-ins of commands, actions and patches (``replay.redact.stand_ins``), the
exact figures (``replay.redact.marker_sizes``), the marker format (``replay.ingest.redaction``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.ops import PATCH_FILE
from replay.ingest.parsers.claude_code_persisted import PERSISTED_TAG, persisted_output
from replay.ingest.parsers.codex_compaction import encrypted_len
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.redaction import EXACT_WORD
from replay.redact.keep_list import (
    ATTACHMENT,
    DATA_KEYS,
    FILE_NAMED,
    ID_KEYED,
    INPUT_ENUMS,
    KEEP_KEYS,
    KEPT_VALUE,
    PATH_KEYED,
    PATH_KEYS,
    READ_IN_DATA,
    keeps,
    keeps_in_data,
)
from replay.redact.stand_ins import (
    EDITOR_COMMANDS,
    answer_stand_in,
    command_stand_in,
    patch_stand_in,
    swe_action_stand_in,
)
from replay.redact.time_shift import (
    CLOCK_KEY,
    EPOCH_KEYS,
    MOMENT,
    TIME_KEYS,
    shift_date,
    shift_epoch,
    shift_ids,
)
from replay.shell_line import COMMAND_KEYS, unwrap_argv

_JSON_TEXT_KEYS = frozenset({"arguments", "output"})
_INPUT_KEYS = frozenset({"input", "arguments", "action", "args"})
_NAME = re.compile(r"[A-Za-z_$-][A-Za-z0-9_-]{0,63}")
"""A key that is a name (kept; ``-n`` too, a grep flag, and ``$set``, a Gemini CLI update);
any other key is data."""
_TOOL_ROLES = frozenset({"tool", "function"})
"""Message roles whose ``name`` is a tool's (kept); on a message of any other role (``user``,
``system``) ``name`` is the participant's, a person's name (OpenAI chat messages): a stand-in."""
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_MAX_KEPT_NAME = 100
"""A longer name is hashed even when it is an id: every name of the archive stays short (a
255-byte name leaves no room for the temporary name it is written through)."""
_LAYOUT_FOLDERS = frozenset({"subagents", "workflows", "sessions"})
_LOG_SUFFIX = re.compile(r"(?:\.(?:traj|trajectory|export|events|meta))?\.(?:jsonl|json|traj|eval)$")
_ID_NAME = re.compile(r"(?:agent-(?:acompact-)?)?[0-9a-f]{6,}(?:-[0-9a-f]{2,})*")
_DIGEST = re.compile(r"[0-9a-f]{32,}")
"""A bare digest (md5, sha1, sha256 in hex): the hash of something the user had (Gemini CLI's
``tmp/<sha256 of the project's path>/``), which anyone can recompute from a guess; hashed with
the salt as any other name, never kept as an id."""
_DATED_NAME = re.compile(r"(rollout-|session-)(\d{4}-\d{2}-\d{2})(T[0-9-]*-[0-9a-f]{6,}(?:-[0-9a-f]{2,})*)")
INJECTED_KEY = "ctxreplay_redacted"
"""The key added to a tool input that kept no text (it carries the block's marker)."""


def draft(key: str) -> str:
    """The draft marker of one text leaf (``key`` names it in the file's table)."""
    return f"[{EXACT_WORD} id={key}]"


DRAFT = re.compile(r"\[" + EXACT_WORD + r" id=([0-9a-z]+)\]")
"""A draft marker; group 1 is its key."""


@dataclass(slots=True)
class Redactor:
    """Redacts records of one archive (paths hash the same across its files)."""

    salt: str = ""
    shift_days: int = 0
    paths: dict[str, str] = field(default_factory=dict)
    """Original path → hash, every one met (the same for the whole archive)."""
    fenced: re.Pattern[str] | None = None
    """mini-swe-agent: the action block of an assistant message (the default fence only)."""
    swe_tools: frozenset[str] | None = None
    """SWE-agent: the tool names its history calls (an ``action`` naming one keeps the name)."""
    flags: re.Pattern[str] | None = None
    """Words a parser looks for in a text (ATIF's compaction notes): kept after its marker."""
    prefixes: tuple[str, ...] = ()
    """Tags a parser reads at a text's start (Codex's own ``<environment_context>`` messages are
    no user turn): kept before the marker."""
    keep: frozenset[str] = frozenset()
    """Keys whose values this file's format uses as enums, besides ``KEEP_KEYS`` (OpenHands'
    ``action`` / ``observation`` kinds)."""
    needles: list[str] = field(default_factory=list)
    """Texts a parser looks for inside other texts (``replay.redact.payload``): a text holding
    one is written as markers around the needle's own marker (``_split_needles``)."""
    occurrences: list[tuple[str, str]] = field(default_factory=list)
    """(draft key, text) of every text leaf met, in (deterministic) walk order."""
    places: list[tuple[int, int]] = field(default_factory=list)
    """Each occurrence's unit (into ``units``: each record, and each object directly below a
    record, such as a Codex line's ``payload``) and its number inside the unit."""
    units: list[Any] = field(default_factory=list)
    split: dict[int, str] = field(default_factory=dict)
    """Occurrence number → the draft key it gets instead of its text's
    (``replay.redact.marker_sizes.split_by_block``)."""
    _scope: str = ""
    """Inside a tool input: a digest of the whole input (its texts get keys of their own)."""
    _data: bool = False
    """Inside a ``DATA_KEYS`` subtree."""
    _clock: bool = False
    """Inside a ``CLOCK_KEY`` object (its numbers are epoch times)."""
    _found_text: bool = False
    _unit_start: int = 0
    _depth: int = 0
    _root: Any = None
    data_keys: frozenset[str] = DATA_KEYS
    """This file's data-subtree keys (``data_keys``)."""
    idents: dict[str, str] = field(default_factory=dict)
    """Original id, enum or timestamp of another shape than ``KEPT_VALUE`` → its stand-in
    (``ident``; the same for the whole archive)."""
    used: set[str] = field(default_factory=set)
    """The keys of ``idents`` and ``paths`` given out since ``used`` was last emptied (the
    archive counts those of the files it wrote: a refused file's are in no copy)."""

    def ident(self, value: str) -> str:
        """The stand-in of an id, an enum or a timestamp not kept as written (a space in it,
        over 128 characters), or of an attachment's hash: ``x`` and 16 hex of a salted hash.
        Equal values get equal stand-ins, distinct ones (all but surely) distinct ones, so
        calls and results still pair; never a text marker, shared with a text of same words."""
        if value and value not in self.idents:
            digest = hashlib.sha256(f"{self.salt}\0id\0{value}".encode("utf-8", "surrogatepass"))
            self.idents[value] = f"x{digest.hexdigest()[:16]}"
        if value:
            self.used.add("id\0" + value)
        return self.idents.get(value, value)

    def path_hash(self, path: str) -> str:
        """The stable stand-in of ``path``: ``p<12 hex>`` plus its extension (and a trailing
        slash when it had one)."""
        got = self.paths.get(path)
        if got is None:
            digest = hashlib.sha256((self.salt + "\0" + path).encode("utf-8", "replace"))
            tail = path.rstrip("/").rsplit("/", 1)[-1]
            ext = m.group(0) if (m := _EXT.search(tail)) and tail != m.group(0) else ""
            got = self.paths[path] = (f"p{digest.hexdigest()[:12]}{ext}"
                                      + ("/" if path.endswith("/") and path != "/" else ""))
        self.used.add("path\0" + path)
        return got

    def file_path(self, rel: str) -> str:
        """The archive's name for a file at ``rel`` (a relative path, ``/``-separated): each
        folder and file name replaced by a salted hash (``f<12 hex>``) with the format's file
        suffix kept (``.jsonl``, ``.traj.json``); kept as written only when it is an id (a
        session uuid, ``agent-<hex>``, ``rollout-<date>T…-<uuid>`` with the date shifted; never
        a bare digest, ``_DIGEST``) or a folder name a format's layout needs (``subagents``,
        ``workflows``, ``sessions``, digits: ``2026/09/02``)."""
        return "/".join(self._segment(part) for part in rel.split("/"))

    def _segment(self, name: str) -> str:
        if name in _LAYOUT_FOLDERS or name.isdigit() and len(name) <= 4 and not self.shift_days:
            return name  # a date folder (2026/09/02) is hashed when dates move
        m = _LOG_SUFFIX.search(name)
        stem, suffix = (name[:m.start()], m.group(0)) if m and m.start() else (name, "")
        if len(stem) <= _MAX_KEPT_NAME and (dated := _DATED_NAME.fullmatch(stem)):
            return (dated.group(1) + self.shift(dated.group(2)) + self.kept_id(dated.group(3))
                    + suffix)
        if len(stem) <= _MAX_KEPT_NAME and _ID_NAME.fullmatch(stem) \
                and not _DIGEST.fullmatch(stem):
            return self.kept_id(stem) + suffix
        prefix = "agent-" if stem.startswith("agent-") else ""
        digest = hashlib.sha256((self.salt + "\0name\0" + stem).encode("utf-8", "surrogatepass"))
        return f"{prefix}f{digest.hexdigest()[:12]}{suffix}"

    def text(self, value: str) -> str:
        """The draft marker standing for ``value``: equal texts get equal markers, except inside
        tool inputs that differ (a command run with two timeouts: two blocks of two sizes)."""
        if not value:
            return value
        key = hashlib.sha256((self._scope + "\0" + value).encode("utf-8", "surrogatepass")
                             ).hexdigest()[:16]
        self._found_text = True
        self.occurrences.append((key, value))
        self.places.append((len(self.units) - 1, len(self.places) - self._unit_start))
        return draft(self.split.get(len(self.occurrences) - 1, key))

    def start_file(self) -> None:
        """Before walking a file (again): occurrences are counted from the start."""
        self.occurrences, self.places, self.units = [], [], []

    def _split_needles(self, value: str) -> str:
        """``value``'s marker, or markers around each needle it holds (``needles``)."""
        if (needle := next((n for n in self.needles if n in value), None)) is None:
            return self.text(value)
        if value.strip() == needle:
            return self.text(needle)
        before, _, after = value.partition(needle)
        return self._split_needles(before) + self.text(needle) + self._split_needles(after)

    def encrypted(self, value: str) -> str:
        """An ``encrypted_content`` (Codex reasoning, a remote compaction's summary): a marker
        declaring its length, which the parser sizes Codex's estimates from, and a salted
        digest, so that two items stay two (``replay.ingest.parsers.codex_compaction``)."""
        digest = hashlib.sha256((self.salt + "\0enc\0" + value).encode("utf-8", "surrogatepass"))
        return f"[REDACTED_ENCRYPTED_CONTENT len={encrypted_len(value)} sha={digest.hexdigest()[:12]}]"

    def record(self, rec: Any) -> Any:
        """The redacted copy of one record."""
        self._root, self._depth = rec, 0
        self._unit(rec)
        return self._walk(rec, "")

    def _unit(self, value: Any) -> None:
        self.units.append(value)
        self._unit_start = len(self.places)

    def _walk(self, value: Any, key: str) -> Any:
        if key in self.data_keys and isinstance(value, (dict, list)) and not self._data:
            self._data = True
            try:
                return self._walk(value, "")
            finally:
                self._data = False
        if key == CLOCK_KEY and isinstance(value, dict) and not self._clock:
            self._clock = True
            try:
                return self._walk(value, "")
            finally:
                self._clock = False
        if key in PATH_KEYED and isinstance(value, dict) and not self._data:
            return {self.path_hash(k): self._walk(v, "") for k, v in value.items()}
        if key in ID_KEYED and isinstance(value, dict) and not self._data:
            return {self.ident(k): self._walk(v, "") for k, v in value.items()}
        if isinstance(value, dict):
            unit, self._depth = self._depth == 1, self._depth + 1  # an object below the record
            if unit:
                self._unit(value)
            out = {self._key(k): self._input(v, k) if k in _INPUT_KEYS and isinstance(v, dict)
                   else self._walk(v, k) for k, v in value.items()}
            self._depth -= 1
            if unit:
                self._unit(self._root)
            if key in FILE_NAMED and isinstance(value.get("name"), str) and not self._data:
                out["name"] = self.ident(value["name"])
            if isinstance(value.get("role"), str) and value["role"] not in _TOOL_ROLES \
                    and isinstance(value.get("name"), str) and not self._data \
                    and not self._scope:  # a chat participant's name: a person's
                out["name"] = self.ident(value["name"])
            if self.fenced and value.get("role") == "assistant" \
                    and isinstance(value.get("content"), str):
                out["content"] = answer_stand_in(value["content"], self.fenced, self.text,
                                                 self._command)
            return out
        if isinstance(value, list):
            if key in COMMAND_KEYS and all(isinstance(x, str) for x in value) and value:
                return ["bash", "-lc", self._command(unwrap_argv(value))]
            return [self._walk(x, key) for x in value]
        if isinstance(value, str):
            return self._string(value, key)
        if self.shift_days and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and (self._clock or key in EPOCH_KEYS):
            return self.shift_epoch(value)
        return value

    def _key(self, key: str) -> str:
        """A key that is a name, kept (inside a data subtree only ``READ_IN_DATA``); a key
        that is data (the file paths a Claude Code file-history snapshot is keyed by, any key
        of a data subtree), hashed like a path."""
        if self._data:
            return key if key in READ_IN_DATA else self.path_hash(key)
        return key if _NAME.fullmatch(key) else self.path_hash(key)

    def _input(self, args: dict[str, Any], key: str) -> dict[str, Any]:
        """A tool input: redacted, with a marker key when no text was left in it."""
        outer, self._found_text = self._scope, False
        self._scope = hashlib.sha256(json.dumps(args, sort_keys=True, ensure_ascii=False).encode(
            "utf-8", "surrogatepass")).hexdigest()
        out = self._walk_args(args, key)
        if not self._found_text:
            out[INJECTED_KEY] = self.text("\0injected")
        self._found_text, self._scope = True, outer
        return out

    def _walk_args(self, args: dict[str, Any], key: str) -> dict[str, Any]:
        out = {self._key(k): self._walk(v, k) for k, v in args.items()}
        command = args.get("command")
        if isinstance(command, str) and command in EDITOR_COMMANDS:  # an editor sub-command
            out["command"] = command
        return out

    def kept_id(self, value: str) -> str:
        """An id kept as written, the moments inside it moved by ``shift_days``
        (``replay.redact.time_shift.shift_ids``)."""
        return shift_ids(value, self.shift_days)

    def shift(self, value: str) -> str:
        """``value`` with its date moved by ``shift_days`` (``replay.redact.time_shift``)."""
        return shift_date(value, self.shift_days)

    def shift_epoch(self, value: float) -> float:
        """An epoch time moved by ``shift_days`` (``replay.redact.time_shift``)."""
        return shift_epoch(value, self.shift_days)

    def _string(self, value: str, key: str) -> str:
        if key in TIME_KEYS and MOMENT.fullmatch(value) and (self.shift_days or not self._data):
            return self.shift(value)  # a moment: kept, moved by --shift-days
        if key == "encrypted_content" and value:
            return self.encrypted(value)
        if value.startswith(ATTACHMENT) and KEPT_VALUE.fullmatch(value):
            return ATTACHMENT + self.ident(value[len(ATTACHMENT):])
        if self._data:
            if keeps_in_data(key, value):
                return value
            return self.path_hash(value) if key in PATH_KEYS and value else self.text(value)
        if not self._scope and (key in KEEP_KEYS or key in self.keep or key in TIME_KEYS):
            # inside a tool input a "name" may be anything
            return self.kept_id(value) if keeps(key, value, self.keep) else self.ident(value)
        if self._scope and value in INPUT_ENUMS.get(key, ()):
            return value
        if key in PATH_KEYS and (self._scope or key != "filename"):  # an attached file's name
            return self.path_hash(value) if value else value  # is text the model sees
        if key in COMMAND_KEYS:
            return value if value in EDITOR_COMMANDS else self._command(value)
        if key == "action" and self.swe_tools is not None:
            return swe_action_stand_in(value, self.swe_tools, self.path_hash, self.text,
                                       self._command)
        if key == "replay_config" and value.lstrip().startswith("{"):
            try:
                config = loads(value)
            except JSON_REFUSED:
                config = None
            if isinstance(config, dict):
                return json.dumps(self._walk(config, ""), ensure_ascii=False)
        if key in _JSON_TEXT_KEYS and value.lstrip().startswith("{"):
            try:
                parsed = loads(value)
            except JSON_REFUSED:
                parsed = None
            if isinstance(parsed, dict) and (key == "arguments" or "metadata" in parsed):
                return json.dumps(self._input(parsed, key), ensure_ascii=False)
        if "*** Begin Patch" in value and PATCH_FILE.search(value):
            return patch_stand_in(value, self.path_hash, self.text)
        if (persisted := persisted_output(value)) is not None:
            # Claude Code's preview of an output saved to a file: its declared size is kept
            return (f"{PERSISTED_TAG}{self.text(value)}\nOutput too large ({persisted[0]})"
                    "</persisted-output>")
        if self.flags and (m := self.flags.search(value)):
            return f"{self.text(value)} ({m.group(0)})"
        rest = value.lstrip()  # a tag it begins with (``prefixes``), as written
        head = next((value[:len(value) - len(rest) + len(p)] for p in self.prefixes
                     if rest.lower().startswith(p)), "")
        return head + (self._split_needles(value) if self.needles else self.text(value))

    def _command(self, command: str) -> str:
        """A shell line's stand-in (``replay.redact.stand_ins.command_stand_in``)."""
        return command_stand_in(command, self.path_hash, self._command_text)

    def _command_text(self, command: str) -> str:
        """A command's marker: for SWE-agent outside a tool input's scope (the step's action and
        its history call must get the same marker)."""
        if self.swe_tools is None:
            return self.text(command)
        scope, self._scope = self._scope, ""
        marker, self._scope = self.text(command), scope
        return marker
