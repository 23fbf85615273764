"""Abandoned branches of a Claude Code transcript: what a rewind left behind, as runs.

A rewind (``/rewind``, editing an earlier prompt, a retry) starts a new branch of the record
tree from an earlier record; the conversation goes on along the newest branch (the path,
``replay.ingest.parsers.claude_code_path``).  The responses of an abandoned branch were still
model calls that were paid for, so each abandoned branch is a run of its own, linked to the
session's run like a fork: its context is the chain from the root to its last record; the
responses that chain shares with the session's run (or an earlier branch's) are context there,
not requests again.  A branch that holds no message of its own (the parallel tool results of
a response the path kept) is no run.

Not here: building the runs (``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.builder import MAX_BRANCHES
from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.claude_code_path import Path, Resolved
from replay.ingest.parsers.claude_code_records import Rec


@dataclass(frozen=True, slots=True)
class Branch:
    """One abandoned branch."""

    leaf: Node
    """Its last record."""
    shared: frozenset[int]
    """Lines of its chain's responses that another run counts as requests (context here)."""
    own: frozenset[int]
    """Lines only this branch's run holds."""


@dataclass(slots=True)
class Extras:
    """``kept_extra``'s sets for one session's paths, by leaf line (None: the main path), and
    where the session's responses and tool results are (made at the first branch's path:
    each branch's set is then found from its own responses, not from every record again)."""

    sets: dict[int | None, set[int]] = field(default_factory=dict)
    index: _Index | None = None


@dataclass(frozen=True, slots=True)
class _Index:
    """A session's records by response and by tool call."""

    responses: dict[Any, list[int]]
    """A response's id -> the lines of its records (one per content block)."""
    calls: dict[Any, list[Any]]
    """A response's id -> the ids of the tool calls its records make."""
    results: dict[Any, list[int]]
    """A tool call's id -> the lines of the records holding a result of it."""


def _index(recs: dict[int, Rec]) -> _Index:
    responses: dict[Any, list[int]] = {}
    calls: dict[Any, list[Any]] = {}
    results: dict[Any, list[int]] = {}
    for line, r in recs.items():
        blocks = r.blocks if type(r.blocks) is tuple else ()  # (a text: no call, no result)
        if r.role == "assistant":
            responses.setdefault(r.msg_id, []).append(line)
            calls.setdefault(r.msg_id, []).extend(x[1] for x in blocks if x[0] == "call")
        for x in blocks:
            if x[0] == "result":
                results.setdefault(x[1], []).append(line)
    return _Index(responses, calls, results)


def kept_extra(found: Path, recs: dict[int, Rec], memo: Extras | None = None,
               leaf: Node | None = None) -> set[int]:
    """Lines off ``found``'s path that its run keeps anyway: the rest of a response it holds
    (one record per content block) and the parallel tool results of its calls.  ``recs``: the
    records ``found`` was resolved over (each on its path, ``order``, or off it,
    ``off_path``); ``memo``: the sets found so far for the paths of ``recs``' session
    (``found`` is the path to ``leaf``, None: the main path), so a run's path and
    ``abandoned_branches``' are read once, and the session's index; read only but for what it
    adds.

    The main path's set is read from the records off it (a few, or none) and, when one is a
    response or holds a tool result, one pass over the session's responses (``_off_main``):
    most sessions have no other path, and an index of every record's blocks was then made for
    it alone.  A branch's path has most records off it: its set is read from the index, made
    once for the session's branches, by the branch's own responses."""
    key = None if leaf is None else leaf.line
    if memo is not None and (known := memo.sets.get(key)) is not None:
        return known
    if leaf is None:
        extra = _off_main(found.off_path, recs)
    else:
        index = memo.index if memo is not None and memo.index is not None else _index(recs)
        groups = {r.msg_id for line in found.order if (r := recs.get(line)) is not None
                  and r.role == "assistant"}
        off = found.off_path
        extra = {line for g in groups for line in index.responses.get(g, ()) if line in off}
        for g in groups:
            for call in index.calls.get(g, ()):
                extra.update(line for line in index.results.get(call, ()) if line in off)
        if memo is not None:
            memo.index = index
    if memo is not None:
        memo.sets[key] = extra
    return extra


