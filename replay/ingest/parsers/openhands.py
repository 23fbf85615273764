"""OpenHands V0 trajectories: a JSON array of events (or an object holding one).

Checked against OpenHands V0 event streams (its runtime test trajectories at commit
``59f5f0d``), the shared samples.

Each event has ``id``, ``timestamp``, ``source`` and either ``action`` + ``args`` or
``observation`` + ``content``/``extras``/``cause``.  Agent actions produced by
function calling carry ``tool_call_metadata`` whose ``model_response`` is the full
chat-completions response; a response with k tool calls is attached to k actions
(and again to their observations), so actions are grouped by response id into ONE
assistant message (all its calls) and ONE request, deduplicated on the id.  The
actions of a group are interleaved with their observations in the stream; the
message is emitted at the first action and the results follow it, which is the
order OpenHands itself rebuilds for the model.  Observations become ``tool``
messages when their ``cause`` (or ``tool_call_id``) names an emitted call; the
result text is ``content`` (OpenHands appends small decorations such as the exit
code line when it prompts, which are not recorded).  ``condensation`` actions
become harness summaries.  Usage comes from ``model_response.usage``, else from
the last entry of ``llm_metrics.token_usages`` when its response id is new.

Coverage (``src.coverage``): each event as ``action/<action>`` or
``observation/<observation>``.  Modelled: what became context (agent actions, user messages,
``system``, ``condensation``; observations paired with a call, and ``error`` ones).  Skipped:
the control actions (``change_agent_state``, ``recall``, …), ``action/<action> (<source>)`` for
an action a user or the environment ran, ``agent_state_changed`` / ``null`` / ``recall``
observations, ``observation/<observation> (no call)`` for any other observation whose call
was not modelled, and the other keys of a wrapper object (once each).  Unknown: an event with
neither ``action`` nor ``observation``, one that is not an object, and a malformed one
(``action/<action> (malformed)``).

Not handled: actions a user ran by hand (non-``message`` actions with source
``user``), ``recall`` actions/observations (microagent knowledge), the system
prompt when no ``system`` action is recorded, V1 SDK conversation folders, and
evaluation ``output.jsonl`` files holding many instances (one run per file).

A big document's events are read again from disk a piece at a time once noted, the file's
bytes let go before the run is built (``replay.ingest.parsers.json_items_reread``).

Not here: reading a model response (its message, a call's arguments, its usage):
``replay.ingest.parsers.openhands_response``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import named, not_a_string
from replay.ingest.parsers.counts import json_int as _int
from replay.ingest.parsers.json_decode import item
from replay.ingest.parsers.json_items_reread import ItemsOnDisk, on_disk
from replay.ingest.parsers.jsonl import array_items, load_json
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.openhands_response import (
    call_args,
    choice_message,
    model_response,
    request,
    tool_call_metadata,
)
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import content_text, said, text_field

NAME = "openhands"

_IGNORED_ACTIONS = {"change_agent_state", "null", "pause", "resume", "stop", "recall",
                    "condensation_request", "start"}
_TEXT_ACTIONS = {"message", "finish", "think", "reject"}
_IGNORED_OBSERVATIONS = {"agent_state_changed", "null", "recall"}
_TEXT_KEYS = ("content", "final_thought", "thought", "reason")
"""A text action's args its text is from (the first non-empty string; else ``message``)."""
_ARG_NOISE = {"thought", "impl_source", "translated_ipython_code", "security_risk",
              "confirmation_state", "is_confirmed", "hidden"}
_WRAPPER_KEYS = ("history", "events", "trajectory")
_WRAPPED = re.compile(rb'"(?:history|events|trajectory)"\s*:\s*\[\s*\{\s*"id"\s*:\s*\d')


@dataclass(slots=True)
class _State:
    groups: dict[str, list[tuple[int, Any]]]
    """The actions of each model response, by response: (event number, the event as read, still
    undecoded: ``json_decode.item``; None when the events are read again: ``read_again``)."""
    emitted: set[str] = field(default_factory=set)
    responses: set[str] = field(default_factory=set)
    unnamed_call: bool = False
    """Whether a call was made with the id "" (the calls made are the builder's:
    ``RunBuilder.has_call``, which keeps no call without an id)."""
    call_of_event: dict[Any, str] = field(default_factory=dict)
    models: Counter[str] = field(default_factory=Counter)
    bad: set[int] = field(default_factory=set)
    """Numbers of the events of a tool group that were reported and skipped."""
    read_again: ItemsOnDisk | None = None
    """The events read again from disk (``json_items_reread``): ``groups`` then holds each
    action's number only (None for the event), not a piece of the file."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a JSON array of OpenHands events (``action``/``observation`` with ``source``)."""
    text = head.lstrip()
    if text.startswith(b"{"):  # an object wrapping the events (e.g. an evaluation record)
        return _WRAPPED.search(text) is not None and b'"source"' in text
    if not text.startswith(b"["):
        return False
    return (b'"observation"' in text or b'"action"' in text) and b'"source"' in text


