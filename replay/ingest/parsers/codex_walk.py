"""The walk over one Codex rollout's records: each line read into messages, requests, events.

See ``replay.ingest.parsers.codex`` for the format and what becomes of each record.  Here: a
line's kind (a modern line's payload, a legacy line), its ordinal, the session_meta (harness,
system prompt, parent) and the end of the walk (one request per assistant run).  The walk's
state is ``codex_walk_state``; response items ``codex_walk_items``, events ``codex_walk_events``,
compactions ``codex_walk_compaction``; usage ``codex_usage``, rollbacks ``codex_rollback``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import UNSET

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.codex_file import SKIPPED_LINES, parent_run_id, repeated
from replay.ingest.parsers.codex_walk_compaction import compacted
from replay.ingest.parsers.codex_walk_events import event
from replay.ingest.parsers.codex_walk_items import item
from replay.ingest.parsers.codex_walk_state import ORDINAL, Walk
from replay.ingest.parsers.content_text import held, not_a_string
from replay.ingest.parsers.counts import json_int
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue

_STATE = "record_type/state"
"""Coverage name of a legacy state line, made once."""


def record(w: Walk, no: int, rec: dict[str, Any]) -> None:
    """Line ``no`` of the rollout, read into the walk.

    Raises:
        ValueError, TypeError, KeyError, AttributeError: a record that cannot be read (the
            caller skips it with an issue).
    """
    if "ordinal" in rec:
        check_ordinal(w, no, rec["ordinal"])
    if "payload" in rec:
        kind, payload = rec.get("type"), rec["payload"]
        if not isinstance(payload, dict):
            raise ValueError(f"{kind!r} line: payload is {type(payload).__name__}, "
                             "not an object")
        ts = rec.get("timestamp")
        if type(ts) is not str:  # (nearly every line has one: no call)
            ts = timestamp(w, no, rec)
        if w.replaying and ts >= w.fork_ts:
            w.replaying = False  # the fork's own lines begin
        line: str = kind if type(kind) is str else ""  # (a string compared as one: no
        # generic comparison a line; '' is no line type: one of another type is said below)
        if line == "response_item":
            item(w, no, payload, ts)
        elif line == "event_msg":
            event(w, no, payload)
        elif line == "turn_context":
            w.model = it.opt_str(payload, "model") or w.model
            if payload.get("model", 0) is None:  # (Codex writes a string: null is said)
                w.note(no, not_a_string(None, "turn_context.model"))
            w.open_run = False
            m = w.modelled
            m["turn_context"] = m.get("turn_context", 0) + 1
        elif line == "session_meta":
            meta(w, payload, ts, no)
        elif line == "compacted":
            compacted(w, no, payload, ts)
        elif type(kind) is not str:  # (no key of the line types)
            raise ValueError(f"line type is {held(kind)}, not a string")
        elif kind in SKIPPED_LINES:
            w.cov.skipped(kind)
        else:
            w.cov.unknown(str(kind))
    elif "record_type" in rec:  # (legacy: half the lines are "state")
        rt = rec["record_type"]
        name = _STATE if rt == "state" else f"record_type/{rt}"
        s = w.skipped
        s[name] = s.get(name, 0) + 1
    elif "type" in rec:
        ts = rec.get("timestamp")
        item(w, no, rec, ts if type(ts) is str else timestamp(w, no, rec))
    elif "id" in rec and "timestamp" in rec:
        meta(w, rec, timestamp(w, no, rec), no)
    else:
        w.issues.append(Issue(w.src.path, no, "record has no 'type' or 'payload' (skipped)"))


def check_ordinal(w: Walk, no: int, value: Any) -> None:
    """Count a line's ``ordinal``: one not above the previous line's is counted apart and
    said once for the file (``finish``)."""
    n = json_int(value)
    if n is None or (w.ordinal is not None and n <= w.ordinal):
        w.cov.skipped(ORDINAL)
        w.out_of_order = w.out_of_order or no
    else:
        m = w.modelled
        m[ORDINAL] = m.get(ORDINAL, 0) + 1
    if n is not None:
        w.ordinal = n


def timestamp(w: Walk, no: int, d: dict[str, Any]) -> str:
    """``d``'s ``timestamp`` ('' when absent or null); one of another type (a number, an
    object) is unknown too, its record read all the same, and said once for the file
    (``Walk.note``).  Every Codex writes ISO-8601 text (``RolloutLine.timestamp: String``),
    so a number is no Codex clock: epoch seconds or milliseconds would be a guess."""
    value = d.get("timestamp")
    if type(value) is str:
        return value
    if value is not None:
        w.note(no, _NOT_TEXT)
    return ""


_NOT_TEXT = ("timestamp is not a string: read as unknown, the record kept (Codex writes ISO-8601 "
             "text; a number is not read as epoch seconds or milliseconds: that would be a guess)")


def meta(w: Walk, p: dict[str, Any], ts: str, no: int) -> None:
    """A session_meta (a legacy first line): harness, model, system prompt, parent session;
    a later one is a fork's replay of its parent's lines."""
    if w.seen_meta:  # a fork's replay of its parent's lines
        w.cov.skipped("session_meta")
        w.replaying = bool(w.fork_ts)
        return
    w.seen_meta = True
    w.cov.modelled("session_meta")
    w.cli = it.opt_str(p, "cli_version") or w.cli
    w.originator = it.opt_str(p, "originator") or w.originator
    for key in ("cli_version", "originator"):  # (Codex writes strings: a null is said)
        if p.get(key, 0) is None:
            w.note(no, not_a_string(None, f"session_meta.{key}"))
    w.model = it.opt_str(p, "model") or w.model
    path, nickname = (run_text(p.get(key, UNSET), f"session_meta.{key}", w.src.path, w.issues)
                      for key in ("agent_path", "agent_nickname"))  # (two fields of their
    # own, a V2 agent writing both: each checked; the run named by the path, else the nickname)
    w.b.agent = path or nickname or w.b.agent
    which, text = it.instructions(p)
    if which == "base_instructions" or which and not repeated(w.records, text):
        w.start("system", ts)
        w.b.text(text)
        w.cov.modelled(f"session_meta/{which}")
    elif which:
        w.cov.skipped(f"session_meta/{which}")  # repeated in a user message
    parent = it.parent_session(p)
    if parent:
        w.fork_ts = ts or timestamp(w, no, p)
        w.b.parent_run_id = parent_run_id(Path(w.src.path), parent, w.src.rel)
        w.cov.modelled("session_meta/parent") if w.b.parent_run_id else \
            w.cov.unknown("session_meta/parent (rollout not found beside this file)")


def finish(w: Walk) -> None:
    """Emit one request per assistant run, in order; set the run's model, harness, window."""
    w.flush_nested("")
    w.issues.extend(Issue(w.src.path, no, why if n == 1 else
                          f"{why} ({n} lines, the first here)")
                    for why, (no, n) in w.odd.items())
    if w.out_of_order:
        n = w.cov.counts[(ORDINAL, "skipped")]
        w.issues.append(Issue(w.src.path, w.out_of_order, f"{n} line(s) carry an ordinal not "
                              "above the previous line's (read in file order)"))
    b = w.b
    b.window_tokens, b.compact_limit_tokens = w.usage.finish()
    models: dict[str, int] = {}  # (a dict, not a Counter: one lookup a request)
    for r in w.runs:
        if r.model:
            models[r.model] = models.get(r.model, 0) + 1
    b.model = max(models, key=models.__getitem__) if models else w.model
    b.harness = " ".join(x for x in ("codex", w.cli, w.originator) if x)
    for r in w.runs:
        if not r.replayed:
            b.request(output_msg=r.msg, ts=r.ts, model=r.model, **(r.usage or {}))
    for branch, runs in w.branches:
        branch.model, branch.harness = b.model, b.harness
        branch.window_tokens, branch.compact_limit_tokens = \
            b.window_tokens, b.compact_limit_tokens
        for r in runs:
            branch.request(output_msg=r.msg, ts=r.ts, model=r.model, **(r.usage or {}))
