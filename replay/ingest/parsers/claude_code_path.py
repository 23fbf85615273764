"""Which Claude Code records the model saw, and in what order: the conversation path.

A transcript is a tree: every record has a ``uuid`` and a ``parentUuid``; a rewind starts a
new branch from an earlier record, a compaction boundary has no parent but a
``logicalParentUuid`` (the last record before it), and a *partial* compaction
(``compactMetadata.preservedSegment`` / ``preservedMessages``) re-attaches some earlier
records after its summary.  The client writes those records once, before the boundary with
their old parents, and the next record after the compaction names the segment's tail (or the
anchor) as its parent; reading a transcript it walks tail → head by ``parentUuid``, relinks the
head after the anchor and the anchor's other children after the tail
(``applyPreservedSegmentRelinks``, sessionStorage.ts, as quoted by public reverse-engineering
of the client and the SDK's port of it).  ``segments`` finds the segments whose walk holds; the
path walk, coming from after the compaction to the tail, goes on at the anchor (the summary,
the boundary), so the compaction is on the path, and the records of the segment stay where they
were before it (the context before the compaction; ``ContextEvent.preserved_msgs`` re-attaches
them after the summary).  A segment whose walk breaks (the synthetic shape of claude-code-log's
fixture writes the tail after the summary) falls back to ``preservedMessages``: those records
are moved before the boundary.  The path the model saw is the chain from the newest leaf
(by the instant its timestamp names, ``claude_code_newest``) back to the root, across
boundaries; records of an abandoned
branch (their chain joins the path) are left out; records whose chain never reaches the
path (no ``parentUuid`` key, a parent outside the file) are kept where the file has them;
sidechain records in a main-session file belong to subagents and are left out.

Order: the path from the root, each other kept record right after the path record that
precedes it in the file (so a well-ordered file keeps its file order, and a file written in
reverse order or with relinked records gets the chain's order), held in a few bytes a record
by ``claude_code_order.Runs``.

Not here: what a record holds (``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from replay.ingest.parsers.claude_code_newest import newest_last, notes
from replay.ingest.parsers.claude_code_node import MESSAGE_ROLES, Node
from replay.ingest.parsers.claude_code_order import N, Runs


@dataclass(frozen=True, slots=True)
class Path:
    """The outcome: kept record lines in context order, and what was left out."""

    order: list[int]
    """Line numbers of the kept records, in context order."""
    off_path: set[int]
    """Lines of records left out (abandoned branches, sidechains)."""
    runs: Runs | None
    """Every record's place in context order (``order`` follows it); None: file order."""
    cycle: bool = False
    """The chain looped; what was walked before the loop was kept."""
    preserved: dict[str, list[str]] = field(default_factory=dict)
    """Boundary uuid -> the uuids of its preserved segment, head first (``segments``), for
    the boundaries on the path."""
    notes: tuple[tuple[int, str], ...] = ()
    """(line, issue) of what choosing the newest leaf had to decide (``claude_code_newest``:
    the path to the newest leaf only)."""

    def with_lines(self, lines: set[int]) -> list[int]:
        """``order`` with the records ``lines`` (left out by the path, kept after all, e.g.
        the parallel tool results of a kept response) in their places."""
        if not lines & self.off_path or self.runs is None:
            return list(self.order)
        return self.runs.lines(self.off_path, lines)

    def records(self, nodes: Sequence[N], lines: set[int]) -> list[N]:
        """``with_lines(lines)``'s records: of ``nodes`` (those the path was resolved over),
        the kept ones and those of ``lines``, in context order."""
        if self.runs is None:  # (every record, in file order: ``resolve`` found no leaf)
            return list(nodes)
        return self.runs.select(nodes, self.off_path, lines)


@dataclass(frozen=True, slots=True)
class Segment:
    """A partial compaction's preserved segment whose chain holds."""

    boundary: str
    anchor: str
    tail: str
    uuids: tuple[str, ...]
    """The segment's records, head first (those without a uuid of their own: none)."""


