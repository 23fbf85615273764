"""Plain chat-completions message lists: what any custom harness can dump.

Not tied to one harness: checked against hand-made dumps of each shape (OpenAI and Anthropic
message styles).

Accepted shapes (one run per file):
  (a) one JSON object with ``messages`` (optional top-level ``system``/``model``);
  (b) a bare JSON list of messages;  (c) JSON Lines, one message per line;
  (d) JSON Lines of request logs: ``{"messages": prompt, "response": completion}``
      per model call.  The transcript is the longest (last) prompt plus its
      response; each line is one request whose output is the message its
      response became (found at index ``len(prompt)``, else by content).
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
(not in the transcript)``) and the transcript's messages as above.  Unknown: a role not known
here, a message that is not an object or has no role, a malformed message
(``message/<role> (malformed)``) or line (``request (malformed)``), another top-level key of (a).

Not handled: legacy function calling (an assistant ``function_call`` is ignored, a
``function`` role message is reported and skipped), Responses-API item lists, usage
kept elsewhere than ``usage`` (e.g. mini-swe-agent's ``extra.response``), and a (d)
log whose history was rewritten (a response not found in the longest transcript:
its request is reported and dropped).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from replay.ingest.parsers.builder import Issue, RunBuilder, RunDraft, Source
from replay.ingest.parsers.jsonl import (
    as_str,
    as_text,
    first_record,
    iter_records,
    load_json,
    loads,
)

NAME = "chat"

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool"}
_TEXT_PARTS = {"text", "input_text", "output_text"}
_IMAGE_PARTS = {"image", "image_url", "input_image"}
_MSG_START = re.compile(rb'^\{\s*"role"\s*:\s*"(?:system|developer|user|assistant|tool)"')
_LIST_START = re.compile(rb'^\[\s*\{\s*"role"\s*:')
_MESSAGES = re.compile(rb'"messages"\s*:\s*\[\s*\{\s*"(?:role|content)"\s*:')

Block = tuple[Any, ...]
"""(kind, text) for text/reasoning/image; ("tool_call", id, tool, args);
("tool_result", id, text, is_error)."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a message list, a ``{"messages": …}`` object, or JSONL of messages/requests."""
    text = head.lstrip()
    if text.startswith(b"["):
        try:
            start = len(text) - len(text[1:].lstrip())
            first, _ = json.JSONDecoder().raw_decode(text.decode("utf-8", "ignore"), start)
        except (ValueError, RecursionError):
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
        # JSON Lines whose first line is damaged: not a document, and most lines are records
        jsonl = doc is None and len(lines) > 1 and \
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
        _request_log(rb, items, models)
    else:
        if top.get("system"):
            items.insert(0, (0, {"role": "system", "content": top["system"]}))
        seen: dict[str, list[tuple[int, Any]]] = {}
        for no, m in items:
            ident = _identity(m)
            if ident is not None:
                same = seen.setdefault(ident, [])
                first_no = next((n for n, earlier in same if earlier == m), None)
                if first_no is not None:
                    src.coverage.skipped(f"{_rtype(m)} (repeat)")
                    issues.append(Issue(src.path, no, f"message {no} repeats message {first_no} "
                                                      "(same tool call id; skipped)"))
                    continue
                same.append((no, m))
            if _emit(rb, no, m) is not None and m.get("role") == "assistant":
                _request(rb, m.get("usage"), str(m.get("model") or ""), None, models)
    if rb.n_blocks == 0:
        return []  # every record was reported
    model = top.get("model")
    rb.model = model if isinstance(model, str) and model else (
        models.most_common(1)[0][0] if models else "")
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


def _rtype(m: Any) -> str:
    """A message's coverage type."""
    if not isinstance(m, dict):
        return "message (not an object)"
    return f"message/{m['role']}" if isinstance(m.get("role"), str) else "message (no role)"


