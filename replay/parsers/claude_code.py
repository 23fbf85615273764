"""Claude Code session transcripts (``~/.claude/projects/<slug>/<sessionId>.jsonl``).

One JSON record per line; each file is one run.  ``user`` records hold prompts
(string content) or content blocks (``text`` / ``image`` / ``tool_result``);
``assistant`` records are Anthropic API responses *streamed one content block per
record*: records sharing ``message.id`` are one response (blocks concatenated in
file order, usage from the group's last record).  Tools run while the response
still streams, so results can sit between records of their own call's group.
Conversation order: the ``parentUuid`` chain from the last user/assistant record
back to the root (``logicalParentUuid`` bridges a compaction boundary), plus the
other records of the chain's responses and their parallel tool results, emitted
in file order; when the chain is broken (missing parent, cycle, no uuids) the
whole file is used in file order.  A compaction (``system``/``compact_boundary``
then an ``isCompactSummary`` user record) becomes one message holding a harness
summary.  Subagent files (``<session>/subagents/agent-<id>.jsonl``) are their own
run linked to the parent session's run; in ``agent-acompact-*`` files the answer
is the harness's compaction summary.

Not handled: ``progress``, ``file-history-snapshot``, ``queue-operation``, old
``summary`` records and other ``system`` subtypes (not model traffic);
``<synthetic>`` assistant records (written by the harness) get no request.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay.parsers.builder import Issue, RunBuilder, RunDraft, Source, run_id_for
from replay.parsers.jsonl import as_text, iter_records, loads

NAME = "claude_code"

_MESSAGE_TYPES = ("user", "assistant")
"""Record types that decide the format (with Claude Code's keys around a ``message`` object)."""
NON_MESSAGE_TYPES = frozenset((
    "summary", "file-history-snapshot", "file-history-delta", "progress", "queue-operation",
    "last-prompt", "mode", "permission-mode", "ai-title", "custom-title", "agent-name",
    "agent-setting", "attachment", "bridge-session", "worktree-state", "fork-context-ref",
    "frame-link", "relocated", "started", "result", "atis-latch", "pr-link",
    "saved_hook_context", "tag"))
"""Claude Code record types that are not messages: they never decide the format (other tools
write records named ``summary`` or ``result`` too), and a head of nothing else is only near."""
_LINK_KEYS = ("sessionId", "parentUuid", "logicalParentUuid", "uuid", "leafUuid", "messageId")
_SIDE_KEYS = ("isSidechain", "userType", "agentId", "requestId", "cwd", "gitBranch")
"""Keys of Claude Code records besides the links (subagent files may lack the links)."""
_HEAD_TYPE = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"')
_HEAD_LINK = re.compile(rb'"(?:' + b"|".join(k.encode() for k in _LINK_KEYS) + rb')"\s*:')
_HEAD_START = re.compile(rb'^\s*\{\s*"(?:type|parentUuid|logicalParentUuid|leafUuid|sessionId|uuid'
                         rb'|isSidechain)"\s*:')

Block = tuple[Any, ...]
"""A normalised content block: (kind, …) — see ``_blocks``."""


@dataclass(slots=True)
class _Rec:
    """A validated user/assistant record."""

    line: int
    role: str
    uuid: str
    ts: str
    blocks: list[Block]
    msg_id: str = ""
    model: str = ""
    usage: dict[str, Any] | None = None


@dataclass(slots=True)
class _Group:
    """All records of one streamed assistant response."""

    recs: list[_Rec] = field(default_factory=list)


class _Bad(ValueError):
    """A record with a missing or wrong-typed field."""


def sniff(filename: str, head: bytes) -> bool:
    """True when some record of the head is a Claude Code message (see ``evidence``).

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    return _scan(head)[0] > 0


def evidence(filename: str, head: bytes) -> str:
    """What of Claude Code the head shows: its message records (which decide) or only its
    non-message records (which never do); '' when neither."""
    n_msg, others = _scan(head)
    kinds = ", ".join(f"{t} x{n}" for t, n in others.most_common(4))
    if n_msg:
        return (f"{n_msg} user/assistant record(s) with Claude Code keys in the first 64 KiB"
                + (f" (besides {kinds})" if kinds else ""))
    if others:
        return (f"only non-message Claude Code records ({kinds}) in the first 64 KiB, "
                "no user/assistant record to decide on")
    return ""


def _scan(head: bytes) -> tuple[int, Counter[str]]:
    """(message records with Claude Code keys, non-message Claude Code record types) among the
    head's lines; an unparsable line (the head's cut-off last line, a first record longer than
    the head) counts as a message when it opens like one and has its type and a link key."""
    n_msg, others = 0, Counter[str]()
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = loads(raw)
        except (ValueError, RecursionError):
            if _HEAD_START.match(raw) and _HEAD_TYPE.search(raw) and _HEAD_LINK.search(raw) \
                    and b'"payload"' not in raw[:200]:
                n_msg += 1
            continue
        if not isinstance(rec, dict) or "payload" in rec:
            continue
        kind = rec.get("type")
        if kind in _MESSAGE_TYPES and _is_message(rec):
            n_msg += 1
        elif isinstance(kind, str) and kind in NON_MESSAGE_TYPES and (
                any(k in rec for k in _LINK_KEYS) or kind != "summary" and kind != "result"):
            others[kind] += 1
        elif kind == "system" and isinstance(rec.get("subtype"), str) \
                and any(k in rec for k in _LINK_KEYS):
            others["system"] += 1
    return n_msg, others


def _is_message(rec: dict[str, Any]) -> bool:
    """A user/assistant record shaped as Claude Code writes it: a ``message`` object and a link
    key, or (subagent files) other Claude Code keys, or an Anthropic response (``msg_`` id)."""
    msg = rec.get("message")
    if not isinstance(msg, dict) or not ("content" in msg or "role" in msg):
        return False
    if any(k in rec for k in _LINK_KEYS) or any(k in rec for k in _SIDE_KEYS):
        return True
    mid = msg.get("id")
    return isinstance(mid, str) and mid.startswith("msg_")


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """Parse one transcript into one run (index 0); bad records become issues.

    Args:
        src: the transcript file.
        issues: where problems are reported (``path:line: reason``).
    """
    links: dict[str, str | None] = {}
    recs: list[_Rec] = []
    version = agent_id = ""
    for no, raw in iter_records(src, issues):
        try:
            uuid = raw.get("uuid")
            if isinstance(uuid, str) and uuid:
                if uuid in links:
                    issues.append(Issue(src.path, no, f"duplicate record uuid {uuid!r} (skipped)"))
                    src.coverage.skipped(_rtype(raw))
                    continue
                parent = raw.get("parentUuid") or raw.get("logicalParentUuid")
                links[uuid] = parent if isinstance(parent, str) else None
            if raw.get("type") not in ("user", "assistant"):
                _count_other(src, raw)
                continue
            rec = _record(no, raw)
        except (_Bad, KeyError, TypeError, ValueError, AttributeError) as exc:
            issues.append(Issue(src.path, no, f"{exc} (record skipped)"))
            src.coverage.skipped(_rtype(raw))
            continue
        src.coverage.modelled(raw["type"])
        version = version or (raw["version"] if isinstance(raw.get("version"), str) else "")
        agent_id = agent_id or (raw["agentId"] if isinstance(raw.get("agentId"), str) else "")
        recs.append(rec)
    if not recs:
        issues.append(Issue(src.path, 0, "no user or assistant records"))
        return []
    path = Path(src.path)
    is_sub = path.parent.name == "subagents" and path.name.startswith("agent-")
    if is_sub and not agent_id:
        agent_id = path.stem[len("agent-"):]
    b = RunBuilder(src, 0, NAME, issues, harness=f"claude-code {version}".strip(),
                   agent=agent_id if is_sub else "",
                   parent_run_id=_parent_run_id(path) if is_sub else "")
    compaction_run = is_sub and path.name.startswith("agent-acompact-")
    models: Counter[str] = Counter()
    for item in _order(_kept(recs, links)):
        if isinstance(item, _Group):
            _emit_response(b, item, compaction_run, models)
        else:
            _emit_user(b, item)
    b.model = models.most_common(1)[0][0] if models else ""
    return [b.build()]


def _rtype(raw: dict[str, Any]) -> str:
    """The coverage name of a record's type: ``type``, or ``system/<subtype>``."""
    kind = raw.get("type")
    kind = kind if isinstance(kind, str) else f"<{type(kind).__name__}>"
    sub = raw.get("subtype")
    return f"{kind}/{sub}" if kind == "system" and isinstance(sub, str) else kind