def segments(nodes: Sequence[Node], links: dict[str, str | None]) -> dict[str, Segment]:
    """Tail uuid -> the preserved segment of each boundary whose walk from its tail back to its
    head by ``parentUuid`` reaches the head (the client's check before it relinks; a walk
    that breaks, loops or meets the anchor first relinks nothing)."""
    for n in nodes:  # (a loop, not any() over a generator: every record of the session)
        if n.tie.segment is not None:
            break
    else:  # most sessions: no uuid -> parent map of every record for nothing
        return {}
    parent: dict[str, str | None] = dict(links)
    parent.update((n.uuid, n.parent) for n in nodes if n.uuid)
    out: dict[str, Segment] = {}
    for n in nodes:
        if n.segment is None or not n.uuid:
            continue
        head, anchor, tail = n.segment
        walked: list[str] = []
        cur: str | None = tail
        while cur is not None and cur in parent and cur not in walked and cur != anchor:
            walked.append(cur)
            if cur == head:
                break
            cur = parent[cur]
        if walked and walked[-1] == head and anchor in parent:
            out[tail] = Segment(n.uuid, anchor, tail, tuple(reversed(walked)))
    return out


def leaves(nodes: Sequence[Node], sidechain_file: bool,
           segs: dict[str, Segment] | None = None) -> list[Node]:
    """The message records no message record continues (the ends of the tree's branches),
    oldest first (``claude_code_newest.newest_last``: the instant of their timestamp, an
    unreadable one first, then line); the newest is the end of the conversation path.  The
    anchor of a preserved segment (``segs``) is continued by the segment's head."""
    messages = [n for n in nodes if n.role in MESSAGE_ROLES]  # (``Node.message``, without a
    # call a record)
    parents = {n.parent for n in messages if n.parent}
    parents |= {s.anchor for s in (segs or {}).values()}
    return newest_last([n for n in messages if n.uuid and n.uuid not in parents
                        and (sidechain_file or not n.tie.sidechain)])


def resolve(nodes: Sequence[Node], links: dict[str, str | None], sidechain_file: bool,
            leaf: Node | None = None, *, unique: bool = False,
            ends: tuple[dict[str, Segment], list[Node]] | None = None) -> Path:
    """The conversation path through ``nodes`` (the records a run is made of, file order).

    Args:
        nodes: the records, each with its line, uuid ('' when absent) and links.
        links: uuid -> parent of the session's other records (progress, system records …):
            the chain passes through them.
        sidechain_file: the file is a subagent's (its records are all sidechain).
        leaf: the branch to follow (an abandoned one); default: the newest leaf, the path the
            conversation went on with.
        unique: no two of ``nodes`` and ``links`` have one uuid (the parser's: it keeps the
            first record of a uuid), so a chain in file order is walked without a uuid ->
            record map (``_Tree``).
        ends: ``tree_ends(nodes, links, sidechain_file)``, when already found.
    """
    tree = _Tree(nodes, links, unique)
    segs, last = ends or tree_ends(nodes, links, sidechain_file)
    if not last:
        return Path([n.line for n in nodes], set(), None)
    branch = leaf is not None  # an abandoned branch holds its chain only
    leaf = leaf or last[-1]
    walked, cycle = _walk(leaf, tree, segs)
    said = () if branch else notes(last, tree.get)
    walked.reverse()  # root first
    on_path = set(walked)
    runs = Runs.along(nodes, walked, on_path)
    joins: dict[str, bool] = {}

    def joins_path(n: Node) -> bool:
        """Whether ``n``'s chain of parents reaches the path (memoised, loop-safe)."""
        trail: list[str] = []
        cur: Node | None = n
        found = False
        while cur is not None and cur.uuid and cur.uuid not in joins:
            if cur.uuid in on_path:
                found = True
                break
            if cur.uuid in trail:
                break
            trail.append(cur.uuid)
            nxt = cur.parent or cur.logical
            cur = tree.get(nxt) if nxt else None
        else:
            if cur is not None and cur.uuid in joins:
                found = joins[cur.uuid]
        for u in trail:
            joins[u] = found
        return found

    off: set[int] = set()
    for pos in runs.off_path():
        n = nodes[pos]
        if branch or n.sidechain and not sidechain_file or n.uuid and n.has_parent_key \
                and joins_path(n):
            off.add(n.line)
    order = runs.lines(off)
    kept = {s.boundary: list(s.uuids) for s in segs.values() if s.boundary in on_path}
    return Path(order, off, runs, cycle, kept, said)


def tree_ends(nodes: Sequence[Node], links: dict[str, str | None], sidechain_file: bool
              ) -> tuple[dict[str, Segment], list[Node]]:
    """The preserved segments of ``nodes`` (``segments``) and their tree's leaves
    (``leaves``): what every path through them starts from."""
    segs = segments(nodes, links)
    return segs, leaves(nodes, sidechain_file, segs)


