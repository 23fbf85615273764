"""OpenHands V1 conversations: the software-agent-sdk's persisted conversation folders.

A conversation is a folder (``replay.ingest.openhands_v1_folder``: ``base_state.json`` and
``events/event-NNNNN-<id>.json``), read as one document of its files, one run.  Events are
read in their index order; each is ``{id, timestamp, source, kind, ...}``
(``openhands/sdk/event/``).  What the model saw, as the SDK's ``events_to_messages`` builds it:

* ``SystemPromptEvent``: the system message (``system_prompt.text``, then
  ``dynamic_context.text``; the tool schemas in ``tools`` are not text of the run).
* ``MessageEvent``: ``llm_message`` (``role``, ``content`` blocks, ``reasoning_content``) and its
  ``extended_content``; one from the agent is a model response (``llm_response_id``; none
  recorded: no request).
* ``ActionEvent``: one tool call (``tool_call{id, name, arguments}``); consecutive actions of one
  ``llm_response_id`` are one assistant message (the first's ``thought`` and reasoning, every
  call), one request.
* ``ObservationEvent`` (``observation.content`` as its ``to_llm_content`` shows it: an error's
  header, a terminal output's prefix, suffix, working directory and exit code lines),
  ``UserRejectObservation``
  ("Action rejected: <reason>") and ``AgentErrorEvent`` (``error``): tool results, paired by
  ``tool_call_id``.
* ``Condensation``: a harness compaction.  The events named in ``forgotten_event_ids`` leave the
  context; the messages of the others are its ``preserved_msgs``; its ``summary`` is a harness
  summary message (none when it has none: the compaction is a bare cut).  The condenser's own
  model call is no request of the run (its usage is under the ``condenser`` usage id).

Usage: the SDK records one ``TokenUsage`` per model call in ``base_state.json``
(``stats.usage_to_metrics.<usage id>.token_usages[]``, each with the call's ``response_id``):
a request's usage is the one whose ``response_id`` is its ``llm_response_id``.
``prompt_tokens`` is the whole prompt as litellm counts it, cache reads included (an ACP
usage whose ``cache_read_tokens`` exceed it counts them apart, as the SDK's own
``cache_hit_rate`` reads it: then the prompt is their sum); ``cache_write_tokens``,
``completion_tokens`` and ``reasoning_tokens`` as recorded.  A request with no usage record
(no ``base_state.json``, or none for its response) has unknown usage, counted in an issue.

Coverage types: ``event/<kind>`` (``(no call)`` for a result whose call is not in the run,
``(malformed)``), ``file (<why not read>)`` for a folder entry not read (a symlink, a name
that is no event file's, text that is not UTF-8 or not JSON), ``base_state``.  Skipped:
state updates, pauses, interrupts, streaming deltas, token ids, hook runs, completion logs,
condensation requests, conversation errors (none is sent to the model); unknown: any other
kind.  A gap in the event numbering (the SDK itself stops reading at the first) is one issue.

Checked against: the SDK sources (``OpenHands/software-agent-sdk``, snapshot 2026-08-22) and two
real conversation folders committed there (``tests/fixtures/openhands_v1/SOURCES.md``).  Not
handled: the conversation tree's abandoned branches (``parent_id``: events are read in index
order), subagent conversations, ACP tool-call events (skipped, counted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from msgspec import UNSET

from replay.ingest.openhands_v1_folder import BASE_STATE, EVENT_NAME, EVENTS_DIR, HEADER_KEY
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import held
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.openhands_v1_document import read_document
from replay.ingest.parsers.openhands_v1_usage import Usage, usage_by_response
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import content_text, text_field

NAME = "openhands_v1"

_HEADER = re.compile(rb'\s*\{"' + HEADER_KEY.encode() + rb'":')
_SKIPPED = frozenset({"ConversationStateUpdateEvent", "PauseEvent", "InterruptEvent",
                      "StreamingDeltaEvent", "TokenEvent", "HookExecutionEvent",
                      "LLMCompletionLogEvent", "CondensationRequest", "ConversationErrorEvent",
                      "ACPToolCallEvent", "CondensationSummaryEvent"})
"""Event kinds the SDK never sends to the model (a ``CondensationSummaryEvent`` is made from
its ``Condensation`` when the context is built; one on disk is not read twice)."""
_ERROR_HEADER = "[An error occurred during execution.]\n"
"""What the SDK puts before an observation's content when ``is_error`` (``Observation``)."""
_RESULTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
MAX_PRESERVED = 1 << 24
"""The most messages a conversation's condensations may keep in all (each keeps every message
not forgotten: ~n**2/4 for n events alternating with condensations, 6.4 GB of memory at 20,000
events); a real run's hundreds of condensations keep a few million at most."""


