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
from dataclasses import dataclass

from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.claude_code_path import Path, Resolved
from replay.ingest.parsers.claude_code_records import Rec, block_list

MAX_BRANCHES = 200
"""Abandoned branches made into runs per session at the most (each costs a walk of the
tree); the rest are named in an issue by the caller."""


@dataclass(frozen=True, slots=True)
class Branch:
    """One abandoned branch."""

    leaf: Node
    """Its last record."""
    shared: frozenset[int]
    """Lines of its chain's responses that another run counts as requests (context here)."""
    own: frozenset[int]
    """Lines only this branch's run holds."""


def kept_extra(found: Path, recs: dict[int, Rec],
               memo: dict[int | None, set[int]] | None = None, leaf: Node | None = None
               ) -> set[int]:
    """Lines off ``found``'s path that its run keeps anyway: the rest of a response it holds
    (one record per content block) and the parallel tool results of its calls.  ``memo``: the
    sets found so far for the paths of ``recs``' session, by leaf line (None: the main path;
    ``found`` is the path to ``leaf``), so a run's path and ``abandoned_branches``' are read
    once; read only."""
    key = None if leaf is None else leaf.line
    if memo is not None and (known := memo.get(key)) is not None:
        return known
    groups = {r.msg_id for line in found.order if (r := recs.get(line)) is not None
              and r.role == "assistant"}
    calls = {x[1] for r in recs.values() if r.role == "assistant" and r.msg_id in groups
             for x in r.blocks if x[0] == "call"}
    extra = {line for line in found.off_path if (r := recs.get(line)) is not None and (
        r.role == "assistant" and r.msg_id in groups
        or any(x[0] == "result" and x[1] in calls for x in block_list(r)))}
    if memo is not None:
        memo[key] = extra
    return extra


def abandoned_branches(nodes: Sequence[Node], links: dict[str, str | None],
                       by_line: Callable[[], dict[int, Rec]], sidechain_file: bool,
                       paths: Resolved | None = None,
                       memo: dict[int | None, set[int]] | None = None
                       ) -> tuple[list[Branch], int]:
    """The session's abandoned branches, oldest first, and how many more there were than
    ``MAX_BRANCHES``; ``by_line``: line -> record of ``nodes`` (asked only when there are
    branches); ``memo``: ``kept_extra``'s, for the session's runs."""
    paths = paths or Resolved(nodes, links, sidechain_file)
    ends = paths.ends()[1]  # (found once for the runs' paths too)
    if len(ends) < 2:
        return [], 0
    recs = by_line()
    main = paths()
    held = set(main.order) | kept_extra(main, recs, memo)
    ids = _response_ids(recs, held)
    out: list[Branch] = []
    more = 0
    for leaf in ends[:-1]:
        if leaf.line in held:
            continue
        if len(out) >= MAX_BRANCHES:
            more += 1
            continue
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