class Resolved:
    """``resolve`` over one session's records, each leaf's path computed once: finding the
    abandoned branches resolves the main path and each branch's, and each run's own is the
    same path again; the segments and leaves they all start from are found once
    (``tree_ends``)."""

    def __init__(self, nodes: Sequence[Node], links: dict[str, str | None],
                 sidechain_file: bool, *, unique: bool = False) -> None:
        self._args = nodes, links, sidechain_file
        self._unique = unique
        self._paths: dict[int | None, Path] = {}
        self._ends: tuple[dict[str, Segment], list[Node]] | None = None

    def __call__(self, leaf: Node | None = None) -> Path:
        """``resolve(nodes, links, sidechain_file, leaf, unique=…)``, remembered."""
        key = None if leaf is None else leaf.line
        found = self._paths.get(key)
        if found is None:
            found = self._paths[key] = resolve(*self._args, leaf, unique=self._unique,
                                               ends=self.ends())
        return found

    def ends(self) -> tuple[dict[str, Segment], list[Node]]:
        """``tree_ends`` of the records, remembered."""
        if self._ends is None:
            self._ends = tree_ends(*self._args)
        return self._ends

    def forget(self) -> None:
        """Let go of the paths computed so far (the last run made of these records has its
        own)."""
        self._paths.clear()
        self._ends = None


class _Tree:
    """uuid -> Node of one session: its records (``nodes``, a later one over an earlier one of
    the same uuid) and, made when first asked for, a bare Node for each other record with a
    uuid (``links``: progress and system records, thousands in a long session, of which a walk
    meets only those on its chain).  ``unique`` (no uuid twice in ``nodes`` and ``links``):
    the record before the one last found is tried first, and the map of every record's uuid
    (~60 bytes a record) is made only when that is not it nor a record of ``links``: a chain
    walked back in file order needs none."""

    __slots__ = ("_at", "_bare", "_known", "_links", "_nodes")

    def __init__(self, nodes: Sequence[Node], links: dict[str, str | None],
                 unique: bool = False) -> None:
        self._nodes, self._links, self._at = nodes, links, len(nodes)
        self._known = None if unique else {n.uuid: n for n in nodes if n.uuid}
        self._bare: dict[str, Node] = {}

    def get(self, uuid: str) -> Node | None:
        """The Node of ``uuid``, or None when no record of the session has it."""
        known = self._known
        if known is None:
            at = self._at - 1
            if at >= 0 and self._nodes[at].uuid == uuid:
                self._at = at
                return self._nodes[at]
            if uuid not in self._links:  # (else no record has it: ``unique``)
                known = self._known = {n.uuid: n for n in self._nodes if n.uuid}
        node = None if known is None else known.get(uuid)
        if node is None and uuid in self._links:
            node = self._bare.get(uuid)
            if node is None:
                node = self._bare[uuid] = Node(0, uuid, self._links[uuid])
        return node


def _walk(leaf: Node, tree: _Tree, segs: dict[str, Segment]) -> tuple[list[str], bool]:
    """The uuids from ``leaf`` back to the root (leaf first), and whether the chain looped.
    Coming from after a partial compaction to its segment's tail, the walk goes on at the
    anchor (the records of the segment come again before the boundary)."""
    path: list[str] = []
    seen: set[str] = set()
    crossed: set[str] = set()
    relinked = {s.boundary for s in segs.values()}
    cur: str | None = leaf.uuid
    while cur and (node := tree.get(cur)) is not None:
        if cur in seen:
            return path, True
        seen.add(cur)
        path.append(cur)
        if cur in relinked:
            crossed.add(cur)
        elif node.tie.preserved:  # a broken segment: its preserved records come before it
            found = [(u, k) for u in node.preserved if (k := tree.get(u)) is not None]
            kept = [u for u, _ in found]
            path = [u for u in path if u not in kept]
            path.extend(reversed(kept))
            seen.update(kept)
            nxt = found[0][1].parent if found else None
            cur = nxt if nxt and nxt not in seen else (
                node.logical if node.logical and node.logical not in seen else None)
            continue
        cur = node.parent or node.logical
        if segs and cur and (seg := segs.get(cur)) is not None and \
                seg.boundary not in crossed and node.uuid not in seg.uuids:
            cur = seg.anchor
    return path, False