def sniff(filename: str, head: bytes) -> bool:
    """True for the document an OpenHands V1 conversation folder is read as (its header line)."""
    return _HEADER.match(head) is not None


def evidence(filename: str, head: bytes) -> str:
    """What of OpenHands V1 the head shows: a conversation folder, or one of its files named
    alone (to be read with its folder)."""
    if sniff(filename, head):
        return "an OpenHands V1 conversation folder (base_state.json and events/)"
    if EVENT_NAME.match(filename) and b'"kind"' in head and b'"source"' in head:
        return "an OpenHands V1 event file: name its conversation folder to read the conversation"
    return ""


def companion(path: PurePath) -> str:
    """Why a file of an OpenHands V1 conversation folder named alone (its ``base_state.json``
    or an event file) is no run of its own."""
    if path.name == BASE_STATE or (EVENT_NAME.match(path.name) and path.parent.name == EVENTS_DIR):
        return ("a file of an OpenHands V1 conversation folder: name the folder to read the "
                "conversation")
    return ""


@dataclass(slots=True)
class _Walk:
    """What the walk of one conversation keeps."""

    b: RunBuilder
    usage: dict[str, Usage]
    msgs_of: dict[str, list[int]] = field(default_factory=dict)
    """Event id -> the run's messages made from it."""
    forgotten: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    """The ids of the tool calls emitted."""
    responses: set[str] = field(default_factory=set)
    batch: str | None = None
    """The ``llm_response_id`` of the assistant message being built from actions."""
    no_usage: int = 0
    preserved: int = 0
    """The messages the condensations so far keep, in all (``MAX_PRESERVED``)."""
    not_ids: int = 0
    """Entries of the condensations' ``forgotten_event_ids`` that are no event id (not text)."""
    ids: set[str] = field(default_factory=set)
    """The event ids met so far."""
    repeated_ids: int = 0
    """Events whose id an earlier event has."""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from an OpenHands V1 conversation folder's document; bad entries are reported,
    counted and skipped."""
    read = read_document(src, issues)
    if read is None:
        return []
    base, events = read
    cov = src.coverage
    usage, bad_usage = usage_by_response(base)
    issues.extend(Issue(src.path, 0, f"{BASE_STATE}: {why}") for why in bad_usage)
    if base is None:
        issues.append(Issue(src.path, 0, f"no readable {BASE_STATE}: every request's usage is "
                                          "unknown"))
    agent = _obj(_obj(base).get("agent"))
    model = run_text(_obj(agent.get("llm")).get("model", UNSET), f"{BASE_STATE}: agent.llm.model",
                     src.path, issues)
    w = _Walk(RunBuilder(src, 0, NAME, issues, model=model, harness="openhands-v1"), usage)
    for idx in sorted(events):
        name, ev = events[idx]
        _event(w, src, ev, name)
    if w.no_usage:
        issues.append(Issue(src.path, 0, f"{w.no_usage} of {len(w.responses)} request(s) have no "
                                          f"usage record in {BASE_STATE} (unknown)"))
    if w.repeated_ids:
        issues.append(Issue(src.path, 0, f"{w.repeated_ids} event(s) with an earlier event's id: "
                                          "each read, as the SDK reads them; a Condensation "
                                          "forgetting that id forgets every one of them"))
    if w.not_ids:
        issues.append(Issue(src.path, 0, f"{w.not_ids} entr{'y' if w.not_ids == 1 else 'ies'} "
                                          "of a Condensation's forgotten_event_ids not an event "
                                          "id (not text): ignored, those events kept"))
    if not events:
        cov.no_conversation = "an OpenHands V1 conversation folder with no events yet"
        return []
    return [w.b.build()]


def _event(w: _Walk, src: Source, ev: Any, name: str) -> None:
    """Emit one event; counts it in the coverage."""
    cov = src.coverage
    if not isinstance(ev, dict) or not isinstance(ev.get("kind"), str):
        cov.unknown("event (no kind)")
        w.b.issues.append(Issue(src.path, 0, f"{name}: not an event object with a kind; skipped"))
        return
    kind = ev["kind"]
    rtype = f"event/{kind}"
    eid = ev.get("id")
    if isinstance(eid, str) and eid:
        if eid in w.ids:
            w.repeated_ids += 1
        else:
            w.ids.add(eid)
    if kind != "ActionEvent":
        w.batch = None
    try:
        if kind == "SystemPromptEvent":
            _system(w, ev)
        elif kind == "MessageEvent":
            _message(w, ev)
        elif kind == "ActionEvent":
            _action(w, ev)
        elif kind in _RESULTS:
            if not _result(w, ev, kind):
                cov.skipped(f"{rtype} (no call)")
                return
        elif kind == "Condensation":
            _condensation(w, ev)
        elif kind in _SKIPPED:
            cov.skipped(rtype)
            return
        else:
            cov.unknown(rtype)
            w.b.issues.append(Issue(src.path, 0, f"{name}: event kind {kind!r} not known; "
                                                 "skipped"))
            return
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        cov.unknown(f"{rtype} (malformed)")
        w.b.issues.append(Issue(src.path, 0, f"{name}: {type(exc).__name__}: {exc}; skipped"))
        return
    cov.modelled(rtype)


def _made(w: _Walk, ev: dict[str, Any], msg: int) -> None:
    w.msgs_of.setdefault(_str(ev.get("id")), []).append(msg)


def _system(w: _Walk, ev: dict[str, Any]) -> None:
    prompt = ev["system_prompt"]
    dynamic = ev.get("dynamic_context")
    _made(w, ev, w.b.message("system", ts=_str(ev.get("timestamp"))))
    w.b.text("\n".join(t for t in (content_text(w.b, prompt), content_text(w.b, dynamic)
                                    if dynamic else "") if t))


def _message(w: _Walk, ev: dict[str, Any]) -> None:
    msg = ev["llm_message"]
    if not isinstance(msg, dict):
        raise TypeError("'llm_message' is not an object")
    role = _str(msg.get("role")) or ("assistant" if ev.get("source") == "agent" else "user")
    ts = _str(ev.get("timestamp"))
    _made(w, ev, w.b.message(role if role in ("user", "assistant", "system") else "user", ts=ts))
    if reasoning := text_field(w.b, msg.get("reasoning_content"), "reasoning_content"):
        w.b.text(reasoning, kind="reasoning")
    _content(w, msg.get("content"))
    extended = ev.get("extended_content")
    if isinstance(extended, list) and extended:
        w.b.text(content_text(w.b, extended))
    rid = ev.get("llm_response_id")
    if ev.get("source") == "agent" and isinstance(rid, str) and rid:
        _request(w, rid, ts)


def _content(w: _Walk, content: Any) -> None:
    """The text of message content blocks; an image block is one placeholder each."""
    if not isinstance(content, list):
        w.b.text(content_text(w.b, content))
        return
    texts = [c for c in content if not (isinstance(c, dict) and c.get("type") == "image")]
    w.b.text(content_text(w.b, texts))
    for c in content:
        if isinstance(c, dict) and c.get("type") == "image":
            urls = c.get("image_urls")
            for _ in urls if isinstance(urls, list) and urls else [None]:
                w.b.text("[image]", kind="image")


def _action(w: _Walk, ev: dict[str, Any]) -> None:
    call = ev["tool_call"]
    rid = ev.get("llm_response_id")
    rid = rid if isinstance(rid, str) and rid else None
    call_id, tool = _str(call.get("id")) or _str(ev.get("tool_call_id")), _str(call.get("name"))
    for key in ("id", "name"):  # (one of another type: said as such, not as missing)
        if call.get(key) is not None and call[key].__class__ is not str:
            raise ValueError(f"tool_call.{key} is {held(call[key])}, not a string")
    if not call_id or not tool:
        raise ValueError("the tool call has no id or no name")
    ts = _str(ev.get("timestamp"))
    if rid is None or w.batch != rid:  # a new model response: a new assistant message
        _made(w, ev, w.b.message("assistant", ts=ts))
        if reasoning := text_field(w.b, ev.get("reasoning_content"), "reasoning_content"):
            w.b.text(reasoning, kind="reasoning")
        if thought := content_text(w.b, ev.get("thought")):
            w.b.text(thought)
        if rid is not None:
            _request(w, rid, ts)
        w.batch = rid
    else:
        w.msgs_of.setdefault(_str(ev.get("id")), []).append(w.b.msg_index)
    w.b.tool_call(call_id, tool, _arguments(call.get("arguments")))
    w.calls.add(call_id)


def _arguments(raw: Any) -> Any:
    """A call's arguments as recorded: the JSON object of the string, else the string."""
    if isinstance(raw, str):
        try:
            value = loads(raw) if raw.strip() else {}
        except JSON_REFUSED:
            return raw
        return value if isinstance(value, dict) else raw
    return raw if isinstance(raw, dict) else {}


