"""OpenAI Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``), modern and legacy.

Modern (cli >= ~0.40): lines ``{"timestamp", "type", "payload"}``.  ``response_item`` payloads
are the Responses-API items that form the context; ``event_msg`` ``token_count`` gives usage
(other ``event_msg`` are UI echoes, not context); ``turn_context`` gives the model and
``session_meta`` the harness; ``compacted`` is a harness compaction: its summary becomes a
message, its ``replacement_history`` (a copy of older context) is left out of the stream.
Legacy (<= Sept 2025): a first line with top-level ``id``/``timestamp``/``instructions``, then
bare Responses items and ``{"record_type": "state"}`` markers (ignored); no usage, no model.

Consecutive model-output items (reasoning, assistant message, function / custom / local-shell /
web-search calls) form ONE assistant message = one request; each tool output is its own
``tool`` message; user and developer (→ system) messages are their own.  Requests: one per
assistant message, usage from ``token_count`` events with ``info``, deduplicated (late-2025+
builds write each twice with the same ``total_token_usage``).  0.5x builds write a token_count
BEFORE the items it measures, 0.10x right AFTER them: the file's order is taken from its first
usage-bearing token_count.  A run with no token_count (legacy, aborted turn) still gets a
request with usage None; a token_count with no run to attach to is reported and dropped; when
only totals are recorded, usage is the difference of consecutive totals.

A context item with an identity (a call's or output's ``call_id``, an ``id``, a reasoning
item's ``encrypted_content``) written again verbatim is reported and skipped, not counted twice.

Not handled: session_meta / legacy ``instructions`` are metadata only (the user part is repeated
in a user message); forks (``forked_from_id``) are not linked; ``is_error`` comes only from a
JSON output's non-zero ``metadata.exit_code`` or a ``success: false`` output payload.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from replay.parsers.builder import Issue, RunBuilder, RunDraft, Source
from replay.parsers.jsonl import as_text, iter_records, loads

NAME = "codex"

_ENVELOPE = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_ROLES = {"user": "user", "developer": "system", "system": "system", "assistant": "assistant"}
_USAGE = (("input_tokens", "input_tokens"), ("cached_input_tokens", "cache_read_tokens"),
          ("output_tokens", "output_tokens"), ("reasoning_output_tokens", "reasoning_tokens"))
_NO_RUN = "token_count with no model output to attach it to (usage dropped)"
_MODERN_HEAD = re.compile(rb'\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:%s)"\s*,'
                          rb'\s*"payload"\s*:\s*\{' % b"|".join(t.encode() for t in _ENVELOPE))
_LEGACY_HEAD = re.compile(rb'\s*\{\s*"id"\s*:\s*"[^"]*"\s*,\s*"timestamp"\s*:\s*"[^"]*"\s*,'
                          rb'\s*"(?:instructions|git)"\s*:')


def sniff(filename: str, head: bytes) -> bool:
    """True for a Codex rollout (modern envelope lines or the legacy pre-envelope layout).

    Args:
        filename: the file name (unused: rollouts are recognised by content).
        head: the first 64 KiB of the file.
    """
    if _MODERN_HEAD.match(head) or _LEGACY_HEAD.match(head):
        return True
    for i, raw in enumerate(head.split(b"\n", 40)[:40]):
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(rec, dict):
            return False
        if isinstance(rec.get("payload"), dict) and "timestamp" in rec:
            if rec.get("type") == "session_meta" and i == 0 or rec.get("type") in _ENVELOPE[1:4]:
                return True
        elif "payload" not in rec and ("record_type" in rec or (
                i == 0 and "id" in rec and "timestamp" in rec and "type" not in rec
                and ("instructions" in rec or "git" in rec))):
            return True
    return False


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """The one run of a rollout file (modern or legacy); bad records become issues.

    Args:
        src: the rollout file.
        issues: problems found are appended here.
    """
    records = _unique(list(iter_records(src, issues)), src.path, issues)
    if not records:
        issues.append(Issue(src.path, 0, "no JSON records in this Codex rollout"))
        return []
    walk = _Walk(RunBuilder(src, 0, NAME, issues), src.path, issues, _usage_first(records))
    for no, rec in records:
        try:
            walk.record(no, rec)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            issues.append(Issue(src.path, no, f"{exc} (record skipped)"))
    if walk.b.n_blocks == 0:
        issues.append(Issue(src.path, 0, "no context items (response items) in this Codex rollout"))
        return []
    walk.finish()
    return [walk.b.build()]


@dataclass(slots=True)
class _Walk:
    """The walk over one rollout: open assistant run, usage waiting for its run, metadata."""

    b: RunBuilder
    path: str
    issues: list[Issue]
    usage_first: bool
    model: str = ""
    cli: str = ""
    originator: str = ""
    open_run: bool = False
    runs: list[list[Any]] = field(default_factory=list)  # [msg, ts, model, usage | None]
    pending: dict[str, int | None] | None = None
    pending_line: int = 0
    prev_total: Any = None

    def record(self, no: int, rec: dict[str, Any]) -> None:
        if "payload" in rec:
            kind, payload = rec.get("type"), rec["payload"]
            if not isinstance(payload, dict):
                raise ValueError(f"{kind!r} line: payload is {type(payload).__name__}, "
                                 "not an object")
            ts = _opt_str(rec, "timestamp")
            if kind == "response_item":
                self.item(no, payload, ts)
            elif kind == "event_msg":
                if payload.get("type") == "token_count" and payload.get("info") is not None:
                    self.token_count(no, payload["info"])
            elif kind == "turn_context":
                self.model = _opt_str(payload, "model") or self.model
                self.open_run = False
            elif kind == "session_meta":
                self.meta(payload)
            elif kind == "compacted":
                text = _opt_str(payload, "message")
                self.open_run = False
                self.b.message("user", ts=ts)
                self.b.summary(text, harness=True)
            else:
                self.issues.append(Issue(self.path, no, f"unknown line type {kind!r} (skipped)"))
        elif "record_type" in rec:
            return
        elif "type" in rec:
            self.item(no, rec, _opt_str(rec, "timestamp"))
        elif "id" in rec and "timestamp" in rec:
            self.meta(rec)
        else:
            self.issues.append(Issue(self.path, no, "record has no 'type' or 'payload' (skipped)"))

    def item(self, no: int, p: dict[str, Any], ts: str) -> None:
        t, b = p.get("type"), self.b
        if t == "message":
            role = p.get("role")
            if role not in _ROLES:
                raise ValueError(f"message role {role!r} is not user/assistant/developer/system")
            blocks = _content(p.get("content"))
            if role == "assistant":
                self.output(ts)
            else:
                self.open_run = False
                b.message(_ROLES[role], ts=ts)
            for kind, text in blocks or [("text", "")]:
                b.text(text, kind=kind)
        elif t == "reasoning":
            text = _reasoning(p)
            self.output(ts)
            b.text(text, kind="reasoning")
        elif t in _CALLS:
            call_id, tool, args = _call(no, t, p)
            self.output(ts)
            b.tool_call(call_id, tool, args)
        elif t in _OUTPUTS:
            call_id = _opt_str(p, "call_id")
            if not call_id:
                raise ValueError(f"{t} has no call_id")
            text, is_error = _result(p.get("output"))
            self.open_run = False
            b.message("tool", ts=ts)
            b.tool_result(call_id, text, is_error=is_error, line=no)
        elif t != "ghost_snapshot":
            self.issues.append(Issue(self.path, no, f"unknown response item type {t!r} (skipped)"))

    def output(self, ts: str) -> None:
        """Continue the open assistant run, or start one (taking usage recorded before it)."""
        if self.open_run:
            return
        self.open_run = True
        msg = self.b.message("assistant", ts=ts)
        self.runs.append([msg, ts, self.model, self.pending])
        self.pending = None

    def token_count(self, no: int, info: Any) -> None:
        if not isinstance(info, dict):
            raise ValueError(f"token_count info is {type(info).__name__}, not an object")
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total is not None and total == self.prev_total:
            return  # the same request's usage written a second time
        if last is None and isinstance(total, dict):  # totals only: difference with the last one
            prev = self.prev_total if isinstance(self.prev_total, dict) else {}
            last = {k: (_int(total, k) or 0) - (_int(prev, k) or 0) for k, _ in _USAGE}
        if not isinstance(last, dict):
            raise ValueError("token_count info has no last_token_usage / total_token_usage object")
        usage = {name: _int(last, key) for key, name in _USAGE}
        self.prev_total = total
        self.open_run = False
        if self.usage_first:  # measures the run that follows
            if self.pending is not None:
                self.issues.append(Issue(self.path, self.pending_line, _NO_RUN))
            self.pending, self.pending_line = usage, no
        elif self.runs and self.runs[-1][3] is None:  # measures the run just written
            self.runs[-1][3] = usage
        else:
            self.issues.append(Issue(self.path, no, _NO_RUN))

    def meta(self, p: dict[str, Any]) -> None:
        self.cli = _opt_str(p, "cli_version") or self.cli
        self.originator = _opt_str(p, "originator") or self.originator
        self.model = _opt_str(p, "model") or self.model

    def finish(self) -> None:
        """Emit one request per assistant run, in order; set the run's model and harness."""
        if self.pending is not None:
            self.issues.append(Issue(self.path, self.pending_line, _NO_RUN))
        models = Counter(r[2] for r in self.runs if r[2])
        self.b.model = models.most_common(1)[0][0] if models else self.model
        self.b.harness = " ".join(x for x in ("codex", self.cli, self.originator) if x)
        for msg, ts, model, usage in self.runs:
            self.b.request(output_msg=msg, ts=ts, model=model, **(usage or {}))