def evidence(filename: str, head: bytes) -> str:
    """What of OpenHands the head shows: events with ``action``/``observation`` and ``source``
    (in a top-level array or a wrapper's list); '' for none."""
    text = head.lstrip()
    kinds = [k for k in ("action", "observation") if b'"%s"' % k.encode() in text]
    if not kinds or b'"source"' not in text:
        return ""
    where = "a wrapper's event list" if _WRAPPED.search(text) else \
        "a top-level array" if text.startswith(b"[") else "an object"
    return f"events with {'/'.join(kinds)} and source in {where}"


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from an OpenHands V0 event list; bad events are reported and skipped.

    Args:
        src: the source file.
        issues: where problems are appended (``path:event_number: reason``).
    """
    doc = load_json(src, issues, lazy=(None, *_WRAPPER_KEYS))  # events decoded one by one
    events: list[Any] | ItemsOnDisk | None
    read_again = None
    if doc is None:  # damaged or truncated: keep the events before the break
        events = _readable_events(src, issues)
        if not events:
            return []
    else:
        events = _events(doc)
        read_again = on_disk(src, events)  # (noted: read from memory until the groups are found)
    if events is None:
        issues.append(Issue(src.path, 0, "expected a JSON array of OpenHands events (or an object "
                                         "with a 'history'/'events'/'trajectory' list)"))
        return []
    cov = src.coverage
    if isinstance(doc, dict):
        for key in doc:
            if key != _wrapper_key(doc):
                cov.skipped(key)
    groups: dict[str, list[tuple[int, Any]]] = {}
    for no, raw in enumerate(events, start=1):
        key = _group_key(item(raw))
        if key:
            groups.setdefault(key, []).append((no, raw if read_again is None else None))
    if read_again is not None:
        assert isinstance(events, list)
        events.clear()  # (a list still: the wrapper's key is found as before)
        events = read_again  # each piece of events read from disk again when reached
    if doc is not None:
        src.release_data()  # read: the file's bytes go with the last event still undecoded
    st = _State(groups, read_again=read_again)
    rb = RunBuilder(src, 0, NAME, issues, harness="openhands")
    for no, raw in enumerate(events, start=1):
        ev = item(raw)
        raw = None
        if isinstance(events, list):
            events[no - 1] = None  # each event let go once read: the run grows as it goes
        if not isinstance(ev, dict):
            cov.unknown("event (not an object)")
            issues.append(Issue(src.path, no, f"event {no} is a {type(ev).__name__}, "
                                              "not an object (skipped)"))
            continue
        kind = "action" if "action" in ev else "observation" if "observation" in ev else ""
        rtype = f"{kind}/{ev[kind]}" if isinstance(ev.get(kind), str) else kind
        try:
            if kind == "action":
                rtype, fate = _action(rb, st, ev, no, rtype)
            elif kind == "observation":
                rtype, fate = _observation(rb, st, ev, no, rtype)
            else:
                rtype, fate = "event (no action or observation)", "unknown"
            if no in st.bad:
                rtype, fate = f"{rtype} (malformed)", "unknown"
            cov.count(rtype, fate)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            cov.unknown(f"{rtype} (malformed)")
            issues.append(Issue(src.path, no, f"event {no} (id {ev.get('id')!r}) skipped: "
                                              f"{type(exc).__name__}: {exc}"))
    if st.models:
        rb.model = st.models.most_common(1)[0][0]
    del st, groups, events, doc  # (the maps of calls and events let go: not beside the columns)
    return [rb.build()]


def _readable_events(src: Source, issues: list[Issue]) -> list[Any]:
    """The events before the break of a damaged file (top-level array or a wrapper key's)."""
    for key in (None, *_WRAPPER_KEYS):
        found, stop = array_items(src, key)
        if found:
            issues.append(Issue(src.path, stop, f"damaged file: kept the {len(found)} readable "
                                                "events before the break"))
            return [item for _, item in found]
    return []


def _events(doc: Any) -> list[Any] | None:
    if isinstance(doc, list):
        return doc
    key = _wrapper_key(doc) if isinstance(doc, dict) else None
    return doc[key] if key else None


def _wrapper_key(doc: dict[str, Any]) -> str | None:
    """The key of a wrapper object's event list (None when it has none)."""
    return next((key for key in _WRAPPER_KEYS if isinstance(doc.get(key), list)), None)


def _group_key(ev: Any) -> str | None:
    """The response an agent tool action belongs to (None for actions without a call id; a
    call id of another type is one: ``_call_id``)."""
    meta = tool_call_metadata(ev)
    if meta is None or "action" not in ev or meta.get("tool_call_id") is None:
        return None
    resp = model_response(ev)
    rid = resp.get("id") if resp else None
    return f"r:{rid}" if isinstance(rid, str) and rid else f"e:{ev.get('id')}"


def _action(rb: RunBuilder, st: _State, ev: dict[str, Any], no: int,
            rtype: str) -> tuple[str, str]:
    """Emit one action; returns its coverage (type, fate)."""
    action, ts = ev["action"], str(ev.get("timestamp") or "")
    args = ev.get("args") or {}
    if not isinstance(action, str) or not isinstance(args, dict):
        raise TypeError("'action' must be a string and 'args' an object")
    key = _group_key(ev)
    if key is not None:
        if key not in st.emitted:
            st.emitted.add(key)
            _tool_group(rb, st, st.groups.pop(key, []) or [(no, ev)])
        return rtype, "modelled"
    source = ev.get("source")
    if action == "condensation":
        text = args.get("summary")
        if not isinstance(text, str) or not text:
            ids = args.get("forgotten_event_ids")
            if not ids and args.get("forgotten_events_start_id") is not None:
                ids = (f"{args.get('forgotten_events_start_id')}.."
                       f"{args.get('forgotten_events_end_id')}")
            text = f"[condensation: forgot events {ids}]"
        rb.message("user", ts=ts)
        rb.summary(text, harness=True)
    elif action == "system":
        rb.message("system", ts=ts)
        rb.text(content_text(rb, args.get("content", ev.get("message", "")), line=no))
    elif action in _IGNORED_ACTIONS:
        return rtype, "skipped"
    elif action == "message" and source != "agent":
        images = args.get("image_urls") or []
        rb.message("user", ts=ts)
        rb.text(content_text(rb, args.get("content", ev.get("message", "")), line=no))
        for _ in images if isinstance(images, list) else []:
            rb.text("[image]", kind="image")
    elif source != "agent":  # a command a user ran by hand: not modelled
        return f"{rtype} ({source if isinstance(source, str) else 'no source'})", "skipped"
    elif action in _TEXT_ACTIONS:
        text = next((v for k in _TEXT_KEYS if isinstance(v := args.get(k), str) and v),
                    ev.get("message") or "")
        rb.message("assistant", ts=ts)
        for k in _TEXT_KEYS:  # (one left out for no string: said, whatever was read instead)
            if (v := args.get(k)) is not None and v.__class__ is not str:
                text_field(rb, v, f"{k!r}", line=no)
        rb.text(content_text(rb, text, line=no))
        request(rb, st.responses, st.models, ev, ts, no)
    else:
        call_id = f"call-{ev.get('id', no)}"
        thought = args.get("thought")
        rb.message("assistant", ts=ts)
        if thought_text := text_field(rb, thought, "'thought'", line=no):
            rb.text(thought_text)
        rb.tool_call(call_id, action, {k: v for k, v in args.items() if k not in _ARG_NOISE})
        st.call_of_event[ev.get("id")] = call_id
        request(rb, st.responses, st.models, ev, ts, no)
    return rtype, "modelled"


def _tool_group(rb: RunBuilder, st: _State, acts: list[tuple[int, Any]]) -> None:
    """One assistant message (text + every call of one model response) and its request; the
    actions as read (``_State.groups``)."""
    acts = [(no, item(ev if ev is not None or st.read_again is None else st.read_again[no - 1]))
            for no, ev in acts]
    first = acts[0][1]
    resp = model_response(first)
    msg = choice_message(resp)
    calls: list[tuple[str, str, Any, Any]] = []
    thoughts: list[str] = []
    bad: list[tuple[int, str]] = []  # (event, why) of each thought that is no string
    for no, ev in acts:
        try:
            meta, args = tool_call_metadata(ev) or {}, ev.get("args") or {}
            call_id = _call_id(meta["tool_call_id"], no, bad)
            tool = meta.get("function_name") or ev["action"]
            if not isinstance(tool, str) or not isinstance(args, dict):
                raise TypeError("'function_name' must be a string and 'args' an object")
            found = call_args(msg, call_id)
            calls.append((call_id, tool, found if found is not None else
                          {k: v for k, v in args.items() if k not in _ARG_NOISE}, ev.get("id")))
            if isinstance(args.get("thought"), str) and args["thought"] not in thoughts:
                thoughts.append(args["thought"])
            elif args.get("thought") is not None and not isinstance(args["thought"], str):
                bad.append((no, not_a_string(args["thought"], "'thought'")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            st.bad.add(no)
            rb.issues.append(Issue(rb.source.path, no, f"event {no} (id {ev.get('id')!r}) "
                                                       f"skipped: {type(exc).__name__}: {exc}"))
    content = msg.get("content") if msg else None
    rb.message("assistant", ts=str(first.get("timestamp") or ""))
    for no, why in bad:
        said(rb, [why], line=no)
    text = content_text(rb, content, line=acts[0][0]) if content else \
        "\n".join(t for t in thoughts if t)
    reasoning = msg.get("reasoning_content") if msg else None
    if isinstance(reasoning, str) and reasoning:
        rb.text(reasoning, kind="reasoning")
    elif reasoning is not None and reasoning.__class__ is not str:
        text_field(rb, reasoning, "reasoning_content", line=acts[0][0])
    if text or not calls:
        rb.text(text)
    for call_id, tool, args, event_id in calls:
        rb.tool_call(call_id, tool, args)
        st.unnamed_call = st.unnamed_call or not call_id
        st.call_of_event[event_id] = call_id
    request(rb, st.responses, st.models, first, str(first.get("timestamp") or ""), acts[0][0])


def _observation(rb: RunBuilder, st: _State, ev: dict[str, Any], no: int,
                 rtype: str) -> tuple[str, str]:
    """Emit one observation; returns its coverage (type, fate)."""
    obs, ts = ev["observation"], str(ev.get("timestamp") or "")
    meta = tool_call_metadata(ev) or {}
    bad: list[tuple[int, str]] = []
    call_id = meta.get("tool_call_id")
    if call_id is not None:
        call_id = _call_id(call_id, no, bad)
    if not _called(rb, st, call_id):
        call_id = st.call_of_event.get(ev.get("cause")) if ev.get("cause") is not None else None
    content = ev.get("content", "")
    if call_id is None:
        if obs == "error":  # OpenHands shows an error without a call to the model as user text
            rb.message("user", ts=ts)
            rb.text(content_text(rb, content, line=no))
            return rtype, "modelled"
        return (rtype if obs in _IGNORED_OBSERVATIONS else f"{rtype} (no call)"), "skipped"
    extras = _obj(ev.get("extras"))
    code = extras.get("exit_code")
    if code is None and isinstance(extras.get("metadata"), dict):
        code = extras["metadata"].get("exit_code")
    is_error = obs == "error" or (_int(code) is not None and code != 0)
    rb.message("tool", ts=ts)
    for at, why in bad:
        said(rb, [why], line=at)
    rb.tool_result(call_id, content_text(rb, content, line=no), is_error=is_error)
    return rtype, "modelled"


def _called(rb: RunBuilder, st: _State, call_id: str | None) -> bool:
    """Whether a call with id ``call_id`` was emitted (the builder keeps those with an id)."""
    return rb.has_call(call_id) if call_id else call_id == "" and st.unnamed_call


def _call_id(value: Any, no: int, bad: list[tuple[int, str]]) -> str:
    """An event's ``tool_call_metadata.tool_call_id`` (not None): a string as it is; another
    value its JSON (a call id 5 pairs with its observation's 5), appended to ``bad`` with the
    event's line ``no`` (``content_text.named``), for the caller to say about its message.
    OpenHands writes a string: Python's ``str`` of another type (``['a']``) was used unsaid,
    and an action whose id was no string lost its response (a message and a request each)."""
    if value.__class__ is str:
        return value
    why: list[str] = []
    text = named(value, "tool_call_metadata.tool_call_id", why)
    bad.extend((no, w) for w in why)
    return text

