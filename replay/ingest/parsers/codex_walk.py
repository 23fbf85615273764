"""The walk over one Codex rollout's records: lines and items into messages, requests, events.

See ``replay.ingest.parsers.codex`` for the format and what becomes of each record; usage is
``codex_usage``, rollbacks ``codex_rollback``, compaction records ``codex_compaction``, single
items ``codex_items``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.codex_compaction import (
    CompactionPairs,
    encrypted_len,
    encrypted_summary,
    replacement,
    summary_item,
)
from replay.ingest.parsers.codex_file import SKIPPED_LINES, parent_run_id, repeated
from replay.ingest.parsers.codex_rollback import Branch, roll_back
from replay.ingest.parsers.codex_said import Said
from replay.ingest.parsers.codex_usage import Pending, UsageTrack
from replay.ingest.parsers.counts import json_int
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import said

_ITEM_NAMES = {t: f"response_item/{t}" for t in (
    "message", "agent_message", "reasoning", *it.CALLS, *it.HOSTED, *it.OUTPUTS, *it.COMPACTIONS,
    "ghost_snapshot")}
_EVENT_NAMES = {t: f"event_msg/{t}" for t in (
    "token_count", "agent_reasoning", "agent_message", "user_message", "task_started",
    "task_complete", "item_completed", "thread_rolled_back")}
_STATE = "record_type/state"
"""Coverage names of the item and event types most rollouts hold and of a legacy state line,
made once."""
ORDINAL = "line ordinal"
"""Coverage name of the lines carrying an ``ordinal`` (0.14x+): modelled when it is above the
previous line's, skipped when not (one issue for the file) — lines are read in file order."""


