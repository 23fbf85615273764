"""Claude Code session transcripts (``~/.claude/projects/<slug>/<sessionId>.jsonl``).

Checked against Claude Code 2.0.x-2.1.39 sessions (the shared samples) and the record shapes of
2.1.x up to 2.1.280 (``pedropaulovc/claude-code-types``, public fixtures in
``tests/fixtures/claude_code``: ``attachment``, ``compact_boundary`` with ``preservedSegment``,
``microcompact_boundary``, ``<persisted-output>``, rewinds).  The 2.1.2xx partial compaction
(``preservedSegment`` / ``preservedMessages``, the next record under the segment's tail,
``postTokens``, ``messagesSummarized``) is checked on a real-shaped file only: the real 2.1.157
TraceLab session with the records a ``/compact`` writes inserted as the client writes them (no
public real transcript holding one was found); ``messagesSummarized`` is read by nothing.

One JSON record per line; one run per ``sessionId`` in the file (records without one belong to
the first; so do records whose ``sessionId`` is null or no string, said once a file, as a
``version``, an ``agentId`` or a title that is null or of another type is:
``run_text.odd_run_field``; a response's null or non-string ``message.model`` is said at its
record).  ``user`` records hold
prompts or content blocks (``text`` / ``image`` / ``tool_result``); ``assistant`` records are
Anthropic API responses *streamed one content block per record*: records sharing ``message.id``
are one response (blocks concatenated, usage, ``diagnostics.cache_miss_reason`` and
``context_management.applied_edits`` from the group's last record that has them).
``attachment`` records are context the harness added (skill and
deferred-tool listings, hook context, MCP instructions, queued prompts, files): a user message
where the chain has them.  Which records the model saw, in which order: see
``replay.ingest.parsers.claude_code_path`` (rewinds, compaction boundaries, preserved segments,
reverse order).  The branches a rewind abandoned were model calls that were paid for: each is a
run of its own after the session's run (agent ``abandoned-<k>``, linked to it like a fork;
``replay.ingest.parsers.claude_code_branches``), its records counted as ``<type> (abandoned
branch: a run of its own)``.

A ``system/compact_boundary`` is a compaction (a ``ContextEvent`` with ``trigger``,
``preTokens``, ``postTokens``, the preserved records, and the ``isCompactSummary`` user record
after it as its summary; counted even when no summary follows).  A partial compaction's
preserved segment (a manual ``/compact`` of 2.1.2xx keeps one) is relinked as the client
relinks it, so the compaction is on the path; its records stay where they were and are the
event's ``preserved_msgs``, which a replay re-attaches after the summary
(``replay.engine.prepared``).  Records written by the emission: ``claude_code_emit``.  A
``system/microcompact_boundary`` clears ``compactedToolIds`` (the model saw
``[Old tool result content cleared]`` from then on; the rows keep the full text).  A tool
result holding ``<persisted-output>`` is the preview the model saw (its declared full size is
recorded).  Subagent files (``<session>/subagents/agent-<id>.jsonl``) are their own run linked
to the session's run; an ``agent-acompact-*`` file is the compaction request itself (its answer
is a plain response there: the session's own boundary counts the compaction once).  Records
that copy another session of the same folder (a resumed or forked session: their
``sessionId`` names a file beside this one) are left to that file, so each response counts
once; a forked session's copies of its parent's records (``forkedFrom``) are its context, but
their responses are the parent's model calls (no request here), and the fork is linked to the
parent's run when that file is beside it.  A ``tool_use`` without an ``id`` gets ``gen-<line>-<block>`` and an issue.

A record whose ``uuid`` an earlier record of the file has is a repeat (Claude Code re-appends
older rows after a second ``/compact`` in one process): the first copy is kept, the repeats are
counted as ``<type> (duplicate uuid)`` and named in one issue.  Assistant records without
``message.id``: ``claude_code_noid`` (which of them are one response).

Every record type is counted in ``src.coverage``: user/assistant/attachment/boundaries
modelled (or skipped when off the path), the other known types (``NON_MESSAGE_TYPES``, other
``system`` subtypes) skipped, anything else unknown.  ``<synthetic>`` assistant records
(written by the harness) get no request.

Not here: making a session's runs of its records (``claude_code_runs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from msgspec import UNSET

from replay.ingest.parsers.claude_code_content import Bad
from replay.ingest.parsers.claude_code_ends import PASS as _PASS
from replay.ingest.parsers.claude_code_ends import TITLE_KEYS as _TITLE_KEYS
from replay.ingest.parsers.claude_code_ends import session_ends
from replay.ingest.parsers.claude_code_file import (
    companion,  # noqa: F401 - the parser interface: NAME, sniff, evidence, parse, and these
    copied,
    evidence,  # noqa: F401
    metadata_only,  # noqa: F401
    sniff,  # noqa: F401
)
from replay.ingest.parsers.claude_code_node import SIDE_TIE, tie
from replay.ingest.parsers.claude_code_noid import NoIds
from replay.ingest.parsers.claude_code_records import (
    AGAIN,
    NON_MESSAGE_TYPES,
    Line,
    Mark,
    Rec,
    count_other,
    decode,
    decode_lines,
    line_of,
    record,
    rtype,
    text_again,
)
from replay.ingest.parsers.claude_code_runs import (
    NAME,  # noqa: F401 - the parser interface
    session_runs,
)
from replay.ingest.parsers.claude_code_session import Session, session
from replay.ingest.parsers.coverage import LINE_NOT_READ
from replay.ingest.parsers.jsonl import iter_typed
from replay.ingest.parsers.jsonl_reread import STREAM_MIN_BYTES, LineIndex
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import odd_run_field
from replay.ingest.parsers.source import Issue, Source

_MESSAGES = {"user": "user", "assistant": "assistant"}
"""The record types whose coverage type is their type (``rtype``; the one string of each)."""
_OWN = frozenset(("user", "assistant", "system")) | NON_MESSAGE_TYPES
"""Record types Claude Code writes: the first of them names the file's own session (a line of
another type — a header another tool put first, hive-mind's ``hive-mind-meta`` — does not, or
its ``sessionId`` would make every record of the file a copy from its parent's file)."""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """Parse one transcript into one run per session; bad records become issues.

    Args:
        src: the transcript file.
        issues: where problems are reported (``path:line: reason``).
    """
    return [draft for _, draft in iter_runs(src, issues)]


def iter_runs(src: Source, issues: list[Issue]) -> Iterator[tuple[int | None, RunDraft]]:
    """``parse``'s runs one at a time, each built when the one before was taken (a caller that
    tokenises and writes each before asking for the next holds one run's rows, not the
    file's), with the session whose runs share text objects (its abandoned branches: each
    repeats the prefix it shares) as a number, None for a run that shares none; the issues
    and ``src.coverage`` are complete once the last is taken."""
    path = Path(src.path)
    sessions: dict[str, Session] = {}
    seen_uuids: dict[str, str] = {}  # each uuid once: a record's parent is the earlier
    # record's own string, not a copy per record (a transcript of small records holds many)
    elsewhere: dict[str, bool] = {}
    first = ""
    passed: dict[str, int] = {}  # records of the plain non-message types, counted at the end
    progress = 0  # (``progress`` records: counted apart)
    duplicates: list[int] = []  # lines of records whose uuid an earlier record has
    noids = NoIds()  # assistant records without message.id: which are one response
    lines = LineIndex()  # a big file's one-text records: their texts read again when emitted
    ends = session_ends(src.data) if src.on_disk and len(src.data) >= STREAM_MIN_BYTES else None
    made: list[Issue] = []  # the runs' issues, after the reading's (as when made at the end)
    unread: list[str] = []  # a record's values read as empty where text belongs (``record``)
    done: set[str] = set()  # the sessions whose runs are made
    odd: set[str] = set()  # run-level fields said to be of the wrong type (once a file)
    again = lambda no: text_again(no, lines.read(no))
    n_runs = group = 0
    wait = 0 if ends is not None else 1 << 62  # (the line the first session left ends at)
    at_sid, at = None, Session()  # the session of the line before (most lines are its)
    last: str | None = None  # the uuid of the record before (most records' parent)
    known: str | None = None  # (``last`` as it was before this line's record)
    for no, raw in iter_typed(src, issues, decode, line_of, lines=decode_lines, stream=True,
                              index=lines):
        if no >= wait and ends is not None:
            while sessions and first and no >= ends.ready(head := next(iter(sessions)), first):
                group += 1  # (a session read to its end: its runs made now, its records gone)
                done.add(head)
                at_sid = None
                for run in session_runs(src, made, sessions.pop(head), n_runs, group, path,
                                         again):
                    n_runs += 1
                    yield run
            wait = ends.ready(next(iter(sessions)), first) if sessions and first else 0
        kind = raw.type
        if kind == "progress" or type(kind) is str and kind in _PASS:  # not context; a
            # chain link with a uuid (``progress``: most lines, its new string not hashed)
            uuid = raw.uuid
            if type(uuid) is str and uuid in seen_uuids:
                duplicates.append(no)
                src.coverage.skipped(f"{kind} (duplicate uuid)")
                continue
            if kind == "progress":
                progress += 1
            else:
                passed[kind] = passed.get(kind, 0) + 1
                if kind in _TITLE_KEYS:
                    title = getattr(raw, _TITLE_KEYS[kind])
                    if isinstance(title, str):
                        sid = raw.sessionId
                        if type(sid) is not str and sid is not UNSET:
                            odd_run_field("sessionId", sid, src.path, no, issues, odd)
                        session(sessions, sid if isinstance(sid, str) and sid else first,
                                done).titles[kind] = title
                    elif title is not UNSET:
                        odd_run_field(_TITLE_KEYS[kind], title, src.path, no, issues, odd)
            if type(uuid) is str and uuid:
                seen_uuids[uuid] = uuid
                known = last  # (two statements: mypyc unboxes ``last, known = uuid, last`` wrong)
                last = uuid
                sid = raw.sessionId
                if type(sid) is not str:  # (a decoded value's class: ``isinstance``
                    # without its call)
                    if sid is not UNSET:  # (null or another type: joins the first, said)
                        odd_run_field("sessionId", sid, src.path, no, issues, odd)
                    sid = first
                elif not sid:
                    sid = first
                first = first or sid
                if sid == first or not copied(path, sid, elsewhere):
                    if sid != at_sid:  # (a string compared: not hashed, as a lookup does)
                        at_sid, at = sid, sessions.get(sid) or session(sessions, sid, done)
                    parent = raw.parentUuid
                    at.links[uuid] = (known if parent == known else seen_uuids.get(
                        parent, parent)) if type(parent) is str else None
            continue
        sid = raw.sessionId
        if type(sid) is not str:
            if sid is not UNSET:  # (null or another type: the record joins the first
                # session, as one without a sessionId does; said once a file)
                odd_run_field("sessionId", sid, src.path, no, issues, odd)
            sid = first
        elif not sid:
            sid = first
        if not first and type(kind) is str and kind in _OWN:
            first = sid
        uuid = raw.uuid
        uuid = uuid if type(uuid) is str else ""
        kind = _MESSAGES.get(kind) or rtype(raw) if type(kind) is str else rtype(raw)
        if sid != first and copied(path, sid, elsewhere):
            src.coverage.skipped(f"{kind} (copy from {sid[:8]}.jsonl)")
            continue
        if uuid:
            if uuid in seen_uuids:  # a row appended again (a second /compact in one process
                # re-appends older rows: claude-code#92089): the first copy is the record
                duplicates.append(no)
                src.coverage.skipped(f"{kind} (duplicate uuid)")
                continue
            seen_uuids[uuid] = uuid
            known = last  # (two statements: mypyc unboxes ``last, known = uuid, last`` wrong)
            last = uuid
        else:
            known = last
        parent = raw.parentUuid
        try:
            rec = record(no, raw, kind, uuid, (known if parent == known else seen_uuids.get(
                parent, parent)) or None if type(parent) is str else None, unread)  # (the
            # earlier record's string: most often the record before's, not looked up)
        except (Bad, KeyError, TypeError, ValueError, AttributeError) as exc:
            unread.clear()  # (the record is skipped: that is what is said)
            issues.append(Issue(src.path, no, f"{exc} (record skipped)"))
            src.coverage.skipped(kind)
            continue
        if unread:
            issues.extend(Issue(src.path, no, why) for why in unread)
            unread.clear()
        if sid != at_sid:
            at_sid, at = sid, sessions.get(sid) or session(sessions, sid, done)  # (a call only
            # for a new one)
        sess = at
        if rec is None:
            if uuid:  # still a link in the chain (a system record between two messages)
                parent = raw.parentUuid or raw.logicalParentUuid
                sess.links[uuid] = parent if isinstance(parent, str) else None
            count_other(src, kind)
            continue
        if raw.logicalParentUuid is not None or type(rec) is Mark:  # (a boundary's links)
            _link(rec, raw)
        elif raw.isSidechain is True:  # (else ``NO_TIE``, as ``record`` made it)
            rec.tie = SIDE_TIE if parent is not UNSET else tie(None, (), None, sidechain=True,
                                                               unlinked=True)
        elif parent is UNSET:
            rec.tie = tie(None, (), None, sidechain=False, unlinked=True)
        if rec.role == "assistant":
            mid = raw.message.id  # type: ignore[union-attr]  # (a response's: a ``Message``)
            if noids.open or not (type(mid) is str and mid):  # (an id: nothing to see)
                noids.see(no, rec, mid, sess.links)
        elif noids.open:
            noids.see(no, rec, None, sess.links)
        if lines.on and type(rec.blocks) is str:  # (not held until its run is built)
            lines.keep(no)
            rec.blocks = AGAIN
        sess.nodes.append(rec)
        if (ff := raw.forkedFrom) is not None and isinstance(ff, dict):
            sess.forked.add(no)
            if isinstance(parent_sid := ff.get("sessionId", UNSET), str):
                sess.fork_of = sess.fork_of or parent_sid
            elif parent_sid is not UNSET:  # (the fork then links to no parent: said)
                odd_run_field("forkedFrom.sessionId", parent_sid, src.path, no, issues, odd)
        if not sess.version and (version := raw.version) is not UNSET:
            if type(version) is str:
                sess.version = version
            else:
                odd_run_field("version", version, src.path, no, issues, odd)
        if (agent := raw.agentId) is not UNSET:
            if type(agent) is not str:  # (null or another type: a subagent's run then
                # named by its file or chain: said, as the other run-level fields are)
                odd_run_field("agentId", agent, src.path, no, issues, odd)
            elif agent:
                sess.agent_id = sess.agent_id or agent
                if raw.isSidechain is True:
                    sess.side_agents[no] = agent
    rec = None  # (nor the last record read: a record is let go once its run is emitted)
    src.release_data()  # every record read: the file's bytes are not held while runs are built
    del seen_uuids, elsewhere  # (nor every uuid of the file once more: ~55 bytes a record)
    if progress:
        passed["progress"] = progress
    for kind, n in passed.items():
        src.coverage.skipped(kind, n)
    if duplicates:
        issues.append(Issue(src.path, duplicates[0], f"{len(duplicates)} record(s) repeat the "
                            "uuid of an earlier record (first at this line; the first copy is "
                            "kept, the repeats skipped)"))
    noids.report(src, issues)
    while sessions:  # each session let go once its runs are made: not held to the file's end
        group += 1
        for run in session_runs(src, made, sessions.pop(next(iter(sessions))), n_runs, group,
                                 path, again if len(lines) else None):
            n_runs += 1
            yield run
    issues += made
    if not n_runs:
        cov = {t: f for t, f in src.coverage.by_type().items() if t != LINE_NOT_READ}
        if cov and all(set(f) == {"skipped"} for f in cov.values()):  # (a broken line is an
            # issue of its own: the file then fails on it, see ``replay.ingest.parse_file``)
            src.coverage.no_conversation = "only " + ", ".join(
                f"{t} x{f['skipped']}" for t, f in sorted(cov.items())) + " records"
        else:
            issues.append(Issue(src.path, 0, "no user or assistant records"))


def _link(rec: Rec, raw: Line) -> None:
    """Set ``rec``'s rarer links (its ``Node.tie``) from its record ``raw``: a boundary's, or
    a record's with a ``logicalParentUuid`` (``iter_runs`` sets any other's)."""
    logical = raw.logicalParentUuid
    logical = logical if isinstance(logical, str) and logical else None
    meta = rec.meta if rec.role in ("compact", "micro") else None
    rec.tie = tie(logical, tuple(meta.get("preserved", ())) if meta else (),
                  meta.get("segment") if meta else None, sidechain=raw.isSidechain is True,
                  unlinked=raw.parentUuid is UNSET)
