"""Prefix sums over a fixed number of slots with point updates (a Fenwick tree), updates queued.

The context keeps two (estimated and true tokens removed by trims) so the tokens before any
block cost O(log n) once anything is trimmed (``replay.engine.context``).
"""

from __future__ import annotations


class Fenwick:
    """Prefix sums over a fixed number of slots with point updates.

    Updates are queued and applied at the next query (``prefix`` or ``settled_tree``): a
    replay whose queries all take the context's fast paths never pays for the tree.
    """

    __slots__ = ("n", "queued", "tree")

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree = [0] * (n + 1)
        self.queued: list[int] = []
        """Updates not yet applied, flat: slot, delta, slot, delta, ... (two appends of ints, no
        tuple an update: a trim at every request queues one in each of the context's trees)."""

    def add(self, i: int, delta: int) -> None:
        """Add ``delta`` to slot ``i`` (applied at the next query)."""
        self.queued.append(i)
        self.queued.append(delta)

    def settled_tree(self) -> list[int]:
        """The tree with every queued update applied."""
        tree, n, queued = self.tree, self.n, self.queued
        for i, delta in zip(queued[::2], queued[1::2]):
            i += 1
            while i <= n:
                tree[i] += delta
                i += i & -i
        self.queued.clear()
        return tree

    def prefix(self, i: int) -> int:
        """Sum of slots ``[0, i)``."""
        s, tree = 0, self.tree if not self.queued else self.settled_tree()
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s
