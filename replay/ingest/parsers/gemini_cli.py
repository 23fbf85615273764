"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``, older ``.json``).

Current files are JSON Lines: a metadata record (``sessionId``, ``projectHash``,
``startTime``, ``kind``), then message records ``{id, timestamp, type, content, …}``, appended
as they happen.  A message is appended again, whole, each time it changes (its tool calls
finish, its token counts arrive): the last copy wins and keeps the first copy's place.
``{"$rewindTo": id}`` drops that message and everything after it (a rewind);
``{"$set": {…}}`` updates metadata, and ``$set.messages`` replaces the whole history (a
checkpoint: after a chat compression, or when tool outputs are masked).  Older files
(``session-*.json``) are one object with the metadata and ``messages[]``.

A subagent's recording (``kind: subagent``, in ``chats/<parent session id>/``) is a run of
its own whose ``agent`` is its session id (its parent is only named by the folder).

Message types: ``user`` (content: a string or Gemini parts), ``gemini`` (``content``,
``thoughts[]{subject, description}``, ``toolCalls[]{id, name, args, result, status}``,
``tokens{input, output, cached, thoughts, tool, total}``, ``model``), and ``info`` /
``error`` / ``warning`` (UI notes, never sent to the model: skipped).

Emitted, in order: user → a user message; gemini → an assistant message (thoughts as
reasoning blocks, text, one ``tool_call`` per tool call) and one request, then a ``tool``
message with the results recorded in ``toolCalls[].result``.  Newer versions also record
each tool response as a ``user`` message of ``functionResponse`` parts: those become the
tool message instead (a result is never counted twice).  A ``gemini`` message with neither
``model`` nor ``tokens`` is synthetic (the harness wrote it, e.g. "Binary content
received"): context, but no request.

Tokens: ``tokens.input`` is Gemini's ``promptTokenCount``, cached content included, so it is
``input_tokens``; ``cached`` → cache reads; ``thoughts`` → reasoning tokens; ``output`` →
output tokens.  ``tokens.tool`` (server-side tool prompts) is not in ``input`` and not added.

Compactions: a ``$set.messages`` checkpoint that drops messages of the current history is a
harness compaction (a ``compaction`` ContextEvent; the file records no trigger or sizes); the
messages it adds (Gemini CLI's ``<state_snapshot>`` summary turn and the model's
acknowledgement) become one summary block, and the messages it keeps are the event's
preserved messages (re-attached after the summary).  A checkpoint that drops nothing
(masking, synthetic turns) updates the messages it names.  The single-JSON files (before
the JSONL recorder of 2026-04) keep the whole history across a compression: nothing in them
marks it (only the next request's smaller ``tokens.input`` shows it).  Rewound messages are left out of
the run (the requests they made included); the branch a rewind abandoned was sent and paid
for, so it is a run of its own (agent ``abandoned-<k>``, linked to the session's run like a
fork): the history as it stood before the rewind, with requests only for the messages the
rewind dropped (counted as ``message (rewound: in the abandoned branch's run)``), for the
first ``builder.MAX_BRANCHES`` rewinds of a session (a later one's are ``message (rewound: in
no run)``, and an issue says so).

Coverage types: ``metadata``, ``message/<type>``, ``$rewindTo``, ``$set/messages
(compaction)``, ``$set/messages (update)``, ``$set/<key>``, ``message (rewound: in the abandoned
branch's run)``, ``message (rewound: in no run)``, ``record (unrecognised)``.

Checked against: the recording code of google-gemini/gemini-cli at 5411f11 (2026-08,
``chatRecordingService.ts`` / ``chatRecordingTypes.ts``) and the single-JSON shape of
0.1x-0.2x; no public recorded session was found, so the fixtures are hand-made to that code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.input_files import document_too_big
from replay.ingest.parsers.builder import MAX_BRANCHES, RunBuilder, RunDraft
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import (
    JSON_REFUSED,
    MAX_LINE_BYTES,
    array_items,
    iter_records,
    loads,
)
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.source import Issue, Source

NAME = "gemini_cli"

_PROJECT = re.compile(rb'"projectHash"\s*:')
_SESSION = re.compile(rb'"sessionId"\s*:')
_GEMINI_TYPE = re.compile(rb'"type"\s*:\s*"gemini"')
_SKIPPED_TYPES = ("info", "error", "warning")


def sniff(filename: str, head: bytes) -> bool:
    """True for a JSON head holding Gemini CLI's ``sessionId`` and ``projectHash``, or a
    ``gemini`` message (a session without its project's hash is one: chat reads no role).

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    text = head.lstrip()
    return text.startswith(b"{") and _SESSION.search(text) is not None \
        and (_PROJECT.search(text) is not None or _GEMINI_TYPE.search(text) is not None)


def evidence(filename: str, head: bytes) -> str:
    """What of Gemini CLI the head shows: its metadata keys or its ``gemini`` messages."""
    keys = [k for k, rx in (("projectHash", _PROJECT), ("sessionId", _SESSION)) if rx.search(head)]
    if len(keys) == 2:
        return "session metadata (sessionId, projectHash)"
    if _GEMINI_TYPE.search(head):
        return "messages of type 'gemini'" + (f" and {keys[0]}" if keys else "")
    return ""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from a Gemini CLI session file; problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per line for JSON Lines, else line 0).
    """
    records = _records(src, issues)
    if records is None:
        return []
    h = _History(src, issues)
    for no, rec in records:
        h.record(rec, no)
    h.close()
    main = _emit(src, issues, h)
    return [main] + [_emit(src, issues, _History(src, issues, epochs=[(live, [])], meta=h.meta),
                           index=k, branch=(main.run["run_id"], dropped))
                     for k, (live, dropped) in enumerate(h.branches, 1)]


def _records(src: Source, issues: list[Issue]) -> list[tuple[int, dict[str, Any]]] | None:
    """The file's records: one document (older ``.json``) or one per line."""
    doc = None
    if not document_too_big(len(src.data)):  # else: JSON Lines (each line bounded) or said below
        try:
            doc = loads(src.data)
        except JSON_REFUSED:
            pass
    if isinstance(doc, dict):
        return [(0, doc)]
    first = src.data.lstrip().split(b"\n", 1)[0]
    try:
        whole_line = len(first) <= MAX_LINE_BYTES and isinstance(loads(first), dict)
    except JSON_REFUSED:
        whole_line = False
    if whole_line:
        return list(iter_records(src, issues))
    if why := document_too_big(len(src.data)):
        issues.append(Issue(src.path, 0, why))
        return None
    found, stop = array_items(src, "messages")  # a damaged single-document file
    if not found:
        issues.append(Issue(src.path, 0, "not a Gemini CLI session: neither one JSON object "
                                         "nor JSON Lines"))
        return None
    issues.append(Issue(src.path, stop, f"damaged file: kept the {len(found)} readable "
                                        "messages"))
    return [(0, {"messages": [m for _, m in found]})]


@dataclass(slots=True)
class _History:
    """The session's history as the records build it: epochs split at compactions."""

    src: Source
    issues: list[Issue]
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    epochs: list[tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]] = \
        field(default_factory=list)
    """(the history before a compaction, the messages the compaction added)."""
    meta: dict[str, Any] = field(default_factory=dict)
    branches: list[tuple[dict[str, dict[str, Any]], set[str]]] = field(default_factory=list)
    """Each rewind's abandoned branch: the history it was made in, and the ids it dropped."""

    def record(self, rec: dict[str, Any], no: int = 0) -> None:
        """Take record ``rec`` (of line ``no``; 0: the whole document) into the history."""
        cov = self.src.coverage
        if "$rewindTo" in rec:
            target = rec["$rewindTo"]
            if not isinstance(target, str):
                cov.unknown("$rewindTo (not a message id)")
                return
            cov.modelled("$rewindTo")
            ids = list(self.live)
            drop = ids[ids.index(target):] if target in self.live else ids
            if drop and len(self.branches) < MAX_BRANCHES:  # the abandoned branch was sent
                self.branches.append((dict(self.live), set(drop)))  # and paid for: a run
                cov.modelled("message (rewound: in the abandoned branch's run)", len(drop))
            elif drop:  # (a copy of the history each: bounded as Claude Code's and Codex's)
                cov.skipped("message (rewound: in no run)", len(drop))
                self.issues.append(Issue(self.src.path, no, f"$rewindTo: the {len(drop)} message(s) "
                                         f"rewound are in no run (the session has more than "
                                         f"{MAX_BRANCHES} rewinds: {MAX_BRANCHES} are runs)"))
            for i in drop:
                del self.live[i]
        elif "$set" in rec:
            update = rec["$set"]
            if not isinstance(update, dict):
                cov.unknown("$set (not an object)")
                return
            for key in update:
                if key != "messages":
                    cov.skipped(f"$set/{key}")
            if isinstance(update.get("messages"), list):
                self.checkpoint(update["messages"])
            if isinstance(update.get("model"), str):
                self.meta.setdefault("model", update["model"])
        elif _is_message(rec):
            self.message(rec)
        elif isinstance(rec.get("sessionId"), str) or isinstance(rec.get("messages"), list):
            cov.skipped("metadata")
            self.meta.update({k: v for k, v in rec.items() if k != "messages"})
            messages = rec.get("messages")
            if messages is not None and not isinstance(messages, list):
                cov.unknown("messages (not a list)")
                self.issues.append(Issue(self.src.path, no, "'messages' is not a list but a "
                                         f"{type(messages).__name__}: no message read from it"))
                return
            for m in messages or []:
                if _is_message(m):
                    self.message(m)
                else:
                    cov.unknown("message (malformed)")
        else:
            cov.unknown("record (unrecognised)")

    def message(self, m: dict[str, Any]) -> None:
        t = m["type"]
        fate = "modelled" if t in ("user", "gemini") else \
            "skipped" if t in _SKIPPED_TYPES else "unknown"
        self.src.coverage.counts[(f"message/{t}", fate)] += 1
        if fate == "modelled":
            self.live[m["id"]] = m

    def checkpoint(self, messages: list[Any]) -> None:
        new = {m["id"]: m for m in messages if _is_message(m) and m["type"] in ("user", "gemini")}
        if any(i not in new for i in self.live):
            self.src.coverage.modelled("$set/messages (compaction)")
            self.epochs.append((self.live, [m for i, m in new.items() if i not in self.live]))
        else:
            self.src.coverage.modelled("$set/messages (update)")
        self.live = new

    def close(self) -> None:
        self.epochs.append((self.live, []))


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and isinstance(m.get("id"), str) and isinstance(m.get("type"), str)


def _emit(src: Source, issues: list[Issue], h: _History, *, index: int = 0,
          branch: tuple[str, set[str]] | None = None) -> RunDraft:
    """The run of ``h``; with ``branch`` (the main run's id, the ids the rewind dropped), the
    run of an abandoned branch: linked to the main run, requests only for its own messages
    (the others are the main run's: context here)."""
    model = next((m["model"] for live, _ in h.epochs for m in live.values()
                  if isinstance(m.get("model"), str) and m["model"]), "")
    kind = h.meta.get("kind")
    sub = kind == "subagent" and isinstance(h.meta.get("sessionId"), str)
    b = RunBuilder(src, index, NAME, issues, model=model,
                   harness="gemini-cli" + (f" ({kind})" if isinstance(kind, str) and kind else ""),
                   agent=f"abandoned-{index}" if branch else h.meta["sessionId"] if sub else "",
                   parent_run_id=branch[0] if branch else "")
    answered = {r["id"] for live, _ in h.epochs for m in live.values() if m["type"] == "user"
                for r in _responses(m.get("content"))}
    done: dict[str, list[int]] = {}
    """Message id -> the run's messages made from it."""
    for k, (live, added) in enumerate(h.epochs):
        for mid, m in live.items():
            if mid in done:
                continue
            done[mid] = []
            try:
                if m["type"] == "user":
                    done[mid] = _user(b, m)
                else:
                    done[mid] = _gemini(b, m, answered,
                                        request=branch is None or mid in branch[1])
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                if branch is None:  # (a branch's messages are counted in the main walk)
                    src.coverage.unknown(f"message/{m['type']} (malformed)")
                issues.append(Issue(src.path, 0, f"message {mid[:80]!r}: {exc} (kept in part)"))
        if added:
            kept = sorted(i for mid in h.epochs[k + 1][0] if mid in done for i in done[mid])
            event = b.n_events
            b.event("compaction", preserved_msgs=kept, harness_compaction=True)
            msg = b.message("user", ts=_str(added[0].get("timestamp")))
            b.set_event(event, summary_msg=msg)
            b.summary("\n\n".join(_parts_text(m.get("content")) for m in added), counted=False)
            done.update((m["id"], [msg]) for m in added)
    return b.build()


def _user(b: RunBuilder, m: dict[str, Any]) -> list[int]:
    """Emit a user message (and the tool results it carries); the message indices made."""
    made = []
    ts = _str(m.get("timestamp"))
    content = m.get("content")
    responses = _responses(content)
    rest = [p for p in content if not (isinstance(p, dict) and "functionResponse" in p)] \
        if isinstance(content, list) else content
    if responses:
        made.append(b.message("tool", ts=ts))
        for r in responses:
            b.tool_result(r["id"], _response_text(r), is_error=_is_error(r))
    if not responses or _parts_text(rest):
        made.append(b.message("user", ts=ts))
        b.text(_parts_text(rest))
    return made


def _gemini(b: RunBuilder, m: dict[str, Any], answered: set[str], *,
            request: bool = True) -> list[int]:
    """Emit a model message, its call and its results; the message indices made (with no
    request when ``request`` is False: another run counts it)."""
    ts = _str(m.get("timestamp"))
    msg = b.message("assistant", ts=ts)
    for t in _list(m.get("thoughts")):
        if isinstance(t, dict):
            b.text("\n".join(x for x in (_str(t.get("subject")), _str(t.get("description")))
                             if x), kind="reasoning")
    content = m.get("content")
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            if part:
                b.text(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            b.text(part["text"], kind="reasoning" if part.get("thought") else "text")
    calls = [tc for tc in _list(m.get("toolCalls")) if isinstance(tc, dict)]
    ids = []
    for k, tc in enumerate(calls):
        call_id = _str(tc.get("id")) or f"{m['id']}-{k}"
        args = tc.get("args")
        b.tool_call(call_id, _str(tc.get("name")) or "tool", args if args is not None else {})
        ids.append(call_id)
    tokens = m.get("tokens")
    if request and ("model" in m or isinstance(tokens, dict)):
        t = tokens if isinstance(tokens, dict) else {}
        b.request(output_msg=msg, input_tokens=b.count(t.get("input"), "tokens.input"),
                  cache_read_tokens=b.count(t.get("cached"), "tokens.cached"),
                  output_tokens=b.count(t.get("output"), "tokens.output"),
                  reasoning_tokens=b.count(t.get("thoughts"), "tokens.thoughts"),
                  model=_str(m.get("model")), ts=ts)
    results = [(cid, tc) for cid, tc in zip(ids, calls)
               if cid not in answered and tc.get("result") is not None]
    if not results:
        return [msg]
    made = [msg, b.message("tool", ts=ts)]
    for cid, tc in results:
        b.tool_result(cid, _parts_text(tc["result"], responses=True),
                      is_error=tc.get("status") == "error")
    return made


def _responses(content: Any) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of a user message that carry an id."""
    if not isinstance(content, list):
        return []
    out = []
    for p in content:
        r = p.get("functionResponse") if isinstance(p, dict) else None
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            out.append(r)
    return out


def _response_text(r: dict[str, Any]) -> str:
    resp = r.get("response")
    if isinstance(resp, dict):
        for key in ("output", "error", "content"):
            if isinstance(text := resp.get(key), str):
                return text
    return resp if isinstance(resp, str) else json_text(resp)


def _is_error(r: dict[str, Any]) -> bool:
    resp = r.get("response")
    return isinstance(resp, dict) and "error" in resp and "output" not in resp


def _parts_text(content: Any, *, responses: bool = False) -> str:
    """Text of Gemini parts (a string, a part, or a list of parts); inline data as ``[image]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str):
                out.append(p["text"])
            elif isinstance(p.get("functionResponse"), dict):
                if responses:
                    out.append(_response_text(p["functionResponse"]))
            elif "inlineData" in p or "fileData" in p:
                out.append("[image]")
    return "\n".join(out)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
