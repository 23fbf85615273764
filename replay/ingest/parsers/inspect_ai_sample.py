"""One Inspect AI sample's walk into a run: its model calls in order, each adding what its input
has new.

The run follows the model calls: each ``ModelEvent`` is one request; its ``input`` (or, in
pooled logs, ``input_refs`` ranges into ``events_data.messages`` / ``message_pool``) is the
context the model saw.  Messages of an input that extends the previous call's context are
new and emitted in order (system, user, assistant with reasoning / text / tool calls, tool
results), then the call's output message and its usage.  Calls made inside a ``scorer``
span or step (model-graded scoring) are not the agent's: skipped.  Messages of
``messages`` that no call saw (the last tool results) are emitted at the end.  A sample
without events (old logs) is read from ``messages``: one request per assistant message,
usage unknown.

Usage: Inspect's ``input_tokens`` excludes cache reads and writes (``ModelUsage``, since
0.3.184), so the full prompt is ``input_tokens + input_tokens_cache_read +
input_tokens_cache_write``.  Before 0.3.184 (#3341) the OpenAI-family providers wrote the
API's ``prompt_tokens``, cache reads included, and the provider's ``total_tokens`` (prompt +
completion): a call whose ``total_tokens`` is ``input_tokens + output_tokens`` with cache reads
above 0 already holds them, and they are not added again (the log's own arithmetic, and
the raw API response Inspect keeps beside it says the same: ``call.response.usage``).

Compactions: a ``CompactionEvent`` (``summary`` / ``edit`` / ``trim``) is one harness
compaction: a ``compaction`` ContextEvent with its ``tokens_before`` / ``tokens_after`` and
trigger (``metadata.trigger``: threshold → auto, forced → manual); the messages of the next
call's input that the run already has (the system prompt and task a summary keeps, what a
trim leaves) are its preserved messages.  For a summary, the user
message marked ``metadata.summary`` in the next call's input is the summary block the event
points at, and the model call that wrote it (the call just before the event whose answer is
inside that summary) is the harness's summarisation call: no request row.  An edit or trim
writes no summary (the event has none).  A call whose input rewrites the context with no
compaction event before it is read the same way (only unseen messages are added) and
counted in the coverage as ``model (input rewritten)``.

Not here: reading the log (its zip or document, its header, a damaged file's samples:
``replay.ingest.parsers.inspect_ai``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.inspect_ai_damaged import MissingOutputs
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.typed_text import name_field, text_field

_TRIGGERS = {"threshold": "auto", "forced": "manual"}
"""Inspect's ``CompactionEvent.metadata.trigger`` as a ``ContextEvent`` trigger."""
_SKIPPED_EVENTS = frozenset((
    "sample_init", "span_begin", "span_end", "state", "store", "score", "score_edit",
    "sandbox", "info", "logger", "input", "step", "subtask", "approval", "error",
    "sample_limit", "checkpoint", "branch", "interrupt", "anchor", "tool"))
"""Events that are bookkeeping, or (``tool``) whose content reaches the run through the
next model input or the sample's messages."""