@dataclass(slots=True)
class Walk:
    """The walk over one rollout: open assistant run, usage waiting for its run, metadata."""

    b: RunBuilder
    src: Source
    issues: list[Issue]
    records: list[tuple[int, dict[str, Any]]]
    usage: UsageTrack
    model: str = ""
    cli: str = ""
    originator: str = ""
    seen_meta: bool = False
    open_run: bool = False
    runs: list[Pending] = field(default_factory=list)
    compacted_since_output: bool = False
    fork_ts: str = ""
    """When this fork or subagent began ('' for a session of its own)."""
    replaying: bool = False
    """Inside the parent's lines a fork replays (from the parent's session_meta on, timestamps
    before ``fork_ts``): context, but the parent's requests, not this run's."""
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    call_ids: set[str] = field(default_factory=set)
    pairs: CompactionPairs = field(default_factory=CompactionPairs)
    nested: list[tuple[str, Any, str, bool]] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Message index of each user turn's start (what a rollback counts back over)."""
    branches: list[Branch] = field(default_factory=list)
    """Each rollback's abandoned branch (a copy of the run before it) and its requests."""
    said: Said = field(default_factory=Said)
    """The message items said so far (what a replacement history's copies are found in)."""
    ordinal: int | None = None
    """The last line's ``ordinal``."""
    out_of_order: int = 0
    """The first line whose ordinal is not above the previous line's (0: none)."""
    remote_last: tuple[int, Any] | None = None
    """(summary message, encrypted content) of the last remote compaction item counted."""
    odd: dict[str, list[int]] = field(default_factory=dict)
    """Problem -> [first line, lines]: said once for the file (``finish``)."""
    bad: list[str] = field(default_factory=list)
    """What the item being read held where text belongs that was no string (``said``, emptied)."""
    cov: Coverage = field(init=False)
    """``src.coverage`` (an attribute: read for every record)."""
    modelled: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    """Records of the common types modelled / skipped since ``count_records`` last moved them
    into ``cov`` (a dict update in the loop, not a ``Coverage`` call a record)."""

    def __post_init__(self) -> None:
        self.cov = self.src.coverage

    def count_records(self) -> None:
        """Move the counts of ``modelled`` and ``skipped`` into the file's coverage (the caller
        does, whatever ends the walk: the coverage of a failed parse is stored too)."""
        for name, n in self.modelled.items():
            self.cov.modelled(name, n)
        for name, n in self.skipped.items():
            self.cov.skipped(name, n)
        self.modelled.clear()
        self.skipped.clear()

    def record(self, no: int, rec: dict[str, Any]) -> None:
        if "ordinal" in rec:
            self.check_ordinal(no, rec["ordinal"])
        if "payload" in rec:
            kind, payload = rec.get("type"), rec["payload"]
            if not isinstance(payload, dict):
                raise ValueError(f"{kind!r} line: payload is {type(payload).__name__}, "
                                 "not an object")
            ts = rec.get("timestamp")
            if ts.__class__ is not str:  # (nearly every line has one: no call)
                ts = it.opt_str(rec, "timestamp")
            if self.replaying and ts >= self.fork_ts:
                self.replaying = False  # the fork's own lines begin
            if kind == "response_item":
                self.item(no, payload, ts)
            elif kind == "event_msg":
                self.event(no, payload)
            elif kind == "turn_context":
                self.model = it.opt_str(payload, "model") or self.model
                self.open_run = False
                m = self.modelled
                m["turn_context"] = m.get("turn_context", 0) + 1
            elif kind == "session_meta":
                self.meta(payload, ts)
            elif kind == "compacted":
                self.compacted(no, payload, ts)
            elif kind in SKIPPED_LINES:
                self.cov.skipped(str(kind))
            else:
                self.cov.unknown(str(kind))
        elif "record_type" in rec:  # (legacy: half the lines are "state")
            rt = rec["record_type"]
            name = _STATE if rt == "state" else f"record_type/{rt}"
            s = self.skipped
            s[name] = s.get(name, 0) + 1
        elif "type" in rec:
            ts = rec.get("timestamp")
            self.item(no, rec, ts if ts.__class__ is str else it.opt_str(rec, "timestamp"))
        elif "id" in rec and "timestamp" in rec:
            self.meta(rec, it.opt_str(rec, "timestamp"))
        else:
            self.issues.append(Issue(self.src.path, no, "record has no 'type' or 'payload' "
                                                        "(skipped)"))

    def said_bad(self, no: int) -> None:
        """Say ``bad`` (about the message being written, at line ``no``) and empty it."""
        said(self.b, self.bad, line=no)
        self.bad.clear()

    def check_ordinal(self, no: int, value: Any) -> None:
        """Count a line's ``ordinal``: one not above the previous line's is counted apart and
        said once for the file (``finish``)."""
        n = json_int(value)
        if n is None or (self.ordinal is not None and n <= self.ordinal):
            self.cov.skipped(ORDINAL)
            self.out_of_order = self.out_of_order or no
        else:
            m = self.modelled
            m[ORDINAL] = m.get(ORDINAL, 0) + 1
        if n is not None:
            self.ordinal = n

    def item(self, no: int, p: dict[str, Any], ts: str) -> None:
        t, b = p.get("type"), self.b
        name = _ITEM_NAMES.get(t) if t.__class__ is str else None  # (no new string an item)
        if name is None:
            name = f"response_item/{t}"
        if isinstance(p.get("id"), str) and p["id"]:
            self.by_id[p["id"]] = p
        if t == "message":
            role = p.get("role")
            if role not in it.ROLES:
                raise ValueError(f"message role {role!r} is not user/assistant/developer/system")
            blocks = it.content(p.get("content"), self.bad)
            if role == "assistant":
                if not self.open_run:
                    self.output(ts)
            else:
                msg = self.start(it.ROLES[role], ts)
                if role == "user" and it.is_turn_start(blocks):
                    self.turns.append(msg)
            for kind, text in blocks or [("text", "")]:
                b.text(text, kind=kind)
            if self.bad:
                self.said_bad(no)
            self.said.add((str(role), it.joined(blocks)), b.msg_index)
        elif t == "agent_message":
            blocks = it.content(p.get("content"), self.bad)
            self.turns.append(self.start("user", ts))
            for kind, text in blocks or [("text", "")]:
                b.text(text, kind=kind)
            if self.bad:
                self.said_bad(no)
        elif t == "reasoning":
            text = it.reasoning(p, self.bad)
            if not self.open_run:  # (else ``output`` returns at once: no call)
                self.output(ts)
            b.text(text, kind="reasoning", encrypted_bytes=encrypted_len(p.get("encrypted_content")))
            if self.bad:
                self.said_bad(no)
        elif t in it.CALLS or t in it.HOSTED:
            call_id, tool, args = it.call(no, t, p)
            if not self.open_run:
                self.output(ts)
            b.tool_call(call_id, tool, args)
            self.call_ids.add(call_id)
            if t in it.HOSTED:
                b.tool_result(call_id, it.hosted_result(t, p))
        elif t in it.OUTPUTS:
            cid = p.get("call_id")  # (a non-empty string is opt_str's answer: no call)
            call_id = cid if cid.__class__ is str and cid else \
                it.opt_str(p, "call_id") or it.opt_str(p, "id")
            if not call_id:
                raise ValueError(f"{t} has no call_id")
            text, is_error = it.result(t, p, self.bad)
            self.start("tool", ts)
            b.tool_result(call_id, text, is_error=is_error, line=no)
            if self.bad:
                self.said_bad(no)
        elif t in it.COMPACTIONS:
            self.remote_compaction(p, ts, name)
            return
        elif t == "ghost_snapshot":
            self.cov.skipped(name)
            return
        else:
            self.cov.unknown(name)
            return
        m = self.modelled
        m[name] = m.get(name, 0) + 1

    def event(self, no: int, p: dict[str, Any]) -> None:
        t = p.get("type")
        name = _EVENT_NAMES.get(t) if t.__class__ is str else None  # (no new string an event)
        if name is None:
            name = f"event_msg/{t}"
        if t == "token_count":
            if p.get("info") is None:
                s = self.skipped
                s[name] = s.get(name, 0) + 1
                return
            if not isinstance(p["info"], dict):
                self.cov.skipped(f"{name} (info not an object)")
                self.note(no, f"token_count info is {type(p['info']).__name__}, not an object "
                          "(its usage skipped)")
                return
            fate = self.usage.token_count(no, p["info"], self.runs, replaying=self.replaying,
                                          compacted_since_output=self.compacted_since_output)
            if fate != "duplicate":
                self.open_run = False
            counts = self.modelled if fate == "modelled" else self.skipped
            counts[name] = counts.get(name, 0) + 1
        elif t == "item_completed" and isinstance(p.get("item"), dict):
            item = p["item"]
            name = f"{name}/{item.get('type')}"
            if item.get("type") in it.COMMANDS:
                ident, args, out, failed = it.command(item)
                if ident and ident in self.call_ids:
                    self.cov.skipped(name)  # the same command is a call item of the log
                    return
                self.nested.append((ident, args, out, failed))
                self.cov.modelled(name)
            else:
                self.cov.skipped(name)
        elif t == "thread_rolled_back":
            self.flush_nested("")
            cut = roll_back(self.b, no, p.get("num_turns"), self.turns, self.runs, self.branches)
            if cut is not None:
                self.runs, self.turns = cut
                self.open_run = False
            self.cov.modelled(name)
        else:
            if t == "task_started":
                self.usage.window(p)  # it carries model_context_window too
            s = self.skipped
            s[name] = s.get(name, 0) + 1

    def start(self, role: str, ts: str) -> int:
        """Start a non-assistant message (after the code-mode commands run so far); its index."""
        if self.nested:  # (``flush_nested`` returns at once without: no call)
            self.flush_nested(ts)
        self.open_run = False
        return self.b.message(role, ts=ts)

    def flush_nested(self, ts: str) -> None:
        """Code-mode commands seen since the last message, as nested calls in a tool message."""
        if not self.nested:
            return
        self.b.message("tool", ts=ts)
        for k, (ident, args, _out, failed) in enumerate(self.nested):
            call_id = ident or f"command-{self.b.n_blocks}-{k}"
            self.b.tool_call(call_id, "exec_command", args, text="", nested=True)
            self.b.tool_result(call_id, "", is_error=failed, nested=True)
        self.nested.clear()

    def output(self, ts: str) -> None:
        """Continue the open assistant run, or start one (taking usage recorded before it)."""
        if self.open_run:
            return
        if self.nested:
            self.flush_nested(ts)
        self.usage.report_stray()
        self.open_run = True
        self.compacted_since_output = False
        msg = self.b.message("assistant", ts=ts)
        self.runs.append(Pending(msg, ts, self.model, self.usage.take_pending(), self.replaying))

    def meta(self, p: dict[str, Any], ts: str) -> None:
        if self.seen_meta:  # a fork's replay of its parent's lines
            self.cov.skipped("session_meta")
            self.replaying = bool(self.fork_ts)
            return
        self.seen_meta = True
        self.cov.modelled("session_meta")
        self.cli = it.opt_str(p, "cli_version") or self.cli
        self.originator = it.opt_str(p, "originator") or self.originator
        self.model = it.opt_str(p, "model") or self.model
        for key in ("agent_path", "agent_nickname"):
            if isinstance(p.get(key), str) and p[key]:
                self.b.agent = p[key]
                break
        which, text = it.instructions(p)
        if which == "base_instructions" or which and not repeated(self.records, text):
            self.start("system", ts)
            self.b.text(text)
            self.cov.modelled(f"session_meta/{which}")
        elif which:
            self.cov.skipped(f"session_meta/{which}")  # repeated in a user message
        parent = it.parent_session(p)
        if parent:
            self.fork_ts = ts or it.opt_str(p, "timestamp")
            self.b.parent_run_id = parent_run_id(Path(self.src.path), parent, self.src.rel)
            self.cov.modelled("session_meta/parent") if self.b.parent_run_id else \
                self.cov.unknown("session_meta/parent (rollout not found beside this file)")

    def compacted(self, no: int, p: dict[str, Any], ts: str) -> None:
        history = replacement(p, self.by_id, lambda why: self.note(no, why))
        if p.get("message") is not None and not isinstance(p["message"], str):
            self.note(no, f"compacted: message is {type(p['message']).__name__}, not a string "
                          "(the summary read from the replacement history)")
        if not history and self.remote_last and self.remote_last[0] == self.b.msg_index:
            # no history to pair it by, right after a remote compaction item: its line
            self.pairs.standalone.discard(self.remote_last[1])
            self.note(no, "compacted line with no readable replacement history right after a "
                          "remote compaction item: taken as that compaction's line, not a second "
                          "compaction")
            self.cov.skipped("compacted")
            return
        if not self.pairs.compacted_line(history):  # the remote compaction item already counted
            self.cov.skipped("compacted/replacement_history item", len(history))
            self.cov.skipped("compacted")
            return
        text, enc, at = summary_item(p, history)
        kept = self.preserved([h for k, h in enumerate(history) if k != at])
        self.cov.modelled("compacted/replacement_history item (re-attached)", len(kept))
        self.cov.skipped("compacted/replacement_history item", len(history) - len(kept))
        if enc:
            self.cov.modelled("compacted/encrypted summary (sized from its encrypted bytes: "
                              "estimated)")
        self.summary(text, ts, preserved=kept, encrypted_bytes=enc)
        self.cov.modelled("compacted")

    def preserved(self, items: list[dict[str, Any]]) -> list[int]:
        """Messages of the stream a replacement history's items repeat (what the compaction
        re-attached after its summary), by role and text; the summary's own item excluded."""
        said = self.said.index()
        found: set[int] = set()
        for item in items:
            if item.get("type") != "message":
                continue
            key = (str(item.get("role")), it.joined(it.content(item.get("content"))))
            if key in said:
                found.add(said[key])
        return sorted(found)

    def remote_compaction(self, p: dict[str, Any], ts: str, name: str) -> None:
        enc = p.get("encrypted_content")
        if not self.pairs.remote_item(enc):
            self.cov.skipped(name)  # also in a compacted line's history: one compaction
            return
        n = encrypted_len(enc)
        text = p["summary"] if isinstance(p.get("summary"), str) and p["summary"] else \
            encrypted_summary(n) if n else ""
        self.summary(text, ts, encrypted_bytes=n)
        self.remote_last = (self.b.msg_index, enc)
        self.cov.modelled(name)
        if n:
            self.cov.modelled(f"{name}/encrypted_content (sized from its encrypted bytes: "
                              "estimated)")

    def summary(self, text: str, ts: str, *, preserved: list[int] | None = None,
                encrypted_bytes: int = 0) -> None:
        """A compaction: its event (no trigger or sizes: the rollout records none) and the
        summary message it points at."""
        self.usage.stray = 0  # the token_count just before a compaction measured the compaction
        self.flush_nested(ts)
        event = self.b.n_events
        # mid-turn (a model call before it and no user turn since): the harness compacted on
        # its own, as nobody typed /compact in the middle of a turn
        mid_turn = bool(self.runs) and (not self.turns or self.turns[-1] < self.runs[-1].msg)
        self.b.event("compaction", harness_compaction=True, trigger="auto" if mid_turn else "",
                      preserved_msgs=preserved)
        self.b.set_event(event, summary_msg=self.start("user", ts))
        self.b.summary(text, harness=True, counted=False, encrypted_bytes=encrypted_bytes)
        self.compacted_since_output = True

    def note(self, no: int, why: str) -> None:
        """A problem met on line ``no``: said once for the file, with its lines (``finish``)."""
        self.odd.setdefault(why, [no, 0])[1] += 1

    def finish(self) -> None:
        """Emit one request per assistant run, in order; set the run's model, harness, window."""
        self.flush_nested("")
        self.issues.extend(Issue(self.src.path, no, why if n == 1 else
                                 f"{why} ({n} lines, the first here)")
                           for why, (no, n) in self.odd.items())
        if self.out_of_order:
            n = self.cov.counts[(ORDINAL, "skipped")]
            self.issues.append(Issue(self.src.path, self.out_of_order, f"{n} line(s) carry an "
                                     "ordinal not above the previous line's (read in file "
                                     "order)"))
        self.b.window_tokens, self.b.compact_limit_tokens = self.usage.finish()
        models: dict[str, int] = {}  # (a dict, not a Counter: one lookup a request)
        for r in self.runs:
            if r.model:
                models[r.model] = models.get(r.model, 0) + 1
        self.b.model = max(models, key=models.__getitem__) if models else self.model
        self.b.harness = " ".join(x for x in ("codex", self.cli, self.originator) if x)
        for r in self.runs:
            if not r.replayed:
                self.b.request(output_msg=r.msg, ts=r.ts, model=r.model, **(r.usage or {}))
        for branch, runs in self.branches:
            branch.model, branch.harness = self.b.model, self.b.harness
            branch.window_tokens, branch.compact_limit_tokens = \
                self.b.window_tokens, self.b.compact_limit_tokens
            for r in runs:
                branch.request(output_msg=r.msg, ts=r.ts, model=r.model, **(r.usage or {}))