def _unique(records: list[tuple[int, dict[str, Any]]], path: str,
            issues: list[Issue]) -> list[tuple[int, dict[str, Any]]]:
    """``records`` without repeats of an earlier context item with the same identity (a call's
    or output's ``call_id``, an item's ``id``, a reasoning item's ``encrypted_content``): an item
    written twice is reported, not counted twice.  Messages carry no identity and may
    legitimately repeat."""
    seen: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    out = []
    for no, rec in records:
        if "payload" in rec:
            item = rec["payload"] if rec.get("type") == "response_item" else None
        else:
            item = rec  # legacy: bare items
        ident = _identity(item)
        if ident is not None:
            same = seen.setdefault(ident, [])
            first = next((n for n, earlier in same if earlier == item), 0)
            if first:
                issues.append(Issue(path, no, f"duplicate of the {ident[0]} item on line {first} "
                                              "(record skipped)"))
                continue
            same.append((no, item))
        out.append((no, rec))
    return out


def _identity(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return None
    for key in ("call_id", "id", "encrypted_content"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return item["type"], value
    return None


def _usage_first(records: list[tuple[int, dict[str, Any]]]) -> bool:
    """True when the file's first usage-bearing token_count comes before any model output."""
    for _, rec in records:
        p = rec.get("payload", rec)
        if not isinstance(p, dict):
            continue
        if rec.get("type") == "event_msg" and p.get("type") == "token_count":
            if p.get("info") is not None:
                return True
        elif rec.get("type") in ("response_item", *_CALLS, "reasoning", "message") and (
                p.get("type") in (*_CALLS, "reasoning") or p.get("role") == "assistant"):
            return False
    return False


def _call(no: int, t: str, p: dict[str, Any]) -> tuple[str, str, Any]:
    """(call id, tool name, args) of a model-output call item."""
    call_id = _opt_str(p, "call_id") or _opt_str(p, "id") or f"call-{no}"
    if t == "web_search_call":
        action = p.get("action")
        return call_id, "web_search", action if isinstance(action, dict) else {}
    if t == "local_shell_call":
        action = p.get("action")
        if not isinstance(action, dict):
            raise ValueError(f"local_shell_call action is {type(action).__name__}, not an object")
        return call_id, "local_shell", action
    name = p.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{t} name is {type(name).__name__}, not a non-empty string")
    raw = p.get("input" if t == "custom_tool_call" else "arguments")
    if raw is None or isinstance(raw, dict):
        return call_id, name, raw or {}
    if not isinstance(raw, str):
        raise ValueError(f"{t} arguments are {type(raw).__name__}, not a string")
    try:
        parsed = loads(raw) if t == "function_call" else None
    except ValueError:
        parsed = None
    return call_id, name, parsed if isinstance(parsed, dict) else raw


def _content(content: Any) -> list[tuple[str, str]]:
    """A message's content as (kind, text) blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [("text", content)]
    if not isinstance(content, list):
        raise ValueError(f"message content is {type(content).__name__}, not a list")
    blocks: list[tuple[str, str]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_image", "image", "image_url"):
            blocks.append(("image", "[image]"))
        elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
            blocks.append(("text", part["refusal"]))
        else:
            blocks.append(("text", as_text([part])))
    return blocks


def _reasoning(p: dict[str, Any]) -> str:
    """Visible reasoning text: summary texts then content texts ('' when only encrypted)."""
    parts: list[str] = []
    for key in ("summary", "content"):
        value = p.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise ValueError(f"reasoning {key} is {type(value).__name__}, not a list")
        for x in value:
            text = x.get("text") if isinstance(x, dict) else x
            if isinstance(text, str) and text:
                parts.append(text)
    return "\n".join(parts)


def _result(output: Any) -> tuple[str, bool]:
    """(text the model saw, is_error) of a tool output, the string kept exactly as recorded."""
    if output is None:
        return "", False
    if isinstance(output, str):  # 0.5x exec outputs: {"output": …, "metadata": {"exit_code": N}}
        try:
            meta = loads(output).get("metadata") if output.startswith('{"') else None
        except (ValueError, AttributeError):
            meta = None
        return output, isinstance(meta, dict) and meta.get("exit_code") not in (0, None)
    if isinstance(output, dict) and "content" in output:
        return as_text(output["content"]), output.get("success") is False
    if isinstance(output, list):
        return as_text(output), False
    raise ValueError(f"tool output is {type(output).__name__}, not a string")


def _opt_str(d: dict[str, Any], key: str) -> str:
    """``d[key]`` as a string ('' when absent or null); any other type is an error."""
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"field {key!r} is {type(value).__name__}, not a string")
    return value or ""


def _int(d: dict[str, Any], key: str) -> int | None:
    value = d.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(f"usage field {key!r} is {type(value).__name__}, not an integer")
    return value
