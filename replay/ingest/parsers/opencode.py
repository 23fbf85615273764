"""OpenCode sessions: ``opencode export <sessionID> > session.json`` (one run per file).

How a user points at a session: OpenCode keeps sessions in its own store (SQLite in current
releases, one JSON file per session / message / part under
``~/.local/share/opencode/storage/`` in older ones), which no single file describes.  Its
``opencode export <sessionID>`` command writes the whole session as one JSON document,
``{info, messages: [{info, parts}], todos}``: that file is what ``replay ingest`` reads.  The
event stream of ``opencode run --format json`` (JSON Lines of ``{type, timestamp,
sessionID, part}``) is read too: the same parts, without the user's prompt.

Messages: ``info.role`` is ``user`` or ``assistant``; the content lives in ``parts[]``.  An
assistant message holds one or more steps, each one model call: ``step-start``, then
``reasoning`` / ``text`` / ``tool`` parts (``callID``, ``tool``, ``state{status, input,
output | error}``), then ``step-finish`` with that call's ``tokens{input, output,
reasoning, cache{read, write}}``.  Emitted per step: an assistant message (reasoning, text,
one ``tool_call`` per tool part), one request, then a ``tool`` message with the results as
OpenCode sends them back (an error's text; "[Tool execution was interrupted]" for a call
left pending or running).  An assistant message without step parts is one step using the
message's own ``tokens``.  A ``patch`` / ``snapshot`` part written after a step's ``step-finish``
belongs to that step (no call of its own).  Parts are read in id order (OpenCode's part ids
ascend with time; a real export listed them out of order: counted in the coverage); repeated
message and part ids, and parts without ids: ``replay.ingest.parsers.opencode_parts``.  User parts: text (``ignored`` ones skipped), files other than
text/directories (whose content OpenCode adds as text parts) as an image/file placeholder,
``subtask`` as the line OpenCode sends for it.

Tokens: OpenCode stores ``tokens.input`` *without* the cached part (it subtracts cache reads
and writes to price them apart), so the full prompt, ``Request.input_tokens``, is ``input +
cache.read + cache.write``; cache reads and writes are kept as recorded.

Compactions: a user message with a ``compaction`` part asks "What did we do so far?"; the
assistant message that answers it has ``summary: true``, and OpenCode's next requests start
from there.  That answer becomes one harness summary block (no request row: it is the
harness's summarisation call, whose prompt is the old history), pointed at by a
``compaction`` ContextEvent whose trigger is the compaction part's ``auto`` (auto / manual).
Tool outputs OpenCode later cleared (``state.time.compacted``) are kept whole, as the model
first saw them, counted in the coverage as ``part/tool (cleared later)``, and named by a
``microcompaction`` ContextEvent at the first message created after the clearing (OpenCode
sends "[Old tool result content cleared]" for them from then on).

Coverage types: ``message/<role>``, ``message/assistant (summary)``, ``part/<type>``,
``event/<type>`` (run streams), ``todos``.

Checked against: OpenCode's message-v2 schema and ``export`` command in anomalyco/opencode
(formerly sst/opencode; 2026 sources: ``packages/opencode/src/session/message-v2.ts``,
``src/cli/cmd/export.ts``) and its usage accounting; fixtures hand-made to that schema, and
two real exports of OpenCode 1.1.13 and 1.1.34 (tomjnsn/agentlogs, MIT).  Not handled: ``tail_start_id`` partial compactions
(the kept tail is not repeated after the summary), the older file-per-part storage layout
(export the session instead).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import held
from replay.ingest.parsers.jsonl import ItemLines, iter_records, load_or_salvage
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.opencode_parts import SKIPPED_PARTS, PartOrder
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import SNIFF_BYTES, Issue, Source
from replay.ingest.parsers.typed_text import name_field, text_field

NAME = "opencode"

_SESSION_ID = re.compile(rb'"(?:id|sessionID)"\s*:\s*"ses_')
_PARTS = re.compile(rb'"parts"\s*:\s*\[')
_EVENT = re.compile(rb'^\{"type"\s*:\s*"(?:step_start|text|reasoning|tool_use|step_finish)"'
                    rb'.*"part"\s*:\s*\{', re.MULTILINE)
_COMPACTION_PROMPT = "What did we do so far?"
_SUBTASK_PROMPT = "The following tool was executed by the user"
_INTERRUPTED = "[Tool execution was interrupted]"
_SKIPPED_PARTS = SKIPPED_PARTS


def sniff(filename: str, head: bytes) -> bool:
    """True for an OpenCode export (``ses_`` session ids and ``parts`` lists) or the JSON
    event stream of ``opencode run --format json``.

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    if _SESSION_ID.search(text) and _PARTS.search(text) and b'"messages"' in text:
        return True
    # (an event line anywhere in the head: a damaged first line is one line's issue)
    return _EVENT.search(text) is not None and b'"sessionID"' in text


