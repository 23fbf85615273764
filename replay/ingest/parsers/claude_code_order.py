"""The context order of a Claude Code session's records, in a few bytes a record (``Runs``): the
path from the root, each other record right after the path record that precedes it in the file.

Not here: which records are on the path, and which are left out
(``replay.ingest.parsers.claude_code_path``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

from replay.ingest.parsers.claude_code_node import Node

N = TypeVar("N", bound=Node)


class Runs:
    """Context order of a session's records, in a few bytes a record: the records (file order)
    fall into runs, each starting at a record on the path and going on to the next such
    record in the file (the records before the first one are a run of their own, first); the
    runs are in the order of their first record along the path.  That is the order of the key
    (index on the path of the last path record at or before it, 0 on the path / 1 after it,
    line) a record each, without a key a record."""

    __slots__ = ("_heads", "_in_file_order", "_is_head", "_more", "_nodes")

    def __init__(self, nodes: Sequence[Node], on_path: Mapping[str, int], n_path: int) -> None:
        self._nodes = nodes
        self._heads = array("q", [-1]) * n_path
        """Path index -> position in ``nodes`` of the record it is (-1: a record of
        ``links``, not one of the run's)."""
        self._more: dict[int, list[int]] = {}
        """Path index -> positions of further records of the same uuid (none from the parser:
        it keeps the first record of a uuid)."""
        self._is_head = bytearray(len(nodes))
        self._in_file_order = True
        """The path's records come in the file in path order: the runs are in file order."""
        last = -1
        for pos, n in enumerate(nodes):
            k = on_path.get(n.uuid, -1) if n.uuid else -1
            if k < 0:
                continue
            self._is_head[pos] = 1
            if k <= last:
                self._in_file_order = False
            last = k
            if self._heads[k] < 0:
                self._heads[k] = pos
            else:
                self._more.setdefault(k, []).append(pos)

    @classmethod
    def along(cls, nodes: Sequence[Node], path: list[str], on: AbstractSet[str]) -> Runs:
        """``Runs(nodes, {uuid: index on path}, len(path))`` for ``path`` (its uuids, root
        first; ``on``: the same as a set), without that map (an int and a dict entry a record
        on the path, twice a set's) when the path's records come in the file in path order
        (most files): they are found by one scan along ``path``; any other file is done as
        ``Runs`` does it."""
        runs = cls.__new__(cls)
        runs._nodes, runs._more, runs._in_file_order = nodes, {}, True
        heads = runs._heads = array("q", [-1]) * len(path)
        is_head = runs._is_head = bytearray(len(nodes))
        j, n_path = 0, len(path)
        for pos, n in enumerate(nodes):
            u = n.uuid
            if not u or u not in on:
                continue
            while j < n_path and path[j] != u:  # (the path's records of ``links``: passed)
                j += 1
            if j == n_path:  # behind one met before, or met twice: not in path order
                return cls(nodes, {u: i for i, u in enumerate(path)}, n_path)
            heads[j], is_head[pos] = pos, 1
            j += 1
        return runs

    def on_path(self, pos: int) -> bool:
        """Whether the record at ``pos`` in ``nodes`` is on the path."""
        return self._is_head[pos] == 1

    def off_path(self) -> Iterator[int]:
        """The positions in ``nodes`` of the records not on the path, in order (found by a
        search over the flags, not a test a record: most records are on it)."""
        is_head, pos = self._is_head, -1
        while (pos := is_head.find(0, pos + 1)) >= 0:
            yield pos

    def select(self, nodes: Sequence[N], left_out: AbstractSet[int],
               but: AbstractSet[int] = frozenset()) -> list[N]:
        """``lines(left_out, but)``'s records: ``nodes`` (those these runs were made of) in
        context order, but those of ``left_out`` not in ``but``."""
        if len(nodes) != len(self._nodes):
            raise ValueError("not the records these runs were made of")
        if self._in_file_order:
            return [n for n in nodes if (line := n.line) not in left_out or line in but]
        return [n for pos in self.positions() if (line := (n := nodes[pos]).line) not in left_out
                or line in but]

    def positions(self) -> Iterator[int]:
        """Every record's position in ``nodes``, in context order."""
        is_head, size = self._is_head, len(self._nodes)

        def follow(pos: int) -> Iterator[int]:  # the records after a run's first one
            pos += 1
            while pos < size and not is_head[pos]:
                yield pos
                pos += 1

        yield from follow(-1)
        for k, pos in enumerate(self._heads):
            if pos < 0:
                continue
            group = [pos, *self._more.get(k, ())]
            yield from group  # (the records of one path index first, then what follows each)
            for head in group:
                yield from follow(head)

    def lines(self, left_out: AbstractSet[int], but: AbstractSet[int] = frozenset()) -> list[int]:
        """The lines of the records in context order, but those of ``left_out`` not in
        ``but``."""
        if self._in_file_order:  # (most files: no run to move)
            return [line for n in self._nodes if (line := n.line) not in left_out or line in but]
        nodes = self._nodes
        return [line for pos in self.positions() if (line := nodes[pos].line) not in left_out
                or line in but]