def _off_main(off: set[int], recs: dict[int, Rec]) -> set[int]:
    """``kept_extra`` of a path with the records ``off`` off it (the others of ``recs`` on
    it), from those records: the responses among them that the path holds a record of, and
    those holding a result of a call of a response the path holds a record of."""
    extra: set[int] = set()
    parts: dict[Any, list[int]] = {}  # a response off the path: its id -> its records' lines
    answers: list[tuple[int, list[Any]]] = []  # a record off the path: the calls it answers
    for line in off:
        r = recs.get(line)
        if r is None:
            continue
        if r.role == "assistant":
            parts.setdefault(r.msg_id, []).append(line)
        if type(r.blocks) is tuple and (
                ids := [x[1] for x in r.blocks if x[0] == "result"]):
            answers.append((line, ids))
    if not parts and not answers:
        return extra
    asked = {i for _, ids in answers for i in ids}
    held: set[Any] = set()  # the ids of the responses the path holds a record of
    makers: dict[Any, list[Any]] = {}  # a call answered off the path -> its responses' ids
    for line, r in recs.items():
        if r.role != "assistant":
            continue
        if line not in off:
            held.add(r.msg_id)
        if asked and type(r.blocks) is tuple:
            for x in r.blocks:
                if x[0] == "call" and x[1] in asked:
                    makers.setdefault(x[1], []).append(r.msg_id)
    for g, lines in parts.items():
        if g in held:
            extra.update(lines)
    for line, ids in answers:
        if any(g in held for i in ids for g in makers.get(i, ())):
            extra.add(line)
    return extra


def abandoned_branches(nodes: Sequence[Node], links: dict[str, str | None],
                       by_line: Callable[[], dict[int, Rec]], sidechain_file: bool,
                       paths: Resolved | None = None, memo: Extras | None = None
                       ) -> tuple[list[Branch], int]:
    """The session's abandoned branches, oldest first, and how many more there were than
    ``MAX_BRANCHES``; ``by_line``: line -> record of ``nodes`` (asked only when there are
    branches); ``memo``: ``kept_extra``'s, for the session's runs."""
    paths = paths or Resolved(nodes, links, sidechain_file)
    ends = paths.ends()[1]  # (found once for the runs' paths too)
    if len(ends) < 2:
        return [], 0
    main = paths()
    off = main.off_path
    if not off:  # (every record on the path: every leaf is held)
        return [], 0
    recs = by_line()
    extra = kept_extra(main, recs, memo)
    held: set[int] | None = None  # (made at the first leaf not held: most sessions have none)
    ids: set[str] = set()
    out: list[Branch] = []
    more = 0
    for leaf in ends[:-1]:
        if leaf.line in held if held is not None else (
                leaf.line not in off or leaf.line in extra):  # (``order``: the rest)
            continue
        if len(out) >= MAX_BRANCHES:
            more += 1
            continue
        if held is None:
            held = set(main.order) | extra
            ids = _response_ids(recs, held)
        found = paths(leaf)
        lines = set(found.order) | kept_extra(found, recs, memo, leaf)
        own = {line for line in lines - held if line in recs
               and not (recs[line].role == "assistant" and recs[line].msg_id in ids)}
        if not any(recs[line].role in ("user", "assistant") for line in own):
            continue
        shared = {line for line in lines if line in recs and recs[line].role == "assistant"
                  and recs[line].msg_id in ids}
        out.append(Branch(leaf, frozenset(shared), frozenset(own)))
        held |= lines
        ids |= _response_ids(recs, own)
    return out, more


def _response_ids(recs: dict[int, Rec], lines: Iterable[int]) -> set[str]:
    return {r.msg_id for line in lines if (r := recs.get(line)) is not None
            and r.role == "assistant"}