class Sample:
    """One sample's walk: model calls in order, each adding what its input has new."""

    def __init__(self, b: RunBuilder, sample: dict[str, Any], missing: MissingOutputs) -> None:
        self.b = b
        self.missing = missing
        self.cov = b.source.coverage
        self.attachments = _obj(sample.get("attachments"))
        pool = _obj(sample.get("events_data")).get("messages")
        self.pool = pool if isinstance(pool, list) else sample.get("message_pool")
        self.sample = sample
        self.context: list[str] = []
        self.emitted: set[str] = set()
        self.index: dict[str, int] = {}
        """Message key -> its message index in the run."""

    def read(self) -> None:
        events = self.sample.get("events")
        events = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
        if not events:
            self.from_messages()
            return
        inputs = {i: self.input(e) for i, e in enumerate(events) if e.get("event") == "model"}
        self.missing.start([inputs[i] for i in sorted(inputs)],
                           self.messages(self.sample.get("messages")))
        scorer = self.scorer_calls(events)
        summary_calls = self.summary_calls(events, inputs)
        pending: dict[str, Any] | None = None
        for i, e in enumerate(events):
            kind = e.get("event")
            if kind == "model":
                self.cov.modelled("event/model")
                if i in scorer:
                    self.cov.skipped("model (scorer)")
                elif i in summary_calls:
                    self.cov.skipped("model (compaction summary call)")
                    # what the conversation gained since the last call, without the prompt
                    for m in self.new_messages(inputs[i], summarising=True)[:-1]:
                        self.emit(m)
                else:
                    self.model_call(e, inputs[i], pending)
                    pending = None
            elif kind == "compaction":
                self.cov.modelled("event/compaction")
                pending = e
            elif kind.__class__ is not str:  # (no key of the event kinds: one unknown event)
                self.cov.unknown("event (its 'event' no string)")
            elif kind in _SKIPPED_EVENTS:
                self.cov.skipped(f"event/{kind}")
            else:
                self.cov.unknown(f"event/{kind}")
        if pending is not None:
            self.compaction(pending, [], [])
        for m in self.messages(self.sample.get("messages")):
            if self.key(m) not in self.emitted:
                self.emit(m)

    def from_messages(self) -> None:
        for m in self.messages(self.sample.get("messages")):
            msg = self.emit(m)
            if m.get("role") == "assistant":
                self.b.request(output_msg=msg)

    def model_call(self, e: dict[str, Any], inp: list[dict[str, Any]],
                   pending: dict[str, Any] | None) -> None:
        keys = [self.key(m) for m in inp]
        new = self.new_messages(inp, summarising=pending is not None)
        summaries = [m for m in new if _obj(m.get("metadata")).get("summary") is True]
        for m in new:  # what arrived since the last call comes before a compaction
            if not any(m is s for s in summaries):
                self.emit(m)
        if pending is not None or summaries:
            kept = {self.index[k] for m, k in zip(inp, keys)
                    if k in self.index and not any(m is x for x in summaries)}
            self.compaction(pending or {}, summaries, sorted(kept))
        choices = _obj(e.get("output")).get("choices")
        out = _obj(_obj(choices[0]).get("message")) if isinstance(choices, list) and choices \
            else {}
        if not out:  # output null or of the wrong type: the answer as the next context has it
            found = self.missing.answer(e, inp, keys, self.key, self.cov, self.b.agent)
            if found is None:
                return
            out = found
        ts = _str(e.get("timestamp"))
        msg = self.emit({**out, "role": "assistant"}, ts=ts) if out else \
            self.b.message("assistant", ts=ts)
        usage = _obj(_obj(e.get("output")).get("usage"))
        parts = ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")
        base, read, write = (self.b.count(usage.get(k), k) for k in parts)
        bad = any(usage.get(k) is not None and n is None
                  for k, n in zip(parts, (base, read, write)))
        output = self.b.count(usage.get("output_tokens"), "output_tokens")
        read_added = 0 if read and base is not None and output is not None \
            and _reads_included(usage.get("total_tokens"), base, output) else read or 0
        self.b.request(output_msg=msg,
                       input_tokens=None if base is None or bad else
                       base + read_added + (write or 0),
                       cache_read_tokens=read, cache_write_tokens=write,
                       output_tokens=output,
                       reasoning_tokens=self.b.count(usage.get("reasoning_tokens"),
                                                     "reasoning_tokens"),
                       model=text_field(self.b, e.get("model"), "model event: model"), ts=ts)
        self.context = keys + ([self.key(out)] if out else [])

    def new_messages(self, inp: list[dict[str, Any]], *, summarising: bool) -> list[dict[str, Any]]:
        """The messages of ``inp`` the run does not have yet: its tail past the previous
        call's context, or (when the context was rewritten) every message not seen before."""
        keys = [self.key(m) for m in inp]
        n = len(self.context)
        if keys[:n] == self.context:
            return inp[n:]
        if not summarising:
            self.cov.modelled("model (input rewritten)")
        return [m for m, k in zip(inp, keys) if k not in self.emitted]

    def compaction(self, event: dict[str, Any], summaries: list[dict[str, Any]],
                   kept: list[int]) -> None:
        """A ``compaction`` ContextEvent with the recorded trigger and sizes, and the summary
        message when the compaction wrote one (an edit or trim has none)."""
        b = self.b
        trigger = _obj(event.get("metadata")).get("trigger")
        index = b.n_events
        b.event("compaction", trigger=_TRIGGERS.get(trigger, "") if isinstance(trigger, str)
                else "", pre_tokens=event.get("tokens_before"),
                post_tokens=event.get("tokens_after"), preserved_msgs=kept,
                harness_compaction=True)
        if summaries:
            msg = b.message("user", ts=_str(event.get("timestamp")))
            b.set_event(index, summary_msg=msg)
            self.index.update((self.key(m), msg) for m in summaries)
            b.summary("\n\n".join(self.text(m.get("content"), True) for m in summaries),
                      counted=False)
            self.emitted.update(self.key(m) for m in summaries)

    def emit(self, m: dict[str, Any], ts: str = "") -> int:
        """Add one chat message; returns its message index."""
        b, role = self.b, m.get("role")
        self.emitted.add(self.key(m))
        content = m.get("content")
        if role == "tool":
            msg = self.index[self.key(m)] = b.message("tool", ts=ts)
            err = m.get("error")
            text = self.text(content, True)
            if isinstance(err, dict) and not text:
                text = text_field(b, err.get("message"), "error.message")
            b.tool_result(name_field(b, m.get("tool_call_id"), "tool_call_id") or
                          f"call-{msg}", text, is_error=err is not None)
            return msg
        if role not in ("system", "user", "assistant"):
            self.cov.unknown(f"message/{role}")
            role = "user"
        msg = self.index[self.key(m)] = b.message(str(role), ts=ts)
        for part in content if isinstance(content, list) else [content]:
            kind, text = self.part(part)
            if kind:
                b.text(text, kind=kind)
        calls = m.get("tool_calls") if role == "assistant" else None
        for k, tc in enumerate(calls if isinstance(calls, list) else []):
            tc = _obj(tc)
            args = tc.get("arguments")
            b.tool_call(name_field(b, tc.get("id"), f"tool_calls[{k}].id") or f"call-{msg}-{k}",
                        name_field(b, tc.get("function"), f"tool_calls[{k}].function") or
                        "tool", args if isinstance(args, (dict, str)) else {})
        return msg

    def part(self, part: Any, said: bool = True) -> tuple[str, str]:
        """(kind, text) of one content item; kind '' for nothing to add; ``said``: a value
        where text belongs that is no string is an issue about the message being written."""
        if part is None:
            return "", ""
        if isinstance(part, str):
            return ("text", self.resolve(part)) if part else ("", "")
        if not isinstance(part, dict):
            return "text", text_field(self.b, part, "content") if said else ""
        p = part
        t = p.get("type")
        if t == "text":
            text = p.get("text")
            if text.__class__ is not str:  # (no string: an issue when read for the run)
                text = text_field(self.b, text, "content text") if said else ""
            return "text", self.resolve(text)
        if t == "reasoning":
            text = p.get("reasoning")
            if text.__class__ is not str:  # (the summary stands for it, as for an empty one)
                text = text_field(self.b, text, "reasoning") if said else ""
            if not text:
                text = text_field(self.b, p.get("summary"), "reasoning summary") if said else \
                    _str(p.get("summary"))
            return ("reasoning", self.resolve(text)) if text or not p.get("redacted") \
                else ("reasoning", "[redacted reasoning]")
        if t in ("image", "audio", "video", "document"):
            return "image", f"[{t}]"
        return "text", json_text(p)[:10_000] if p else ""

    def text(self, content: Any, said: bool = False) -> str:
        parts = content if isinstance(content, list) else [content]
        return "\n".join(text for kind, text in (self.part(p, said) for p in parts) if kind)

    def resolve(self, text: str) -> str:
        if text.startswith("attachment://"):
            found = self.attachments.get(text[len("attachment://"):])
            return found if isinstance(found, str) else text
        return text

    def input(self, e: dict[str, Any]) -> list[dict[str, Any]]:
        refs = e.get("input_refs")
        if isinstance(refs, list) and isinstance(self.pool, list):
            out = []
            for r in refs:
                if isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r):
                    out.extend(self.pool[max(r[0], 0):max(r[1], 0)])
            return self.messages(out)
        return self.messages(e.get("input"))

    def messages(self, value: Any) -> list[dict[str, Any]]:
        return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []

    def key(self, m: dict[str, Any]) -> str:
        mid = m.get("id")
        if isinstance(mid, str) and mid:
            return mid
        raw = json.dumps([m.get("role"), self.text(m.get("content")), m.get("tool_call_id"),
                          m.get("tool_calls")], sort_keys=True, default=str)
        return hashlib.sha1(raw.encode("utf-8", "replace")).hexdigest()

    def scorer_calls(self, events: list[dict[str, Any]]) -> set[int]:
        """Model events inside a scorer span (or, in old logs, a scorer step)."""
        spans: dict[str, tuple[str, str]] = {}
        out: set[int] = set()
        step_scorer = 0
        for i, e in enumerate(events):
            kind = e.get("event")
            if kind == "span_begin":
                spans[_str(e.get("id"))] = (_str(e.get("type")), _str(e.get("parent_id")))
            elif kind == "step" and e.get("type") == "scorer":
                step_scorer += 1 if e.get("action") == "begin" else -1
            elif kind == "model" and (step_scorer > 0 or self.in_scorer(e, spans)):
                out.add(i)
        return out

    def in_scorer(self, e: dict[str, Any], spans: dict[str, tuple[str, str]]) -> bool:
        span, seen = _str(e.get("span_id")), 0
        while span in spans and seen < 64:
            kind, span = spans[span]
            if kind == "scorer":
                return True
            seen += 1
        return False

    def summary_calls(self, events: list[dict[str, Any]],
                      inputs: dict[int, list[dict[str, Any]]]) -> set[int]:
        """The model call that wrote each summary compaction's text."""
        out: set[int] = set()
        calls = sorted(inputs)
        for i, e in enumerate(events):
            if e.get("event") != "compaction" or e.get("type") not in (None, "summary"):
                continue
            before = [k for k in calls if k < i and k not in out]
            after = [k for k in calls if k > i]
            if not before or not after:
                continue
            summary = "\n".join(self.text(m.get("content")) for m in inputs[after[0]]
                                if _obj(m.get("metadata")).get("summary") is True)
            choices = _obj(events[before[-1]].get("output")).get("choices")
            answer = self.text(_obj(_obj(choices[0]).get("message")).get("content")) \
                if isinstance(choices, list) and choices else ""
            if answer.strip() and answer.strip() in summary:
                out.add(before[-1])
        return out


def _reads_included(total: Any, base: int, output: int) -> bool:
    """Whether a call's usage counts its cache reads inside ``input_tokens``: its
    ``total_tokens`` is ``input_tokens + output_tokens`` (with reads above 0 it would be more
    if they were apart), as Inspect before 0.3.184 wrote an OpenAI-family provider's usage."""
    return type(total) is int and total == base + output