def _count_other(src: Source, raw: dict[str, Any]) -> None:
    """Count a record that is not a user/assistant message by its fate."""
    kind = _rtype(raw)
    if kind == "system/compact_boundary":
        src.coverage.modelled(kind)
    elif kind in NON_MESSAGE_TYPES or kind.startswith("system"):
        src.coverage.skipped(kind)
    else:
        src.coverage.unknown(kind)


def _record(no: int, raw: dict[str, Any]) -> _Rec:
    """Validate one user/assistant record into a ``_Rec`` (raises ``_Bad``)."""
    kind = raw["type"]
    msg = raw.get("message")
    if not isinstance(msg, dict):
        raise _Bad(f"{kind} record has no 'message' object")
    uuid = raw.get("uuid") if isinstance(raw.get("uuid"), str) else ""
    ts = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else ""
    content = msg.get("content")
    if kind == "user":
        summary = raw.get("isCompactSummary") is True
        if isinstance(content, str):
            blocks: list[Block] = [("summary" if summary else "text", content)]
        elif summary and isinstance(content, list):
            blocks = [("summary", as_text(content))]
        else:
            blocks = _blocks(content, user=True)
        return _Rec(no, "user", uuid, ts, blocks)
    usage = msg.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise _Bad(f"message.usage is {type(usage).__name__}, expected an object")
    mid = msg.get("id") if isinstance(msg.get("id"), str) and msg.get("id") else f"line-{no}"
    model = msg.get("model") if isinstance(msg.get("model"), str) else ""
    return _Rec(no, "assistant", uuid, ts, _blocks(content, user=False), mid, model, usage)