def evidence(filename: str, head: bytes) -> str:
    """What of OpenCode the head shows; names the export command for its storage files."""
    text = head.lstrip()
    if _SESSION_ID.search(text) and _PARTS.search(text):
        return "OpenCode session and parts"
    if re.search(rb'"(?:sessionID|messageID)"\s*:\s*"(?:ses|msg)_', text):
        return ("an OpenCode storage file (one message or part): ingest `opencode export "
                "<sessionID>` output instead")
    return ""


@dataclass(slots=True)
class _Facts:
    """What the walk of one session keeps for its context events."""

    trigger: str = ""
    """``auto`` / ``manual`` of the compaction part waiting for its summary."""
    starts: list[tuple[int, Any]] = field(default_factory=list)
    """(message index, OpenCode ``time.created``) of each message emitted."""
    cleared: dict[float, list[str]] = field(default_factory=dict)
    """``time.compacted`` -> the calls whose output OpenCode cleared then."""
    order: PartOrder = field(default_factory=PartOrder)
    """The message and part ids met, and the messages read in a guessed order."""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from an OpenCode export or run event stream; problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per message, or line 0 for the file).
    """
    if _EVENT.search(src.data, 0, SNIFF_BYTES):  # (an event line in the head, as ``sniff``)
        return _events(src, issues)
    doc, found = load_or_salvage(src, issues, "messages", "messages", "session info lost")
    if doc is None:
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        issues.append(Issue(src.path, 0, "not an OpenCode export: no messages[] list"))
        return []
    if doc.get("todos") is not None:
        src.coverage.skipped("todos")
    messages = doc["messages"]
    lines = ItemLines(src, "messages", len(messages), found)
    info = _obj(doc.get("info"))
    b = RunBuilder(src, 0, NAME, issues, model=_model(messages),
                   harness=_harness(info, src.path, issues),
                   title=run_text(info.get("title", UNSET), "info.title", src.path, issues))
    facts = _Facts()
    for i, m in enumerate(messages):
        if facts.order.repeated(i, m, src.coverage):
            continue
        try:
            if not isinstance(m, dict):
                raise TypeError(f"expected an object, got {type(m).__name__}")
            _message(b, i, _obj(m.get("info")), m.get("parts"), facts)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            src.coverage.unknown("message (malformed)")
            issues.append(Issue(src.path, lines[i], f"messages[{i}]: {exc} (message skipped)"))
    facts.order.report(src, issues, lines.__getitem__)
    _microcompactions(b, facts)
    return [b.build()]


def _microcompactions(b: RunBuilder, facts: _Facts) -> None:
    """One ``microcompaction`` event per moment OpenCode cleared tool outputs, taking effect
    at the first message created after it."""
    starts = [(i, created) for i, created in facts.starts
              if isinstance(created, (int, float)) and not isinstance(created, bool)]
    moments = sorted(facts.cleared.items())
    at: dict[float, int | None] = {}
    k = 0  # the moments in time order: each one's message is where the last one's was found,
    # or later (the first created after a later moment is never before it); not a scan from 0
    for when in sorted(w for w, _ in moments if not math.isnan(w)):  # (NaN: no message after)
        while k < len(starts) and not starts[k][1] > when:
            k += 1
        at[when] = starts[k][0] if k < len(starts) else None
    for when, call_ids in moments:
        b.event("microcompaction", msg=at.get(when), call_ids=call_ids)


def _events(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """A ``run --format json`` stream: parts grouped by message, in order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for _, rec in iter_records(src, issues):
        part = rec.get("part")
        kind = rec.get("type")
        if not isinstance(part, dict):
            src.coverage.unknown(f"event/{kind}" if isinstance(kind, str) else "event (no type)")
            continue
        src.coverage.modelled(f"event/{kind}")
        groups.setdefault(_str(part.get("messageID")), []).append(part)
    b = RunBuilder(src, 0, NAME, issues, harness="opencode run")
    facts = _Facts()
    for parts in groups.values():
        _assistant(b, {}, parts, facts)
    _microcompactions(b, facts)
    return [b.build()]