def _result(w: _Walk, ev: dict[str, Any], kind: str) -> bool:
    """Emit a tool result; False when its call is not in the run (not emitted)."""
    call_id = ev["tool_call_id"]
    if not isinstance(call_id, str) or call_id not in w.calls:
        return False
    _made(w, ev, w.b.message("tool", ts=_str(ev.get("timestamp"))))  # (what is said of its
    # texts is about it)
    if kind == "ObservationEvent":
        obs = _obj(ev["observation"])
        is_error = obs.get("is_error") is True
        text = _observation_text(w.b, obs, is_error)
        extended = ev.get("extended_content")
        if isinstance(extended, list) and extended:
            text = "\n".join(t for t in (text, content_text(w.b, extended)) if t)
    elif kind == "UserRejectObservation":
        text = f"Action rejected: {_str(ev.get('rejection_reason')) or 'User rejected the action'}"
        is_error = False
    else:
        text, is_error = text_field(w.b, ev["error"], "error"), True
    w.b.tool_result(call_id, text, is_error=is_error)
    return True


def _observation_text(b: RunBuilder, obs: dict[str, Any], is_error: bool) -> str:
    """An observation's text as its ``to_llm_content`` renders it: the error header first when
    ``is_error``; a ``TerminalObservation``'s output between its ``metadata`` prefix and suffix,
    then its working directory, interpreter and exit code lines (the SDK's truncation of a long
    output is not redone: the output is kept whole); a value in its content that is no text
    is said about the message being written (``b``'s)."""
    text = content_text(b, obs.get("content"))
    meta = obs.get("metadata")
    if obs.get("kind") == "TerminalObservation" and isinstance(meta, dict):
        text = f"{_str(meta.get('prefix'))}{text}{_str(meta.get('suffix'))}"
        if wd := _str(meta.get("working_dir")):
            text += f"\n[Current working directory: {wd}]"
        if py := _str(meta.get("py_interpreter_path")):
            text += f"\n[Python interpreter: {py}]"
        code = meta.get("exit_code", -1)
        if isinstance(code, int) and not isinstance(code, bool) and code != -1:
            text += f"\n[Command finished with exit code {code}]"
    return _ERROR_HEADER + text if is_error else text