def _blocks(content: Any, *, user: bool) -> list[Block]:
    """Normalise a content list: ("text"|"reasoning"|"image", text), ("call", id, name, args),
    ("result", id, text, is_error)."""
    if isinstance(content, str):
        return [("text", content)]
    if not isinstance(content, list):
        raise _Bad(f"message.content is {type(content).__name__}, expected a string or a list")
    out: list[Block] = []
    for i, blk in enumerate(content):
        if not isinstance(blk, dict):
            raise _Bad(f"content block {i} is {type(blk).__name__}, expected an object")
        t = blk.get("type")
        if t == "text":
            out.append(("text", _str(blk, "text", i)))
        elif t == "image":
            out.append(("image", "[image]"))
        elif t == "thinking":
            out.append(("reasoning", _str(blk, "thinking", i)))
        elif t == "redacted_thinking":
            out.append(("reasoning", ""))
        elif t in ("tool_use", "server_tool_use") and not user:
            args = blk.get("input", {})
            if args is not None and not isinstance(args, (dict, str)):
                raise _Bad(f"content block {i}: tool_use input is {type(args).__name__}")
            out.append(("call", _str(blk, "id", i), _str(blk, "name", i), args or {}))
        elif t == "tool_result" and user:
            out.append(("result", _str(blk, "tool_use_id", i), as_text(blk.get("content")),
                        blk.get("is_error") is True))
        else:
            out.append(("text", json.dumps(blk, ensure_ascii=False)))
    return out


def _str(blk: dict[str, Any], key: str, i: int) -> str:
    value = blk.get(key)
    if not isinstance(value, str):
        raise _Bad(f"content block {i} ({blk.get('type')}): {key!r} is "
                   f"{type(value).__name__}, expected a string")
    return value