def _model(messages: list[Any]) -> str:
    for m in messages:
        info = _obj(_obj(m).get("info"))
        if info.get("role") == "assistant" and isinstance(info.get("modelID"), str):
            provider = _str(info.get("providerID"))
            return f"{provider}/{info['modelID']}" if provider else info["modelID"]
    return ""


def _harness(info: dict[str, Any], path: str, issues: list[Issue]) -> str:
    version = run_text(info.get("version", UNSET), "info.version", path, issues)
    return f"opencode {version}" if version else "opencode"


def _message(b: RunBuilder, i: int, info: dict[str, Any], parts: Any, facts: _Facts) -> None:
    if not isinstance(parts, list):
        raise TypeError(f"parts is {held(parts)}, not a list")
    parts = facts.order.ordered(i, parts, b.source.coverage)
    role = info.get("role")
    if role == "user":
        b.source.coverage.modelled("message/user")
        _user(b, info, parts, facts)
    elif role == "assistant":
        if info.get("summary") is True:
            b.source.coverage.modelled("message/assistant (summary)")
            _count_parts(b, parts)
            event = b.n_events
            b.event("compaction", trigger=facts.trigger, harness_compaction=True)
            msg = b.message("assistant", ts=_ts(info))
            facts.starts.append((msg, _obj(info.get("time")).get("created")))
            b.set_event(event, summary_msg=msg)
            texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            b.summary("\n".join(t for t in texts if isinstance(t, str)), counted=False)
            for t in texts:
                if t is not None and not isinstance(t, str):
                    text_field(b, t, "summary part: text")
            facts.trigger = ""
        else:
            b.source.coverage.modelled("message/assistant")
            _assistant(b, info, parts, facts)
    else:
        b.source.coverage.unknown(f"message/{role}" if isinstance(role, str) else
                                  "message (no role)")
        raise ValueError(f"unknown role {role!r}")


def _count_parts(b: RunBuilder, parts: list[Any]) -> None:
    for p in parts:
        b.source.coverage.modelled(f"part/{_obj(p).get('type')}")


def _user(b: RunBuilder, info: dict[str, Any], parts: list[Any], facts: _Facts) -> None:
    cov = b.source.coverage
    facts.starts.append((b.message("user", ts=_ts(info)), _obj(info.get("time")).get("created")))
    for k, p in enumerate(parts):
        p = _obj(p)
        t = p.get("type")
        if t == "text":
            if p.get("ignored") is True:
                cov.skipped("part/text (ignored)")
                continue
            cov.modelled("part/text")
            b.text(text_field(b, p.get("text"), f"part {k} (text): text"))
        elif t == "file":
            mime = _str(p.get("mime"))
            if mime in ("text/plain", "application/x-directory"):
                cov.skipped("part/file (sent as text)")
                continue
            cov.modelled("part/file")
            b.text(f"[{mime or 'file'}: {_str(p.get('filename')) or 'file'}]", kind="image")
        elif t == "compaction":
            cov.modelled("part/compaction")
            auto = p.get("auto")
            facts.trigger = "auto" if auto is True else "manual" if auto is False else ""
            b.text(_COMPACTION_PROMPT)
        elif t == "subtask":
            cov.modelled("part/subtask")
            b.text(_SUBTASK_PROMPT)
        elif t in _SKIPPED_PARTS:
            cov.skipped(f"part/{t}")
        else:
            cov.unknown(f"part/{t}")


def _assistant(b: RunBuilder, info: dict[str, Any], parts: list[Any], facts: _Facts) -> None:
    """One request per step (``step-start`` … ``step-finish``), each followed by its results."""
    steps: list[tuple[list[dict[str, Any]], dict[str, Any] | None]] = []
    current: list[dict[str, Any]] = []
    open_step = False
    for p in parts:
        p = _obj(p)
        t = p.get("type")
        if t == "step-start":
            b.source.coverage.modelled("part/step-start")
            if open_step or current:
                steps.append((current, None))
            current, open_step = [], True
        elif t == "step-finish":
            b.source.coverage.modelled("part/step-finish")
            steps.append((current, p))
            current, open_step = [], False
        elif t in _SKIPPED_PARTS and not open_step and steps:
            b.source.coverage.skipped(f"part/{t}")  # written after its step's finish: no step
        else:
            current.append(p)
    stepped = any(_obj(p).get("type") in ("step-start", "step-finish") for p in parts)
    if open_step or current or not steps:
        # a message without step parts is one call with the message's tokens; an unfinished
        # step of a stepped message (aborted) has no usage of its own
        steps.append((current, None if stepped else info))
    for content, finish in steps:
        _step(b, info, content, finish, facts)


