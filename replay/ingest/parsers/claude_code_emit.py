"""Claude Code records into a run's rows: messages, requests and context events.

``order`` groups the records of one streamed response (one record per content block, sharing
``message.id``); ``emit`` writes a user record, an attachment or a boundary, ``emit_response``
a response and its request.  A compaction boundary is a ``compaction`` event whose summary is
the ``isCompactSummary`` record after it and whose ``preserved_msgs`` are the messages of the
records a partial compaction re-attached after the summary (``State.preserved``: the segment
the path found, else ``preservedMessages``).

Not here: which records, in which order (``replay.ingest.parsers.claude_code_path``), the runs
of a file (``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.claude_code_persisted import PERSISTED_TAG, persisted_output
from replay.ingest.parsers.claude_code_records import AGAIN, Rec, block_list
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.source import Issue


@dataclass(slots=True)
class Group:
    """All records of one streamed assistant response."""

    recs: list[Rec] = field(default_factory=list)



Shared = dict[tuple[int, int], str]
"""Texts made from records by (line, block; -1: the text read again): ``State.shared``."""


@dataclass(slots=True)
class State:
    """What emission remembers: where each preserved record went, the boundary awaiting its
    summary."""

    preserved: dict[str, list[str]] = field(default_factory=dict)
    """Boundary uuid -> the records its preserved segment re-attached (head first), as the
    path found them (``claude_code_path.Path.preserved``)."""
    wanted: frozenset[str] = frozenset()
    """The uuids a boundary may name as preserved (``wanted``): only theirs go in ``msg_of``."""
    msg_of: dict[str, int] = field(default_factory=dict)
    """Record uuid -> message index, for the uuids in ``wanted`` (not every record's: a
    transcript has hundreds of thousands)."""
    pending: int | None = None
    """Event index of a compaction boundary not yet followed by its summary."""
    later: tuple[array[int], array[int]] = field(
        default_factory=lambda: (array("q"), array("q")))
    """The blocks written with a stand-in for a record's text read again (``AGAIN``), and
    their records' lines: ``fill`` puts the texts in once every record is emitted."""
    shared: Shared | None = None
    """The texts a record's blocks are made into that are not strings of the record itself (a
    call's arguments as JSON, a text read again) by (line, block; -1: the text read again),
    when several runs emit the same records (a session with abandoned branches): the first run
    makes each, the others take that string, so a text the runs share is held once, not once
    a run."""


def wanted(recs: list[Rec], preserved: dict[str, list[str]]) -> frozenset[str]:
    """The uuids of records a boundary among ``recs`` names as preserved: those of the
    segments ``preserved`` holds and those of each boundary's own ``preserved`` list."""
    out = {u for uuids in preserved.values() for u in uuids}
    for r in recs:
        if r.role == "compact" and r.meta:
            out.update(r.meta.get("preserved", ()))
    out.discard("")  # (a record without a uuid is named by none)
    return frozenset(out)


_LINE = attrgetter("line")


def order(recs: list[Rec]) -> list[Rec | Group]:
    """Records with assistant responses grouped by ``message.id`` (at their first record)."""
    items: list[Rec | Group] = []
    groups: dict[str, Group] = {}
    for r in recs:
        if r.role != "assistant":
            items.append(r)
            continue
        if r.msg_id not in groups:
            groups[r.msg_id] = Group()
            items.append(groups[r.msg_id])
        groups[r.msg_id].recs.append(r)
    for g in groups.values():
        g.recs.sort(key=_LINE)
    return items


def emit(b: RunBuilder, r: Rec, st: State) -> None:
    """A user record, an attachment or a boundary."""
    if r.role in ("compact", "micro"):
        m, b.line = r.meta or {}, r.line
        if r.role == "micro":
            b.event("microcompaction", trigger=m["trigger"], pre_tokens=m["pre"],
                    tokens_saved=m["saved"], call_ids=m["cleared"])
            return
        st.pending = b.n_events
        b.event("compaction", trigger=m["trigger"], pre_tokens=m["pre"], post_tokens=m["post"],
                preserved_msgs=sorted({st.msg_of[u] for u in st.preserved.get(
                    r.uuid, m.get("preserved", ())) if u in st.msg_of}),
                harness_compaction=True)
        return
    blocks = r.blocks
    if type(blocks) is str:  # (a user record or an attachment of one text: most records)
        msg = b.message("user", ts=r.ts)
        if r.uuid in st.wanted:
            st.msg_of[r.uuid] = msg
        b.text(blocks)
        return
    if type(blocks) is not tuple:  # (``AGAIN``: the one text read again)
        blocks = block_list(r)
    if not blocks:
        return
    role = "user"
    for x in blocks:  # (a loop, not any() over a generator: one a record)
        if x[0] == "result":
            role = "tool"
            break
    msg = b.message(role, ts=r.ts)
    if r.uuid in st.wanted:
        st.msg_of[r.uuid] = msg
    for x in blocks:
        if x[0] == "result":
            b.tool_result(x[1], x[2], is_error=x[3], line=r.line)
            if PERSISTED_TAG in x[2] and (persisted := persisted_output(x[2])) is not None:
                b.event("persisted_output", msg=msg, call_ids=[x[1]], full_chars=persisted[1])
        elif x[0] == "summary":
            if st.pending is not None:
                b.set_event(st.pending, summary_msg=msg)
                b.summary(x[1], harness=True, counted=False)
                st.pending = None
            else:
                b.summary(x[1], harness=True)
        elif x[1] is AGAIN:  # (its text put in by ``fill``)
            st.later[0].append(b.n_blocks)
            st.later[1].append(r.line)
            b.text("", kind=x[0])
        else:
            b.text(x[1], kind=x[0])