def _kept(recs: list[_Rec], links: dict[str, str | None]) -> list[_Rec]:
    """The records on the active conversation path, in file order (all of them if no path)."""
    if not recs[-1].uuid:
        return recs
    path: set[str] = set()
    node: str | None = recs[-1].uuid
    while node:
        if node in path or node not in links:
            return recs  # cycle or a parent outside the file: use file order
        path.add(node)
        node = links[node]
    groups = {r.msg_id for r in recs if r.role == "assistant" and r.uuid in path}
    calls = {b[1] for r in recs if r.msg_id in groups for b in r.blocks if b[0] == "call"}
    return [r for r in recs if r.uuid in path or r.msg_id in groups
            or any(b[0] == "result" and b[1] in calls for b in r.blocks)]


def _order(recs: list[_Rec]) -> list[_Rec | _Group]:
    """User records and assistant responses (grouped by ``message.id``) in file order."""
    items: list[_Rec | _Group] = []
    groups: dict[str, _Group] = {}
    for r in recs:
        if r.role != "assistant":
            items.append(r)
            continue
        if r.msg_id not in groups:
            groups[r.msg_id] = _Group()
            items.append(groups[r.msg_id])
        groups[r.msg_id].recs.append(r)
    return items


def _emit_user(b: RunBuilder, r: _Rec) -> None:
    if not r.blocks:
        return
    b.message("tool" if any(x[0] == "result" for x in r.blocks) else "user", ts=r.ts)
    for x in r.blocks:
        if x[0] == "result":
            b.tool_result(x[1], x[2], is_error=x[3], line=r.line)
        elif x[0] == "summary":
            b.summary(x[1], harness=True)
        else:
            b.text(x[1], kind=x[0])


def _emit_response(b: RunBuilder, g: _Group, compaction: bool, models: Counter[str]) -> None:
    first = g.recs[0]
    b.message("assistant", ts=first.ts)
    seen: set[str] = set()
    for r in g.recs:
        for x in r.blocks:
            if x[0] == "call":
                if x[1] in seen:
                    continue
                seen.add(x[1])
                b.tool_call(x[1], x[2], x[3])
            elif compaction and x[0] == "text":
                b.summary(x[1], harness=True)
            else:
                b.text(x[1], kind=x[0])
    model = next((r.model for r in reversed(g.recs) if r.model), "")
    if model == "<synthetic>":
        return  # written by the harness, not a model call
    if model:
        models[model] += 1
    u = next((r.usage for r in reversed(g.recs) if r.usage is not None), None)
    if u is None:
        b.request(model=model, ts=first.ts)
        return
    write, read = _int(u, "cache_creation_input_tokens"), _int(u, "cache_read_input_tokens")
    uncached = _int(u, "input_tokens")
    full = None if uncached is None and read is None and write is None \
        else (uncached or 0) + (read or 0) + (write or 0)
    b.request(input_tokens=full, cache_read_tokens=read, cache_write_tokens=write,
              output_tokens=_int(u, "output_tokens"), model=model, ts=first.ts)


def _int(usage: dict[str, Any], key: str) -> int | None:
    v = usage.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _parent_run_id(path: Path) -> str:
    """Run id of ``<session>.jsonl`` two folders above ``<session>/subagents/agent-*.jsonl``."""
    parent = path.parent.parent.parent / f"{path.parent.parent.name}.jsonl"
    try:
        st = parent.stat()
        return _run_id_of(str(parent), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return ""


@functools.lru_cache(maxsize=64)
def _run_id_of(path: str, inode: int, size: int, mtime_ns: int) -> str:
    """Run id of the session file at ``path`` (hashed once for all its subagents, again
    whenever the file changes: the file's identity, size and time are part of the key)."""
    with open(path, "rb") as f:
        return run_id_for(hashlib.file_digest(f, "sha256").hexdigest(), 0)
