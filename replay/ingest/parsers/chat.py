"""Plain chat-completions message lists: what any custom harness can dump.

Not tied to one harness: checked against hand-made dumps of each shape (OpenAI and Anthropic
message styles).

Accepted shapes (one run per file):
  (a) one JSON object with ``messages`` (optional top-level ``system``/``model``);
  (b) a bare JSON list of messages;  (c) JSON Lines, one message per line;
  (d) JSON Lines of request logs: ``{"messages": prompt, "response": completion}``
      per model call, each line one request whose output is the message its
      response became.  A history that never changed (every prompt plus its
      response a prefix of the longest one, in any line order) is read from the
      longest prompt plus its response (the response found at ``len(prompt)``,
      else by content).  A history the harness rewrote between requests (a window
      of the latest messages, old turns replaced by a summary, old tool outputs
      trimmed) is read request by request into one stream holding every message
      any prompt or response held, once, in the order first met: a request whose
      prompt no longer holds a message of the previous context (the previous
      prompt plus its response) is a rewrite, recorded as a ``compaction`` event
      (trigger '': not recorded) whose ``preserved_msgs`` are the older messages
      the prompt kept and whose summary is a new text message standing in place
      of the removed ones (a ``summary`` row flagged ``is_harness_summary``; None
      for a window); a message sent with changed text (a trimmed tool output) is
      a new message after the rewrite, the old one stays before it
      (``replay.ingest.parsers.chat_rewrites`` has the rules).
      ``n_harness_compactions`` counts the rewrites.  No preset reproduces an
      unknown harness (``replay fidelity`` replays a chat run under ``none``, which
      applies no rewrite: it sends the whole stream); the truth anchoring sees each
      rewrite as the recorded context's new start (a window's, with no summary, at
      its first new message: ``replay.engine.prepared``).
Messages are OpenAI-shaped (``content`` string or parts, assistant ``tool_calls``
with JSON-string arguments, ``tool`` messages with ``tool_call_id``) or carry
Anthropic blocks (``tool_use``, ``tool_result``, ``thinking``).  In (a)-(c) every
assistant message is one request with usage from its ``usage`` (OpenAI or
Anthropic field names; Anthropic input is summed with its cache fields).  A JSON Lines file
whose first line is damaged is still read line by line (when most lines are records), and a
message with a tool call id written twice verbatim is reported and skipped, not counted twice.

Coverage (``src.coverage``): each message as ``message/<role>``, modelled (a repeat
skipped as ``message/<role> (repeat)``); in (a) ``model`` skipped, ``system`` counted as the
system message it becomes; in (d) each line as ``request`` (modelled, or skipped as ``request
(not in the transcript)`` of an unchanged history, a repeated line; ``request (response not
read)`` of a rewritten one) and the stream's messages as above (a summary as
``message/<role> (summary)``).  Unknown: a role not known
here, a message that is not an object or has no role, a malformed message
(``message/<role> (malformed)``) or line (``request (malformed)``), another top-level key of (a).

Not handled: legacy function calling (an assistant ``function_call`` is ignored, a
``function`` role message is reported and skipped), Responses-API item lists, usage
kept elsewhere than ``usage`` (e.g. mini-swe-agent's ``extra.response``), and in (d) the
order of a rewritten prompt that moved older messages (the stream keeps the order first met), a
retried request (its previous response dropped: read as a rewrite), a repeated line of an
unchanged history (dropped, reported in one issue with the others and their lines).

The messages: ``replay.ingest.parsers.chat_messages``; requests and shape (d):
``replay.ingest.parsers.chat_requests``, a rewritten history ``chat_rewrites``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.chat_messages import emit_message, message_type
from replay.ingest.parsers.chat_requests import (
    add_request,
    request_calls,
    request_log,
    unchanged_history,
)
from replay.ingest.parsers.chat_rewrites import read_rewritten
from replay.ingest.parsers.json_decode import JSON_REFUSED
from replay.ingest.parsers.jsonl import first_record, iter_records, load_json
from replay.ingest.parsers.repeats import Repeats
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue, Source

NAME = "chat"

_MSG_START = re.compile(rb'^\{\s*"role"\s*:\s*"(?:system|developer|user|assistant|tool)"')
_LIST_START = re.compile(rb'^\[\s*\{\s*"role"\s*:')
_MESSAGES = re.compile(rb'"messages"\s*:\s*\[\s*\{\s*"(?:role|content)"\s*:')


def sniff(filename: str, head: bytes) -> bool:
    """True for a message list, a ``{"messages": …}`` object, or JSONL of messages/requests."""
    text = head.lstrip()
    if text.startswith(b"["):
        try:
            start = len(text) - len(text[1:].lstrip())
            first, _ = json.JSONDecoder().raw_decode(text.decode("utf-8", "ignore"), start)
        except JSON_REFUSED:
            return _LIST_START.match(text) is not None
        return _is_message(first)
    if not text.startswith(b"{"):
        return False
    rec = first_record(text)
    if rec is not None:
        return isinstance(rec.get("messages"), list) or _is_message(rec)
    return _MSG_START.match(text) is not None or _MESSAGES.search(text) is not None


def evidence(filename: str, head: bytes) -> str:
    """What of a chat dump the head shows: a message list, a ``messages`` object, or message /
    request lines; '' for none of these."""
    text = head.lstrip()
    if text.startswith(b"[") and _LIST_START.match(text):
        return "a list of role/content messages"
    if _MESSAGES.search(text):
        return "an object with a messages list"
    if _MSG_START.match(text):
        return "role/content message lines"
    return ""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from a chat message dump or a request log; bad messages are reported, skipped.

    Args:
        src: the source file.
        issues: where problems are appended (JSONL: line number; JSON: message number).
    """
    lines = [raw for raw in src.data.split(b"\n") if raw.strip()]
    if not lines:
        issues.append(Issue(src.path, 0, "empty file"))
        return []
    top: dict[str, Any] = {}
    jsonl = len(lines) > 1 and isinstance(first_record(lines[0]), dict)
    doc_issues: list[Issue] = []
    if not jsonl:
        doc = load_json(src, doc_issues)
        # JSON Lines whose first line is damaged: not a document (or one only with bytes after
        # it or not UTF-8: its first line), and most lines are records
        jsonl = (doc is None or bool(doc_issues)) and len(lines) > 1 and \
            2 * sum(first_record(raw) is not None for raw in lines) > len(lines)
    if jsonl:
        items: list[tuple[int, Any]] = list(iter_records(src, issues))
    else:
        issues.extend(doc_issues)
        has_messages = isinstance(doc, dict) and isinstance(doc.get("messages"), list)
        if has_messages and "response" not in doc:
            top = doc
            for key in top:
                if key == "model" or (key == "system" and not top[key]):
                    src.coverage.skipped(key)
                elif key not in ("messages", "system"):
                    src.coverage.unknown(key)
            items = list(enumerate(doc["messages"], start=1))
        elif has_messages or _is_message(doc):
            items = [(1, doc)]
        elif isinstance(doc, list):
            items = list(enumerate(doc, start=1))
        else:
            if doc is not None:
                issues.append(Issue(src.path, 0, "expected chat messages: an object with "
                                                 "'messages', a list, or JSON Lines"))
            return []
    if not items:
        issues.append(Issue(src.path, 0, "no chat messages found"))
        return []
    rb = RunBuilder(src, 0, NAME, issues)
    models: Counter[str] = Counter()
    first = items[0][1]
    if isinstance(first, dict) and isinstance(first.get("messages"), list):
        calls = request_calls(rb, items)
        if unchanged_history(calls):
            request_log(rb, calls, models)
        else:
            read_rewritten(rb, calls, models)
    else:
        if top.get("system"):
            items.insert(0, (0, {"role": "system", "content": top["system"]}))
        seen = Repeats()
        for no, m in items:
            ident = _identity(m)
            if ident is not None:
                first_no = seen.earlier(ident, m, no)
                if first_no is not None:
                    src.coverage.skipped(f"{message_type(m)} (repeat)")
                    issues.append(Issue(src.path, no, f"message {no} repeats message {first_no} "
                                                      "(same tool call id; skipped)"))
                    continue
            if emit_message(rb, no, m) is not None and m.get("role") == "assistant":
                add_request(rb, m.get("usage"), m.get("model"), None, models, line=no)
    if rb.n_blocks == 0:
        return []  # every record was reported
    model = run_text(top.get("model"), "model", src.path, issues, nullable=True)  # (exporters
    # write null for an unknown model)
    rb.model = model or (models.most_common(1)[0][0] if models else "")
    return [rb.build()]


def _is_message(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("role"), str) and (
        "content" in rec or "tool_calls" in rec)


def _identity(m: Any) -> str | None:
    """What makes a message unique: its first tool call id or the call id it answers (a plain
    text message has none: the same text may legitimately be sent twice)."""
    if not isinstance(m, dict):
        return None
    if isinstance(m.get("tool_call_id"), str) and m["tool_call_id"]:
        return f"result:{m['tool_call_id']}"
    calls = m.get("tool_calls")
    parts = [*(calls if isinstance(calls, list) else []),
             *(m["content"] if isinstance(m.get("content"), list) else [])]
    for p in parts:
        if isinstance(p, dict):
            for key in ("id", "tool_use_id"):
                if isinstance(p.get(key), str) and p[key] and p.get("type") != "text":
                    return f"{key}:{p[key]}"
    return None