def _condensation(w: _Walk, ev: dict[str, Any]) -> None:
    ids = ev.get("forgotten_event_ids") or []
    if not isinstance(ids, list):
        raise TypeError("'forgotten_event_ids' is not a list")
    named = {i for i in ids if isinstance(i, str)}
    w.not_ids += len(ids) - sum(1 for i in ids if isinstance(i, str))
    w.forgotten |= named
    kept = sorted(m for eid, ms in w.msgs_of.items() if eid not in w.forgotten for m in ms)
    w.preserved += len(kept)
    if w.preserved > MAX_PRESERVED:  # (the file fails: not a skipped event, the rest read)
        raise OverflowError(f"the conversation's condensations keep over {MAX_PRESERVED:,} "
                            "messages in all (each keeps every message it does not forget): "
                            "not read")
    summary = ev.get("summary")
    event = w.b.n_events
    w.b.event("compaction", preserved_msgs=kept, harness_compaction=True)
    if isinstance(summary, str) and summary:
        msg = w.b.message("user", ts=_str(ev.get("timestamp")))
        w.b.set_event(event, summary_msg=msg)
        w.b.summary(summary, counted=False)
        w.msgs_of[f"{_str(ev.get('id'))}-summary"] = [msg]  # (the SDK's id of its summary)


def _request(w: _Walk, rid: str, ts: str) -> None:
    """The model call ``rid`` made the current message (once per response)."""
    if rid in w.responses:
        return
    w.responses.add(rid)
    u = w.usage.get(rid)
    if u is None:
        w.no_usage += 1
        w.b.request(ts=ts)
        return
    w.b.request(input_tokens=u.prompt, cache_read_tokens=u.cache_read,
                cache_write_tokens=u.cache_write, output_tokens=u.output,
                reasoning_tokens=u.reasoning, model=u.model, ts=ts)