def fill(b: RunBuilder, st: State, text_of: Callable[[int], str] | None) -> None:
    """Put in the texts ``emit`` left to read again (``State.later``), each read by
    ``text_of(line)``: once the run's records are let go (a consumed session), the texts are
    not made beside them."""
    blocks, lines = st.later
    if blocks and text_of is None:
        raise ValueError(f"line {lines[0]}: a text to read again, and no file to read it from")
    shared = st.shared
    for block, line in zip(blocks, lines):
        if shared is None:
            b.set_text(block, text_of(line))  # type: ignore[misc]
            continue
        text = shared.get((line, -1))
        if text is None:
            text = shared[line, -1] = text_of(line)  # type: ignore[misc]
        b.set_text(block, text)


def _call_text(shared: Shared | None, line: int, block: Any, args: Any) -> str | None:
    """The text of the call ``args`` of block ``block`` of the record of ``line`` as the runs
    share it (``State.shared``; None: the builder makes it, as for a command given as a
    string)."""
    if shared is None or type(args) is str:
        return None
    text = shared.get((line, block))
    if text is None:
        text = shared[line, block] = json_text(args)
    return text


def emit_response(b: RunBuilder, g: Group, models: Counter[str], st: State, *,
                   copy: bool = False) -> None:
    """A response's message, and its request unless ``copy`` (a forked session's copy of its
    parent's response: context here, a model call of the parent)."""
    first = g.recs[0]
    msg = b.message("assistant", ts=first.ts)
    seen: set[str] = set()
    for r in g.recs:
        if r.uuid in st.wanted:
            st.msg_of[r.uuid] = msg
        for x in r.blocks:
            if x[0] == "call":
                call_id = x[1]
                if not call_id:
                    call_id = f"gen-{r.line}-{x[4]}"
                    b.issues.append(Issue(b.source.path, r.line, f"tool_use block {x[4]} "
                                          f"({x[2]}) has no id (kept as {call_id!r})"))
                if call_id in seen:
                    continue
                seen.add(call_id)
                b.tool_call(call_id, x[2], x[3], text=None if st.shared is None else
                            _call_text(st.shared, r.line, x[4], x[3]))
            else:
                b.text(x[1], kind=x[0])
    model = miss = edits = ""
    u = None
    for r in reversed(g.recs):  # each from the group's last record that has it
        model = model or r.model
        miss = miss or r.miss
        edits = edits or r.edits
        if u is None:
            u, b.line = r.usage, r.line
    if model == "<synthetic>" or copy:
        return  # written by the harness, or the parent's call: no model call of this run
    if model:
        models[model] += 1
    if u is None:
        b.request(model=model, ts=first.ts, cache_miss_reason=miss, applied_edits=edits)
        return
    keys = ("cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens")
    write, read, uncached = b.count(u.get(keys[0]), keys[0]), b.count(u.get(keys[1]), keys[1]), \
        b.count(u.get(keys[2]), keys[2])  # (in this order: a count's issue is said as it is read)
    full = None if uncached is None and read is None and write is None \
        or None in (write, read, uncached) and any(  # (a count left out is None: looked at then)
            u.get(k) is not None and n is None for k, n in zip(keys, (write, read, uncached))) \
        else (uncached or 0) + (read or 0) + (write or 0)  # unknown when a part is not a count
    if full is not None and keys[2] in u and u[keys[2]] is None:  # the uncached part written
        # as null (the API always counts it; a proxy's or a tool's rewrite): its size unknown,
        # not 0 (the cached parts alone are not the prompt)
        b.issues.append(Issue(b.source.path, b.line, "input_tokens is null (the request's "
                              "prompt size kept as unknown)"))
        full = None
    b.request(input_tokens=full, cache_read_tokens=read, cache_write_tokens=write,
              output_tokens=b.count(u.get("output_tokens"), "output_tokens"), model=model,
              ts=first.ts,
              cache_miss_reason=miss, applied_edits=edits)
