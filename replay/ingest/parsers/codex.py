"""OpenAI Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``), legacy to 0.148.

Modern (cli >= ~0.40): lines ``{"timestamp", "type", "payload"}`` (0.14x may add ``ordinal``,
which is not needed: lines are in order).  ``response_item`` payloads are the Responses-API
items that form the context; ``event_msg`` ``token_count`` gives usage; ``turn_context`` gives
the model and ``session_meta`` the harness, the system prompt and the parent session.
Legacy (<= Sept 2025): a first line with top-level ``id``/``timestamp``/``instructions``, then
bare Responses items and ``{"record_type": "state"}`` markers; no usage, no model.

Every line and item type met is counted in ``src.coverage`` (``response_item/function_call``,
``event_msg/token_count``, ``event_msg/item_completed/CommandExecution``, …): modelled,
skipped (understood, not context) or unknown.  Skipped: ``world_state`` (harness state the
developer messages already carry), ``inter_agent_communication(_metadata)`` (the delivered
message is an ``agent_message`` item), ``token_usage_record``, ``security_risk_score``,
``realtime_item``, ``ghost_snapshot`` items, every ``event_msg`` but ``token_count`` (UI
echoes of items), and ``item_completed`` turn items other than code-mode commands.

The context, in order:

* ``session_meta.base_instructions.text`` (0.9x+) is the system prompt the model saw: a system
  message first.  Legacy ``instructions`` is the user's AGENTS.md, which the log repeats in a
  ``<user_instructions>`` message: a system message only when no message repeats it.  Only the
  first session_meta counts (a fork replays its parent's lines, metas included).
* Consecutive model-output items (reasoning, assistant message, calls) form ONE assistant
  message = one request; each tool output is its own ``tool`` message; user and developer
  (→ system) messages and ``agent_message`` items (another agent's message delivered to this
  one) are their own.  Hosted calls (``web_search_call``, ``image_generation_call``) carry their
  result: a call and its result in the assistant message (a web search's results are not in
  the log: an empty result).  ``tool_search_call``/``tool_search_output`` are a call and its
  result like function calls.
* Code mode: commands a program ran (``item_completed`` ``CommandExecution`` items whose id is
  no call of the log) become nested call/result rows with empty text (the model saw them inside
  the program's call and output, counted there), so re-read and argument analyses see them;
  they are not counted in ``n_tool_calls``.  A command that is also a call item is skipped.
* ``compacted`` is a harness compaction (a ``compaction`` ContextEvent pointing at its summary;
  the rollout records no trigger or sizes; one in the middle of a turn — a model call before it,
  no user turn since — is ``auto``, a user's ``/compact`` cannot come mid-turn): its ``message`` (or, when empty, the last message of its
  replacement history) becomes the summary; the replacement history (``replacement_history``
  items, or ``replacement_history_entries`` inline / ``reference`` / ``reference_v2`` resolved
  against earlier items' ids; an unresolved reference is an issue) is not added to the stream
  (the run keeps the raw stream).  A remote compaction item (``compaction``,
  ``compaction_summary``) is a compaction whose summary is encrypted: an empty summary, and
  coverage says so; the same item inside a ``compacted`` line is not a second compaction
  (paired once: a later compacted line whose history only retains an earlier compaction item is
  a compaction of its own).

Requests: one per assistant message, usage from ``token_count`` events with ``info`` (``info``
null: skipped), deduplicated (late-2025+ builds write each twice with the same
``total_token_usage``).  0.5x builds write a token_count BEFORE the items it measures, 0.10x+
right AFTER them: the file's order is taken from its first usage-bearing token_count.  Cache
writes: ``cache_creation_input_tokens`` / ``cache_write_input_tokens``.  When only totals are
recorded, usage is the difference of consecutive totals; totals that go down (after a
compaction or a rollback) make that request's usage unknown.  The token_count of a compaction's
own model call (just before or after the compacted line, with no model output between) is
skipped; any other token_count with no run to attach to is reported and dropped.

Forks and spawned subagents: the parent session (``forked_from_id``, ``parent_thread_id``,
``source.subagent.thread_spawn.parent_thread_id``) is linked as ``parent_run_id`` when its
rollout (``rollout-*-<id>.jsonl``) is beside this file or in the same ``sessions/`` tree.  A fork
replays its parent's lines (the parent's session_meta first, the parent's timestamps): they are
this run's context, but their assistant turns and token_counts are the parent's requests, not
this run's (no request rows; the token_counts counted as skipped).

Rollbacks: ``event_msg/thread_rolled_back`` (``num_turns``) drops the last turns from the
history as Codex does when it rebuilds a thread (from the N-th last user turn start: a user
message that is not context the harness wrote, or an ``agent_message`` item; all turns when N
is larger): those messages and the requests that produced them are left out of the run, and an
issue says how many (the run is the path the model went on with, as for Claude Code rewinds);
the rolled-back turns were sent and paid for, so they are a run of their own (agent
``abandoned-<k>``, linked to the session's run): the run as it stood before the rollback, with
requests only for the rolled-back turns.
A rollback reaching back past a compaction cuts the raw stream, not the replacement history.
``is_error`` comes only from a JSON output's non-zero ``metadata.exit_code``, an
output object's ``success: false`` / ``isError: true``, or a command's exit code.
Checked against real rollouts of cli 0.58 and 0.104 (the shared samples) and the documented
0.146–0.148 shapes (hand-made fixtures, ``tests/fixtures/codex``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.builder import Issue, RunBuilder, RunDraft, Source, json_int
from replay.ingest.parsers.codex_compaction import CompactionPairs, replacement
from replay.ingest.parsers.codex_file import (
    SKIPPED_LINES,
    evidence,  # noqa: F401 - the parser interface: NAME, sniff, evidence, parse
    parent_run_id,
    repeated,
    sniff,  # noqa: F401
    unique,
    usage_first,
)
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.jsonl import iter_records

NAME = "codex"

_NO_RUN = "token_count with no model output to attach it to (usage dropped)"
def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """The one run of a rollout file (modern or legacy); bad records become issues.

    Args:
        src: the rollout file.
        issues: problems found are appended here.
    """
    records = unique(list(iter_records(src, issues)), src.path, issues)
    if not records:
        issues.append(Issue(src.path, 0, "no JSON records in this Codex rollout"))
        return []
    walk = _Walk(RunBuilder(src, 0, NAME, issues), src, issues, usage_first(records), records)
    for no, rec in records:
        try:
            walk.record(no, rec)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            issues.append(Issue(src.path, no, f"{exc} (record skipped)"))
    if walk.b.n_blocks == 0:
        issues.append(Issue(src.path, 0, "no context items (response items) in this Codex rollout"))
        return []
    walk.finish()
    return [walk.b.build()] + [branch.build() for branch, _ in walk.branches]


@dataclass(slots=True)
class _Walk:
    """The walk over one rollout: open assistant run, usage waiting for its run, metadata."""

    b: RunBuilder
    src: Source
    issues: list[Issue]
    usage_first: bool
    records: list[tuple[int, dict[str, Any]]]
    model: str = ""
    cli: str = ""
    originator: str = ""
    seen_meta: bool = False
    open_run: bool = False
    runs: list[list[Any]] = field(default_factory=list)  # [msg, ts, model, usage, replayed]
    pending: dict[str, int | None] | None = None
    pending_line: int = 0
    prev_total: Any = None
    compacted_since_output: bool = False
    fork_ts: str = ""
    """When this fork or subagent began ('' for a session of its own)."""
    replaying: bool = False
    """Inside the parent's lines a fork replays (from the parent's session_meta on, timestamps
    before ``fork_ts``): context, but the parent's requests, not this run's."""
    stray: int = 0
    """Line of a token_count with no run to attach to, reported unless a compaction follows."""
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    call_ids: set[str] = field(default_factory=set)
    pairs: CompactionPairs = field(default_factory=CompactionPairs)
    nested: list[tuple[str, Any, str, bool]] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Message index of each user turn's start (what a rollback counts back over)."""
    branches: list[tuple[RunBuilder, list[list[Any]]]] = field(default_factory=list)
    """Each rollback's abandoned branch (a copy of the run before it) and its requests."""

    @property
    def cov(self) -> Coverage:
        return self.src.coverage

    def record(self, no: int, rec: dict[str, Any]) -> None:
        if "payload" in rec:
            kind, payload = rec.get("type"), rec["payload"]
            if not isinstance(payload, dict):
                raise ValueError(f"{kind!r} line: payload is {type(payload).__name__}, "
                                 "not an object")
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
                self.cov.modelled("turn_context")
            elif kind == "session_meta":
                self.meta(payload, ts)
            elif kind == "compacted":
                self.compacted(no, payload, ts)
            elif kind in SKIPPED_LINES:
                self.cov.skipped(str(kind))
            else:
                self.cov.unknown(str(kind))
        elif "record_type" in rec:
            self.cov.skipped(f"record_type/{rec['record_type']}")
        elif "type" in rec:
            self.item(no, rec, it.opt_str(rec, "timestamp"))
        elif "id" in rec and "timestamp" in rec:
            self.meta(rec, it.opt_str(rec, "timestamp"))
        else:
            self.issues.append(Issue(self.src.path, no, "record has no 'type' or 'payload' "
                                                        "(skipped)"))

    def item(self, no: int, p: dict[str, Any], ts: str) -> None:
        t, b = p.get("type"), self.b
        name = f"response_item/{t}"
        if isinstance(p.get("id"), str) and p["id"]:
            self.by_id[p["id"]] = p
        if t == "message":
            role = p.get("role")
            if role not in it.ROLES:
                raise ValueError(f"message role {role!r} is not user/assistant/developer/system")
            blocks = it.content(p.get("content"))
            if role == "assistant":
                self.output(ts)
            else:
                msg = self.start(it.ROLES[role], ts)
                if role == "user" and it.is_turn_start(blocks):
                    self.turns.append(msg)
            for kind, text in blocks or [("text", "")]:
                b.text(text, kind=kind)
        elif t == "agent_message":
            blocks = it.content(p.get("content"))
            self.turns.append(self.start("user", ts))
            for kind, text in blocks or [("text", "")]:
                b.text(text, kind=kind)
        elif t == "reasoning":
            text = it.reasoning(p)
            self.output(ts)
            b.text(text, kind="reasoning")
        elif t in it.CALLS or t in it.HOSTED:
            call_id, tool, args = it.call(no, t, p)
            self.output(ts)
            b.tool_call(call_id, tool, args)
            self.call_ids.add(call_id)
            if t in it.HOSTED:
                b.tool_result(call_id, it.hosted_result(t, p))
        elif t in it.OUTPUTS:
            call_id = it.opt_str(p, "call_id") or it.opt_str(p, "id")
            if not call_id:
                raise ValueError(f"{t} has no call_id")
            text, is_error = it.result(t, p)
            self.start("tool", ts)
            b.tool_result(call_id, text, is_error=is_error, line=no)
        elif t in it.COMPACTIONS:
            self.remote_compaction(p, ts, name)
            return
        elif t == "ghost_snapshot":
            self.cov.skipped(name)
            return
        else:
            self.cov.unknown(name)
            return
        self.cov.modelled(name)

    def event(self, no: int, p: dict[str, Any]) -> None:
        t = p.get("type")
        name = f"event_msg/{t}"
        if t == "token_count":
            if p.get("info") is None:
                self.cov.skipped(name)
            elif self.token_count(no, p["info"]):
                self.cov.modelled(name)
            else:
                self.cov.skipped(name)
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
            self.roll_back(no, p.get("num_turns"))
            self.cov.modelled(name)
        else:
            self.cov.skipped(name)

    def roll_back(self, no: int, num_turns: Any) -> None:
        """Drop the last ``num_turns`` user turns (see the module's docstring)."""
        n = json_int(num_turns)
        if n is None or n < 0:
            self.issues.append(Issue(self.src.path, no, f"thread_rolled_back: num_turns "
                                     f"{num_turns!r} is not a count (nothing rolled back)"))
            return
        if n == 0 or not self.turns:
            return
        self.flush_nested("")
        cut = self.turns[0] if n >= len(self.turns) else self.turns[-n]
        live = [r for r in self.runs if r[0] >= cut and not r[4]]
        if live:  # the rolled-back turns were sent and paid for: a run of their own
            k = len(self.branches) + 1
            self.branches.append((self.b.branch(k, f"abandoned-{k}"), live))
        msgs, _ = self.b.rewind(cut)
        self.runs = [r for r in self.runs if r[0] < cut]
        self.turns = [m for m in self.turns if m < cut]
        self.open_run = False
        self.issues.append(Issue(self.src.path, no, f"thread_rolled_back: the last {n} turn(s) "
                                 f"rolled back; {msgs} message(s) and {len(live)} request(s) "
                                 "left out (the model went on without them)" + (
                                     f"; their {len(live)} request(s) are the run "
                                     f"abandoned-{len(self.branches)}" if live else "")))

    def start(self, role: str, ts: str) -> int:
        """Start a non-assistant message (after the code-mode commands run so far); its index."""
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
        self.flush_nested(ts)
        self.report_stray()
        self.open_run = True
        self.compacted_since_output = False
        msg = self.b.message("assistant", ts=ts)
        self.runs.append([msg, ts, self.model, self.pending, self.replaying])
        self.pending = None

    def token_count(self, no: int, info: Any) -> bool:
        """Attach one usage record; False when it is a duplicate or a compaction's own call."""
        if not isinstance(info, dict):
            raise ValueError(f"token_count info is {type(info).__name__}, not an object")  # noqa: TRY004
        total = info.get("total_token_usage")
        if total is not None and total == self.prev_total:
            return False  # the same request's usage written a second time
        usage, bad = it.token_usage(info, self.prev_total)
        for what in bad:
            self.issues.append(Issue(self.src.path, no, f"token_count: {what} is not a token "
                                                        "count (kept as unknown)"))
        self.prev_total = total
        self.open_run = False
        if self.replaying:  # the parent's request, replayed in a fork: not this run's
            return False
        if self.compacted_since_output:  # the compaction's own model call: not a request here
            return False
        if self.usage_first:  # measures the run that follows
            if self.pending is not None:
                self.issues.append(Issue(self.src.path, self.pending_line, _NO_RUN))
            self.pending, self.pending_line = usage, no
        elif self.runs and self.runs[-1][3] is None:  # measures the run just written
            self.runs[-1][3] = usage
        else:  # a compaction's own call when a compaction follows; else reported (``output``)
            self.stray = no
            return False
        return True

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
        history = replacement(p, self.by_id, lambda why: self.issues.append(
            Issue(self.src.path, no, why)))
        self.cov.skipped("compacted/replacement_history item", len(history))
        if not self.pairs.compacted_line(history):  # the remote compaction item already counted
            self.cov.skipped("compacted")
            return
        self.summary(it.opt_str(p, "message") or it.summary_of(history), ts)
        self.cov.modelled("compacted")

    def remote_compaction(self, p: dict[str, Any], ts: str, name: str) -> None:
        enc = p.get("encrypted_content")
        if not self.pairs.remote_item(enc):
            self.cov.skipped(name)  # also in a compacted line's history: one compaction
            return
        self.summary(it.opt_str(p, "summary") if isinstance(p.get("summary"), str) else "", ts)
        self.cov.modelled(name)
        if enc:
            self.cov.skipped(f"{name}/encrypted_content (summary text unavailable)")

    def report_stray(self) -> None:
        if self.stray:
            self.issues.append(Issue(self.src.path, self.stray, _NO_RUN))
            self.stray = 0

    def summary(self, text: str, ts: str) -> None:
        """A compaction: its event (no trigger or sizes: the rollout records none) and the
        summary message it points at."""
        self.stray = 0  # the token_count just before a compaction measured the compaction
        self.flush_nested(ts)
        event = self.b.n_events
        # mid-turn (a model call before it and no user turn since): the harness compacted on
        # its own, as nobody typed /compact in the middle of a turn
        mid_turn = bool(self.runs) and (not self.turns or self.turns[-1] < self.runs[-1][0])
        self.b.event("compaction", harness_compaction=True, trigger="auto" if mid_turn else "")
        self.b.set_event(event, summary_msg=self.start("user", ts))
        self.b.summary(text, harness=True, counted=False)
        self.compacted_since_output = True

    def finish(self) -> None:
        """Emit one request per assistant run, in order; set the run's model and harness."""
        self.flush_nested("")
        self.report_stray()
        if self.pending is not None:
            self.issues.append(Issue(self.src.path, self.pending_line, _NO_RUN))
        models = Counter(r[2] for r in self.runs if r[2])
        self.b.model = models.most_common(1)[0][0] if models else self.model
        self.b.harness = " ".join(x for x in ("codex", self.cli, self.originator) if x)
        for msg, ts, model, usage, replayed in self.runs:
            if not replayed:
                self.b.request(output_msg=msg, ts=ts, model=model, **(usage or {}))
        for branch, runs in self.branches:
            branch.model, branch.harness = self.b.model, self.b.harness
            for msg, ts, model, usage, _ in runs:
                branch.request(output_msg=msg, ts=ts, model=model, **(usage or {}))
