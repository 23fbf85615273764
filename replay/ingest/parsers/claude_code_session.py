"""One ``sessionId``'s records in a Claude Code file, and the subagent conversations written
inline in it (``sidechains``): what ``replay.ingest.parsers.claude_code_runs`` makes a
session's runs of.

Not here: reading the records (``replay.ingest.parsers.claude_code``) and making the runs
(``replay.ingest.parsers.claude_code_runs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.claude_code_records import Rec


@dataclass(slots=True)
class Session:
    """One ``sessionId``'s records."""

    nodes: list[Rec] = field(default_factory=list)
    """The records the run is made of, in file order."""
    links: dict[str, str | None] = field(default_factory=dict)
    """uuid -> parent of the other records with a uuid (links of the chain only)."""
    version: str = ""
    agent_id: str = ""
    titles: dict[str, str] = field(default_factory=dict)
    """``ai-title`` / ``custom-title`` record type -> the last title of that kind."""
    side_agents: dict[int, str] = field(default_factory=dict)
    """Line -> ``agentId`` of the inline sidechain records that name their subagent."""
    forked: set[int] = field(default_factory=set)
    """Lines of records a forked session copied from its parent (``forkedFrom``)."""
    fork_of: str = ""
    """The session this one was forked from ('' for none)."""
    lines: dict[int, Rec] | None = None
    """Line -> record of ``nodes``, made when first asked (``by_line``)."""

    def by_line(self) -> dict[int, Rec]:
        """Line -> record, made when first asked: only a session with records off its path
        (abandoned branches, sidechains) asks, and the map is ~32 bytes a record."""
        if self.lines is None:
            self.lines = {n.line: n for n in self.nodes}
        return self.lines


def session(sessions: dict[str, Session], sid: str, done: set[str]) -> Session:
    if sid not in sessions:
        if sid in done:  # (``session_ends`` said no line after its end adds to it)
            raise ValueError(f"session {sid[:40]!r} has records after its runs were made")
        sessions[sid] = Session()
    return sessions[sid]


def sidechains(sess: Session) -> list[Session]:
    """The subagent conversations written inline in a session file (Claude Code before the
    ``subagents/`` folder: records with ``isSidechain: true``), each its own session, taken
    out of ``sess``.  One per chain: records linked by ``parentUuid`` to the same root
    (a sidechain's first record has no parent), ordered as in the file; a chain whose first
    record names a parent found nowhere in the session (a gap in the log) continues the chain
    before it rather than inventing a subagent."""
    side = [n for n in sess.nodes if n.tie.sidechain]  # (``Node.sidechain``, no call a record)
    if not side or all(n.sidechain for n in sess.nodes if n.message):
        return []  # none, or a subagent's own file (moved out of its subagents folder)
    parent = {n.uuid: n.parent for n in side if n.uuid}
    known = set(sess.links) | {n.uuid for n in sess.nodes if n.uuid}
    roots = chain_roots(parent)

    def root(n: Node) -> str:
        return roots.get(n.uuid, "") or f"line-{n.line}"

    chains: dict[str, Session] = {}
    alias: dict[str, str] = {}
    for n in side:
        key = root(n)
        if key not in chains and key not in alias:
            first = parent.get(key)
            alias[key] = next(reversed(chains)) if chains and first and first not in known \
                else key
        key = alias.get(key, key)
        sub = chains.setdefault(key, Session(links=sess.links, version=sess.version))
        sub.nodes.append(n)
        sub.agent_id = sub.agent_id or sess.side_agents.get(n.line, "")
    sess.nodes = [n for n in sess.nodes if not n.sidechain]
    return [c for c in chains.values() if any(r.role in ("user", "assistant")
                                               for r in c.nodes)]


def chain_roots(parent: dict[str, str | None]) -> dict[str, str]:
    """Each uuid of ``parent`` (uuid -> its parent's) -> the root of its chain: the first
    record up its chain whose parent is not in ``parent``, or in a chain that loops, the first
    record met twice going up from it (each record of the loop its own root).  Each record is
    walked once, the records up from it taking the root found (a sidechain of 20,000 records
    walked up from each of them was 200 million steps)."""
    roots: dict[str, str] = {}
    for start in parent:
        if start in roots:
            continue
        path: list[str] = []
        at: dict[str, int] = {}
        cur = start
        while True:
            if cur in roots:
                top = roots[cur]
                break
            if cur in at:  # a loop: ``cur`` is where the walk came back; its records are
                top = cur  # each their own root, the records before it have ``cur``
                for uuid in path[at[cur]:]:
                    roots[uuid] = uuid
                del path[at[cur]:]
                break
            up = parent[cur]
            if up not in parent:  # (None, or a record outside the chains)
                top = cur
                break
            at[cur] = len(path)
            path.append(cur)
            cur = up  # (a key of ``parent``: a str)
        roots[cur] = roots.get(cur, top)
        for uuid in path:
            roots[uuid] = top
    return roots
