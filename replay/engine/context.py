"""The simulated context window during a replay, with running totals.

The live context is a head (a summary and items re-inserted after it) followed
by a contiguous range of the raw stream's messages, ``[lo, hi)`` in blocks;
a block inside the range is either original or trimmed to a placeholder.
Totals (estimate, truth, bytes per category) are kept incrementally, and two
Fenwick trees give the tokens before any block in O(log n), so the prefix a
cache can reuse follows from the earliest position changed since the last
request — nothing is ever re-counted over the whole history.

Every cut goes through ``cut_before``, which only accepts safe split points
(no tool result separated from its call).

Not here: a request's measured values of the context (``replay.engine.measured``); the block a
budget reaches back to (``replay.engine.reach``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from replay.engine.fenwick import Fenwick
from replay.engine.induced_items import MESSAGES_PER_ITEM, Induced
from replay.engine.prepared import CAT_ARGS, CAT_ARGS_WRITE, CAT_OTHER, CAT_RESULTS, PreparedRun

# _set_at_lo and replay.engine.measured.measure read the byte sums by them
if (CAT_OTHER, CAT_ARGS, CAT_ARGS_WRITE, CAT_RESULTS) != (0, 1, 2, 3):
    raise AssertionError("replay.engine.context: byte categories out of their order")

_SHORT_RANGE = 1024
"""Up to this many blocks, summing current sizes directly beats settling the trim tree.  (Not
``Final``, nor ``_SHORT_TRUTH_RANGE``: tests/replay/engine/test_context.py sets them lower to
take the trim tree's paths, compiled too.)"""
_SHORT_TRUTH_RANGE = 256
"""Up to this many blocks, ``truth_before`` sums current sizes rather than settle and walk the
trim tree (two O(log n) walks in Python)."""


@dataclass(slots=True)
class HeadItem:
    """A synthetic message at the head of the context (summary or re-inserted item)."""

    label: str
    text: str
    est: int
    truth: int
    n_bytes: int
    block: int = -1
    """The block whose content it carries verbatim or cut (a re-inserted task or todo list, a
    re-attached file; -1: none, a summary)."""


@dataclass(slots=True, init=False)
class Context:
    """Mutable state of one replay; tiers change it only through its methods.

    Block sizes with their message overhead and their prefix sums are computed
    once per run and counter (``PreparedRun.sized``); the context itself only
    tracks what tiers changed: a Fenwick tree of reductions from trims, the cut
    point ``lo`` and the head.  Appending new messages is O(1).

    Made by its own ``__init__``, which sets every field to the default declared here
    (tests/replay/engine/test_context.py checks they agree): the compiled engine runs a
    dataclass's generated ``__init__`` as Python, an attribute set through the interpreter
    each field, about half the cost of making a context.
    """

    run: PreparedRun
    est_of: list[int]
    truth_of: list[int]
    msg_overhead: int
    lo: int = 0
    """First live block (a message start)."""
    hi: int = 0
    """One past the last appended block."""
    head: list[HeadItem] = field(default_factory=list)
    cur_est: list[int] = field(default_factory=list)
    """Current estimated size of each block, message overhead included."""
    cur_truth: list[int] = field(default_factory=list)
    cur_bytes: list[int] = field(default_factory=list)
    trimmed: list[bool] = field(default_factory=list)
    pre_est: list[int] = field(init=False)
    pre_truth: list[int] = field(init=False)
    pre_bytes: list[list[int]] = field(init=False)
    cut_est: Fenwick = field(init=False)
    """Reductions (original − current) of trimmed blocks, estimated."""
    cut_truth: Fenwick = field(init=False)
    changed: list[int] = field(default_factory=list)
    """Blocks trimmed since the trim trees last took them in (``trim_trees``)."""
    live_cut_est: int = 0
    """Sum of trim reductions over live blocks (est)."""
    live_cut_truth: int = 0
    live_cut_bytes: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    n_live_trimmed: int = 0
    """Trimmed blocks inside ``[lo, hi)``: while 0, prefix queries need no Fenwick tree."""
    last_trimmed: int = -1
    """The highest block ever trimmed (-1: none)."""
    head_est: int = 0
    head_truth: int = 0
    head_n_bytes: int = 0
    epoch: int = 0
    """Bumped by every cut or trim, so tiers can tell when their cached view is stale."""
    dirty: int | None = None
    """Earliest changed position since the last request: -1 for the head, a block, or None."""
    dirty_truth_before: int = 0
    """``truth_before(dirty)`` for a block ``dirty``, taken when it became the earliest change
    (later changes are all after it, or a cut resets ``dirty``): the cache prefix in O(1)."""
    induced: Induced = field(default_factory=lambda: Induced())
    """Re-reads the replay inserted (``replay.engine.induced``): what the agent would have
    fetched again, after the blocks they follow."""
    at_lo: tuple[int, int, int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0, 0, 0)
    """What ``replay.engine.measured.measure`` takes off its sums up to ``hi`` for the blocks before ``lo`` and adds for
    the head, per value (set with ``lo`` and the head: ``_set_at_lo``)."""

    def __init__(self, run: PreparedRun, est_of: list[int], truth_of: list[int],
                 msg_overhead: int) -> None:
        self.run, self.est_of, self.truth_of, self.msg_overhead = (run, est_of, truth_of,
                                                                   msg_overhead)
        n = run.n_blocks
        base_est, self.pre_est = run.sized(est_of, msg_overhead)
        base_truth, self.pre_truth = run.sized(truth_of, msg_overhead)
        self.pre_bytes = run.bytes_prefix()
        self.cur_est, self.cur_truth = list(base_est), list(base_truth)
        self.cur_bytes, self.trimmed = list(run.n_bytes), [False] * n
        self.cut_est, self.cut_truth = Fenwick(n), Fenwick(n)
        self.lo = self.hi = 0
        self.head, self.changed = [], []
        self.live_cut_est = self.live_cut_truth = self.n_live_trimmed = 0
        self.live_cut_bytes = [0, 0, 0, 0]
        self.last_trimmed = -1
        self.head_est = self.head_truth = self.head_n_bytes = self.epoch = 0
        self.dirty, self.dirty_truth_before = None, 0
        self.induced = Induced()
        self._set_at_lo()

    # -- queries ------------------------------------------------------------------------------
    @property
    def n_messages(self) -> int:
        """Messages in context, head items included."""
        extra = len(self.head) + MESSAGES_PER_ITEM * self.induced.n_live
        if self.hi <= self.lo:
            return extra
        return self.run.ordinal[self.hi - 1] - self.run.ordinal[self.lo] + 1 + extra

    @property
    def n_events(self) -> int:
        """Events in context (``PreparedRun.event_prefix``), each head item one, each induced
        re-read two (its call and its result)."""
        extra = len(self.head) + MESSAGES_PER_ITEM * self.induced.n_live
        if self.hi <= self.lo:
            return extra
        events = self.run.event_prefix()
        return events[self.hi] - events[self.lo] + extra

    def est(self) -> int:
        """Estimated tokens of the live context (head and messages)."""
        return (self.head_est + self.pre_est[self.hi] - self.pre_est[self.lo] - self.live_cut_est
                + self.induced.live_est)

    def truth(self) -> int:
        """True tokens of the live context (head and messages)."""
        return (self.head_truth + self.pre_truth[self.hi] - self.pre_truth[self.lo]
                - self.live_cut_truth + self.induced.live_truth)

    def truth_before(self, b: int) -> int:
        """True tokens before block ``b`` (head included): the live cuts less those from ``b``
        on — none, ``b``'s own, the current sizes summed at C speed over a short range (a trim or
        a re-read before the protected range), else by the trim tree (O(log n))."""
        if b > self.last_trimmed:  # no trimmed block at or after b: all live cuts are before it
            cut = self.live_cut_truth
        elif b == self.last_trimmed:  # b is the only one: all live cuts but its own
            cut = self.live_cut_truth - (self.pre_truth[b + 1] - self.pre_truth[b]
                                         - self.cur_truth[b])
        elif self.hi - b <= _SHORT_TRUTH_RANGE:  # all but those in [b, hi)
            hi = self.hi
            cut = self.live_cut_truth - (self.pre_truth[hi] - self.pre_truth[b]
                                         - sum(self.cur_truth[b:hi]))
        else:
            tree = self.trim_trees()[1]
            cut = tree.prefix(b) - tree.prefix(self.lo)
        before = self.head_truth + self.pre_truth[b] - self.pre_truth[self.lo] - cut
        ind = self.induced
        if ind.n_live:  # and the live re-reads following blocks before b: all, none, or
            # summed over the shorter side (a trim's block is usually older than most of them;
            # loops, not sum() of a slice: compiled, the builtin's call costs more than the few)
            pos, first = ind.pos, ind.lo
            if pos[-1] < b:
                return before + ind.live_truth
            if pos[first] >= b:
                return before
            i, truth, n = ind.upto(b), ind.truth, len(pos)
            if i - first <= n - i:
                for j in range(first, i):
                    before += truth[j]
            else:
                before += ind.live_truth
                for j in range(i, n):
                    before -= truth[j]
        return before

    def est_from(self, b: int) -> int:
        """Estimated tokens from block ``b`` to the end, the re-reads induced among them too."""
        ind = self.induced
        return self.blocks_est_from(b) + (ind.est_after_blocks_from(b) if ind.n_live else 0)

    def blocks_est_from(self, b: int) -> int:
        """Estimated tokens of blocks ``[b, hi)`` as they are now, without induced re-reads: by
        the static sums when none of them is trimmed (a trim pass's start, usually), else the
        sizes up to the last trimmed block summed at C speed when few, else the trim tree."""
        pre, hi, last = self.pre_est, self.hi, self.last_trimmed
        if b > last:
            return pre[hi] - pre[b]
        if last - b < _SHORT_RANGE:
            end = last + 1 if last < hi else hi
            return pre[hi] - pre[end] + sum(self.cur_est[b:end])
        cut = self.trim_trees()[0]
        return pre[hi] - pre[b] - (cut.prefix(hi) - cut.prefix(b))

    def trim_trees(self) -> tuple[Fenwick, Fenwick]:
        """The trim trees (estimated, true tokens removed), up to date: the blocks trimmed since
        their last query taken in first."""
        changed = self.changed
        if changed:
            self.cut_est.take(changed, self.pre_est, self.cur_est)
            self.cut_truth.take(changed, self.pre_truth, self.cur_truth)
            changed.clear()
        return self.cut_est, self.cut_truth

    def message_start_at_or_after(self, b: int) -> int:
        """The first message boundary at or after block ``b``."""
        run = self.run
        if b >= self.hi:
            return self.hi
        o = run.ordinal[b]
        return b if run.msg_start[o] == b else run.msg_start[o + 1]

    def newest_output_start(self) -> int:
        """First block of the newest message (tool output or prompt): never cut or trimmed."""
        if self.hi <= self.lo:
            return self.hi
        return self.run.msg_start[self.run.ordinal[self.hi - 1]]

    # -- changes ------------------------------------------------------------------------------
    def set_block(self, b: int, est: int, truth: int, n_bytes: int,
                  truth_before: int = -1) -> tuple[int, int]:
        """Replace block ``b``'s content size (a trim); returns (est, truth) reclaimed.
        ``truth_before``: ``truth_before(b)`` when the caller has it (it does not depend on
        ``b``'s own size; -1: not given, an int rather than None: compiled, not boxed)."""
        run = self.run  # locals, plain statements: called per trimmed block (a hot path)
        if run.msg_start[run.ordinal[b]] == b:
            est += self.msg_overhead
            truth += self.msg_overhead
        cur_est, cur_truth, cur_bytes = self.cur_est, self.cur_truth, self.cur_bytes
        de = cur_est[b] - est
        dt = cur_truth[b] - truth
        self.changed.append(b)  # the trim trees take it in at their next query
        self.live_cut_est += de
        self.live_cut_truth += dt
        cut_bytes, cat = self.live_cut_bytes, run.category[b]  # (``+=`` on the item: generic)
        cut_bytes[cat] = cut_bytes[cat] + cur_bytes[b] - n_bytes
        cur_est[b] = est
        cur_truth[b] = truth
        cur_bytes[b] = n_bytes
        trimmed = self.trimmed
        if not trimmed[b]:
            trimmed[b] = True
            self.n_live_trimmed += 1
            # max() without the builtin's call (which costs many comparisons: see allowed_end)
            if b > self.last_trimmed:  # noqa: PLR1730
                self.last_trimmed = b
        self.epoch += 1
        dirty = self.dirty
        if dirty is None or (dirty != -1 and b < dirty):  # the earliest change since
            self.dirty = b
            self.dirty_truth_before = (self.truth_before(b) if truth_before < 0
                                       else truth_before)
        return de, dt

    def cut_before(self, b: int, head: list[HeadItem]) -> int:
        """Remove the blocks ``[lo, b)`` and replace the head; returns the blocks removed.

        ``b`` must be a safe split point (``is_safe_split``); a caller walks to one first.
        """
        assert self.is_safe_split(b), "cut_before needs a safe split point"
        run, removed = self.run, b - self.lo
        if self.n_live_trimmed and self.hi - b < b - self.lo:  # fewer blocks stay: recount them
            self._recount_live_cuts(b)
        elif self.n_live_trimmed:  # the removed blocks' trims leave the live totals
            pre_est, pre_truth, cur_est, cur_truth = (self.pre_est, self.pre_truth, self.cur_est,
                                                      self.cur_truth)
            cut_bytes, cur_bytes = self.live_cut_bytes, self.cur_bytes
            # only the trimmed ones, picked out at C speed (a cut can remove thousands of blocks)
            for x in itertools.compress(range(self.lo, b), self.trimmed[self.lo:b]):
                self.live_cut_est -= pre_est[x + 1] - pre_est[x] - cur_est[x]
                self.live_cut_truth -= pre_truth[x + 1] - pre_truth[x] - cur_truth[x]
                cut_bytes[run.category[x]] -= run.n_bytes[x] - cur_bytes[x]
                self.n_live_trimmed -= 1
        if self.induced.n_live:
            self.induced.drop_before(b)
        self.lo = b
        self.head = head
        self.head_est = sum(h.est for h in head)
        self.head_truth = sum(h.truth for h in head)
        self.head_n_bytes = sum(h.n_bytes for h in head)
        self._set_at_lo()
        self.dirty = -1
        self.epoch += 1
        return removed

    def _recount_live_cuts(self, b: int) -> None:
        """The live trim totals over ``[b, hi)`` alone, counted afresh (sums at C speed)."""
        hi, run, cut_bytes = self.hi, self.run, [0, 0, 0, 0]
        b = min(b, hi)
        self.live_cut_est = self.pre_est[hi] - self.pre_est[b] - sum(self.cur_est[b:hi])
        self.live_cut_truth = self.pre_truth[hi] - self.pre_truth[b] - sum(self.cur_truth[b:hi])
        n, cur_bytes = 0, self.cur_bytes
        for x in itertools.compress(range(b, hi), self.trimmed[b:hi]):
            cut_bytes[run.category[x]] += run.n_bytes[x] - cur_bytes[x]
            n += 1
        self.live_cut_bytes[:] = cut_bytes
        self.n_live_trimmed = n

    def is_safe_split(self, b: int) -> bool:
        """Whether cutting before block ``b`` keeps every tool result with its call."""
        if b >= self.hi:
            return True
        run = self.run
        o = run.ordinal[b]
        return run.msg_start[o] == b and run.safe_split[o]

    def safe_split_at_or_before(self, b: int) -> int:
        """The nearest safe split point at or before ``b`` (never before ``lo``)."""
        b = min(b, self.hi)
        while b > self.lo and not self.is_safe_split(b):
            b -= 1
        return b

    def safe_split_at_or_after(self, b: int) -> int:
        """The nearest safe split point at or after ``b``."""
        while b < self.hi and not self.is_safe_split(b):
            b += 1
        return b

    def _set_at_lo(self) -> None:
        """``at_lo`` for the current ``lo`` and head: the sums up to ``lo`` less the head's (the
        messages counted from ``ordinal[lo]``, the first live one)."""
        lo, n_head, (other, args, write, results) = self.lo, len(self.head), self.pre_bytes
        ordinal = self.run.ordinal
        first_msg = ordinal[lo] if lo < len(ordinal) else 0  # (unused while hi <= lo)
        self.at_lo = (self.pre_est[lo] - self.head_est, self.pre_truth[lo] - self.head_truth,
                      first_msg - 1 - n_head, lo - n_head, args[lo], write[lo], results[lo],
                      other[lo] - self.head_n_bytes)

    def induced_truth_before(self, i: int) -> int:
        """True tokens before induced re-read ``i`` (head included)."""
        ind = self.induced
        after = ind.pos[i] + 1
        before, truth = self.truth_before(after), ind.truth
        for j in range(i, ind.upto(after)):  # (a loop, not sum() of a slice: see truth_before)
            before -= truth[j]
        return before

    def touch_induced(self, i: int, truth_before: int | None = None) -> None:
        """Induced re-read ``i`` changed (trimmed): the cache prefix ends before it.
        ``truth_before``: ``induced_truth_before(i)`` when the caller has it (it does not
        depend on the item's own size)."""
        after = self.induced.pos[i] + 1
        tb = self.induced_truth_before(i) if truth_before is None else truth_before
        self.epoch += 1
        if self.dirty is None or (self.dirty != -1 and (
                after < self.dirty or (after == self.dirty and tb < self.dirty_truth_before))):
            self.dirty = after
            self.dirty_truth_before = tb