def _blocks(m: Any) -> tuple[str, list[Block]]:
    """A message as (role, blocks); raises on a missing or wrong-typed field."""
    if not isinstance(m, dict):
        raise TypeError(f"expected a message object, got {type(m).__name__}")
    role = _ROLES.get(m.get("role"))  # type: ignore[arg-type]
    if role is None:
        raise ValueError(f"unknown role {m.get('role')!r}")
    content = m.get("content")
    blocks: list[Block] = []
    for key in ("reasoning_content", "reasoning"):
        if isinstance(m.get(key), str) and m[key]:
            blocks.append(("reasoning", m[key]))
            break
    if role == "tool":
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str):
            raise TypeError("tool message without a string 'tool_call_id'")
        blocks.append(("tool_result", call_id, as_text(content), bool(m.get("is_error"))))
    elif isinstance(content, str):
        if content or not m.get("tool_calls"):
            blocks.append(("text", content))
    elif isinstance(content, list):
        blocks.extend(_part(p) for p in content)
    elif content is not None:
        raise TypeError(f"'content' is a {type(content).__name__}")
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TypeError("'tool_calls' is not a list")
    for i, tc in enumerate(calls):
        fn = tc["function"]
        raw = fn.get("arguments")
        args: Any = raw if isinstance(raw, dict) else _json_or_raw(raw if isinstance(raw, str)
                                                                    else "")
        blocks.append(("tool_call", str(tc.get("id") or f"call-{i}"), str(fn["name"]), args))
    if any(b[0] == "tool_result" for b in blocks):
        role = "tool"
    return role, blocks or [("text", "")]


def _part(p: Any) -> Block:
    if isinstance(p, str):
        return ("text", p)
    if not isinstance(p, dict):
        raise TypeError(f"content part is a {type(p).__name__}")
    kind = p.get("type")
    if kind in _TEXT_PARTS:
        return ("text", str(p.get("text") or ""))
    if kind in _IMAGE_PARTS:
        return ("image", "[image]")
    if kind == "tool_use":
        args = p.get("input", {})
        return ("tool_call", str(p["id"]), str(p["name"]), args)
    if kind == "tool_result":
        return ("tool_result", str(p["tool_use_id"]), as_text(p.get("content")),
                bool(p.get("is_error")))
    if kind == "thinking":
        return ("reasoning", str(p.get("thinking") or ""))
    if kind == "redacted_thinking":
        return ("reasoning", "")
    return ("text", as_text([p]) or json.dumps(p, ensure_ascii=False))


def _json_or_raw(raw: str) -> Any:
    if not raw.strip():
        return {}
    try:
        return loads(raw)
    except ValueError:
        return raw


def _emit(rb: RunBuilder, no: int, m: Any, label: str = "") -> int | None:
    """Add one message and return its index; a bad one is reported at ``no`` (its line or
    message number) and skipped (None)."""
    cov, rtype = rb.source.coverage, _rtype(m)
    try:
        role, blocks = _blocks(m)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        known = isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in _ROLES
        cov.unknown(f"{rtype} (malformed)" if known else rtype)
        rb.issues.append(Issue(rb.source.path, no, f"{label or f'message {no}'} skipped: "
                                                   f"{type(exc).__name__}: {exc}"))
        return None
    msg = rb.message(role, ts=_ts(m))
    for b in blocks:
        if b[0] == "tool_call":
            rb.tool_call(b[1], b[2], b[3])
        elif b[0] == "tool_result":
            rb.tool_result(b[1], b[2], is_error=b[3], line=no)
        else:
            rb.text(b[1], kind=b[0])
    cov.modelled(rtype)
    return msg