def _step(b: RunBuilder, info: dict[str, Any], parts: list[dict[str, Any]],
          finish: dict[str, Any] | None, facts: _Facts) -> None:
    cov = b.source.coverage
    ts = _ts(info)
    msg = b.message("assistant", ts=ts)
    facts.starts.append((msg, _obj(info.get("time")).get("created")))
    results: list[tuple[str, str, bool]] = []
    for k, p in enumerate(parts):
        t = p.get("type")
        if t in ("text", "reasoning"):
            cov.modelled(f"part/{t}")
            b.text(text_field(b, p.get("text"), f"part {k} ({t}): text"),
                   kind="reasoning" if t == "reasoning" else "text")
        elif t == "tool":
            cov.modelled("part/tool")
            state = _obj(p.get("state"))
            call_id = name_field(b, p.get("callID"), f"part {k} (tool): callID") or \
                _str(p.get("id")) or f"tool-{msg}-{k}"
            args = state.get("input")
            b.tool_call(call_id, name_field(b, p.get("tool"), f"part {k} (tool): tool") or "tool",
                        args if isinstance(args, (dict, str)) else {})
            results.append(_result(b, call_id, state, facts))
        elif t in _SKIPPED_PARTS:
            cov.skipped(f"part/{t}")
        else:
            cov.unknown(f"part/{t}")
    tokens = _obj((finish or {}).get("tokens"))
    cache = _obj(tokens.get("cache"))
    raw = (tokens.get("input"), cache.get("read"), cache.get("write"))
    uncached, read, write = (b.count(v, k) for v, k in
                             zip(raw, ("tokens.input", "tokens.cache.read", "tokens.cache.write")))
    bad = any(v is not None and n is None for v, n in zip(raw, (uncached, read, write)))
    if cache and uncached is not None and not bad and None in (read, write):  # OpenCode writes
        bad = True  # both (0 when none): a part missing or null leaves the full prompt unknown
        b.issues.append(Issue(b.source.path, b.line, f"message {msg}: tokens.cache has "
                              "no read or write count (null or missing): the full prompt "
                              "(input + cache) is unknown, not input alone"))
    full = None if uncached is None or bad else uncached + (read or 0) + (write or 0)
    model = text_field(b, info.get("modelID"), "modelID")  # (another type: said)
    b.request(output_msg=msg, input_tokens=full, cache_read_tokens=read, cache_write_tokens=write,
              output_tokens=b.count(tokens.get("output"), "tokens.output"),
              reasoning_tokens=b.count(tokens.get("reasoning"), "tokens.reasoning"), model=model,
              ts=ts)
    if results:
        b.message("tool", ts=ts)
        for call_id, text, is_error in results:
            b.tool_result(call_id, text, is_error=is_error)


def _result(b: RunBuilder, call_id: str, state: dict[str, Any],
            facts: _Facts) -> tuple[str, str, bool]:
    status = state.get("status")
    if status == "completed":
        when = _obj(state.get("time")).get("compacted")
        if when is not None:
            b.source.coverage.modelled("part/tool (cleared later)")
            if isinstance(when, (int, float)) and not isinstance(when, bool):
                facts.cleared.setdefault(float(when), []).append(call_id)
        output = state.get("output")
        return call_id, output if isinstance(output, str) else json.dumps(output), False
    if status == "error":
        meta = _obj(state.get("metadata"))
        if meta.get("interrupted") is True and isinstance(meta.get("output"), str):
            return call_id, meta["output"], False
        return call_id, text_field(b, state.get("error"), f"tool {call_id!r}: error"), True
    return call_id, _INTERRUPTED, True


def _ts(info: dict[str, Any]) -> str:
    created = _obj(info.get("time")).get("created")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        try:
            return datetime.fromtimestamp(created / 1000, tz=UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return ""
    return ""
