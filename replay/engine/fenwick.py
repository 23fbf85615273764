"""Prefix sums over a fixed number of slots (a Fenwick tree) of what trims removed from blocks.

The context keeps two (estimated and true tokens removed by trims) so the tokens before any
block cost O(log n) once anything is trimmed (``replay.engine.context``).  A trim does not
touch them: the context lists the blocks it changed and a tree takes them in at its next query
(``take``), so a replay whose queries all take the context's fast paths never pays for one.

Also the search over sorted ints that prefix sums are queried with, ``bisect_left``: the static
prefix sums (``replay.engine.reach``), the live re-reads' positions, a block's need requests.
"""

from __future__ import annotations


def bisect_left(a: list[int], x: int, lo: int, hi: int) -> int:
    """``bisect.bisect_left(a, x, lo, hi)`` over sorted ints, written out: compiled, the
    builtin's call (a module attribute, boxed arguments, a generic comparison a step) costs
    several times the search."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Fenwick:
    """Prefix sums over ``n`` slots; slot ``i`` holds what block ``i`` lost to trims, as of the
    last ``take`` that named it."""

    __slots__ = ("known", "n", "tree")

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree: list[int] = []
        """The nodes, 1-based (made at the first ``take``: all zero until then)."""
        self.known: list[int] = []
        """Each slot's value in the tree."""

    def take(self, changed: list[int], pre: list[int], cur: list[int]) -> None:
        """Slots ``changed`` set to their blocks' loss now: the block's size by the static prefix
        sums ``pre`` less its current size ``cur`` (a slot named twice is set once)."""
        tree, n, known = self.tree, self.n, self.known
        if not tree:
            tree, known = self.tree, self.known = [0] * (n + 1), [0] * n
        for i in changed:
            value = pre[i + 1] - pre[i] - cur[i]
            delta = value - known[i]
            if delta:
                known[i] = value
                i += 1
                while i <= n:
                    tree[i] += delta
                    i += i & -i

    def prefix(self, i: int) -> int:
        """Sum of slots ``[0, i)``."""
        s, tree = 0, self.tree
        if not tree:
            return 0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s
