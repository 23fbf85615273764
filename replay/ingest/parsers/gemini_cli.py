"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``, older ``.json``).

Current files are JSON Lines: a metadata record (``sessionId``, ``projectHash``,
``startTime``, ``kind``), then message records ``{id, timestamp, type, content, …}``, appended
as they happen.  A message is appended again, whole, each time it changes (its tool calls
finish, its token counts arrive): the last copy wins and keeps the first copy's place.
``{"$rewindTo": id}`` drops that message and everything after it (a rewind);
``{"$set": {…}}`` updates metadata, and ``$set.messages`` replaces the whole history (a
checkpoint: after a chat compression, or when tool outputs are masked).  Older files
(``session-*.json``) are one object with the metadata and ``messages[]``.

Messy files (``replay.ingest.parsers.gemini_cli_history``; each problem said once per file,
with its records): a metadata record naming another ``sessionId`` begins a session of its own
(files written one after another: a run each; a resumed session names its own id again); a
message with no string ``id`` is read in file order, a copy with the same type and timestamp
taken as that message updated; ``toolCalls`` an object is one call; a field of another wrong
type (``toolCalls``, ``thoughts``, ``tokens``, ``$set``, ``$set.messages``) is ignored; a
``$rewindTo`` naming no message of the history rewinds nothing.

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
``input_tokens``; ``cached`` → cache reads; ``thoughts`` → reasoning tokens; ``output`` plus
``thoughts`` → output tokens (Gemini's ``candidatesTokenCount`` leaves the thoughts out:
``total`` = input + output + thoughts + tool; they are billed as output, and Claude's and
OpenAI's output counts include their thinking).  ``tokens.tool`` (server-side tool prompts) is not in ``input`` and not added.

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

Coverage types (each record counted once): ``metadata``, ``message/<type>``, ``$rewindTo``,
``$rewindTo (names no message of the history)``, ``$set/messages (compaction)``,
``$set/messages (update)``, ``$set/messages (not a list)``, ``$set/<key>+<key>…`` (a ``$set``
without messages, by its keys), ``$set (empty)``, ``message (rewound: in the abandoned branch's
run)`` and ``message (rewound: in no run)`` (a rewound message's records), ``<kind> (repeat)``
(a record the same as the one before it, or a message the same as its copy before: written
twice, skipped), ``record (unrecognised)``.

The history: ``gemini_cli_history``; the run made of it: ``gemini_cli_emit``.

Checked against: the recording code of google-gemini/gemini-cli at 5411f11 (2026-08,
``chatRecordingService.ts`` / ``chatRecordingTypes.ts``) and the single-JSON shape of
0.1x-0.2x; no public recorded session was found, so the fixtures are hand-made to that code.
"""

from __future__ import annotations

import re
from typing import Any

from replay.ingest.input_files import document_too_big
from replay.ingest.parsers.gemini_cli_emit import NAME, emit
from replay.ingest.parsers.gemini_cli_history import History, Notes, is_message
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.jsonl import MAX_LINE_BYTES, array_items, iter_records
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source

__all__ = ["NAME", "evidence", "parse", "sniff"]

_PROJECT = re.compile(rb'"projectHash"\s*:')
_SESSION = re.compile(rb'"sessionId"\s*:')
_GEMINI_TYPE = re.compile(rb'"type"\s*:\s*"gemini"')


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
    """The runs of a Gemini CLI session file (one per session it holds, each followed by its
    rewinds' abandoned branches); problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per line for JSON Lines, else line 0).
    """
    records = _records(src, issues)
    if records is None:
        return []
    notes = Notes()
    sessions = [History(src, issues, notes)]
    before: dict[str, Any] | None = None
    for no, rec in records:
        if rec == before:  # a line written twice
            sessions[-1].repeat(rec, no)
            continue
        before = rec
        if _begins_session(sessions[-1], rec):
            notes.note(no, "metadata record of another session (its sessionId differs): the "
                           "file holds sessions written one after another, each read as a "
                           "run of its own")
            sessions.append(History(src, issues, notes))
        sessions[-1].record(rec, no)
    runs: list[RunDraft] = []
    for h in sessions:
        h.close()
        base = len(runs)  # (the session's run, then its branches)
        main = emit(src, issues, h, index=base)
        runs += [main] + [
            emit(src, issues, History(src, issues, epochs=[(live, {})], meta=h.meta,
                                      lines=h.lines),
                 index=base + k, branch=(main.run["run_id"], dropped), branch_no=k)
            for k, (live, dropped) in enumerate(h.branches, 1)]
    issues.extend(notes.said(src.path))
    return runs


def _begins_session(h: History, rec: dict[str, Any]) -> bool:
    """Whether ``rec`` is the metadata record of a session other than the one ``h`` reads (a
    resumed session's metadata names its own id again)."""
    sid, current = rec.get("sessionId"), h.meta.get("sessionId")
    return isinstance(sid, str) and isinstance(current, str) and sid != current \
        and "$set" not in rec and "$rewindTo" not in rec and not is_message(rec)


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