def _request(rb: RunBuilder, usage: Any, model: str, output_msg: int | None,
             models: Counter[str], ts: str = "") -> None:
    u = usage if isinstance(usage, dict) else {}

    def count(*path: str) -> int | None:
        """The count at ``path`` in the usage object (reported by ``rb.count`` when present
        but not a count); None when absent."""
        d: Any = u
        for key in path[:-1]:
            d = d.get(key) if isinstance(d, dict) else None
        return rb.count(d.get(path[-1]), ".".join(path)) if isinstance(d, dict) else None

    inp, out, cache_write = count("prompt_tokens"), count("completion_tokens"), \
        count("cache_creation_input_tokens")
    cache_read = count("prompt_tokens_details", "cached_tokens")
    if cache_read is None:
        cache_read = count("input_tokens_details", "cached_tokens")
    anthropic_read = count("cache_read_input_tokens")
    if cache_read is None:
        cache_read = anthropic_read
    if inp is None and u.get("prompt_tokens") is None:
        inp = count("input_tokens")
        if inp is not None and ("cache_read_input_tokens" in u
                                or "cache_creation_input_tokens" in u):  # Anthropic: parts
            bad = any(u.get(k) is not None and n is None for k, n in
                      (("cache_read_input_tokens", anthropic_read),
                       ("cache_creation_input_tokens", cache_write)))
            inp = None if bad else inp + (anthropic_read or 0) + (cache_write or 0)
    if out is None and u.get("completion_tokens") is None:
        out = count("output_tokens")
    reasoning = count("completion_tokens_details", "reasoning_tokens")
    if reasoning is None:
        reasoning = count("output_tokens_details", "reasoning_tokens")
    if model:
        models[model] += 1
    rb.request(output_msg=output_msg, input_tokens=inp, cache_read_tokens=cache_read,
               cache_write_tokens=cache_write, output_tokens=out, reasoning_tokens=reasoning,
               model=model, ts=ts)


def _request_log(rb: RunBuilder, items: list[tuple[int, Any]], models: Counter[str]) -> None:
    """Shape (d): the longest prompt + its response is the transcript; one request per line."""
    calls: list[tuple[int, dict[str, Any], dict[str, Any], list[Any], dict[str, Any]]] = []
    for no, rec in items:
        try:
            if not isinstance(rec["messages"], list):  # list("text") would be one per letter
                raise TypeError(f"'messages' is a {type(rec['messages']).__name__}, not a list")
            prompt = list(rec["messages"])
            if rec.get("system"):
                prompt.insert(0, {"role": "system", "content": rec["system"]})
            resp = rec["response"]
            choices = resp.get("choices")
            out = choices[0]["message"] if isinstance(choices, list) else resp
            if not isinstance(out, dict):
                raise TypeError("the response message is not an object")
            calls.append((no, rec, resp, prompt, {**out, "role": out.get("role") or "assistant"}))
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            rb.source.coverage.unknown("request (malformed)")
            rb.issues.append(Issue(rb.source.path, no, f"request line {no} skipped: "
                                                       f"{type(exc).__name__}: {exc}"))
    if not calls:
        return
    no_last, _, _, prompt, out = max(enumerate(calls), key=lambda c: (len(c[1][3]), c[0]))[1]
    keys: dict[int, str] = {}  # stream index -> content key, for messages that were emitted
    where: dict[int, int] = {}  # stream index -> builder message index
    for i, m in enumerate([*prompt, out]):
        msg = _emit(rb, no_last, m, f"message {i + 1} of line {no_last}")
        key = _key(m)
        if msg is not None and key is not None:
            where[i], keys[i] = msg, key
    used: set[int] = set()
    for no, rec, resp, p, out in calls:
        want = _key(out)
        idx = len(p) if keys.get(len(p)) == want and len(p) not in used else next(
            (i for i, k in keys.items() if k == want and i not in used), None)
        if want is None or idx is None:
            rb.source.coverage.skipped("request (not in the transcript)")
            rb.issues.append(Issue(rb.source.path, no, f"request line {no}: its response is not in "
                                                       "the longest transcript (request dropped)"))
            continue
        used.add(idx)
        rb.source.coverage.modelled("request")
        model = as_str(resp.get("model"))
        _request(rb, resp.get("usage"), model, where[idx], models, _ts(rec) or _ts(resp))


def _ts(rec: dict[str, Any]) -> str:
    """A record's time: its ``timestamp`` string, else its unix ``created`` as ISO-8601 UTC."""
    stamp, created = rec.get("timestamp"), rec.get("created")
    if isinstance(stamp, str):
        return stamp
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        try:
            return datetime.fromtimestamp(created, UTC).isoformat()
        except (OverflowError, OSError, ValueError):  # past year 9999, or not a number (nan)
            return ""
    return ""


def _key(m: Any) -> Any:
    try:
        return json.dumps(_blocks(m), sort_keys=True, default=str)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None

