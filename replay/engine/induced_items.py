"""The re-reads a replay inserted: what the agent would have fetched again, in the live context.

A re-read is two messages at the end of the context when it is made — the call and its result —
so each item *follows* a block: the last block in context at the time (``pos``).  Blocks that
arrive later come after it; a cut before block ``b`` removes the items following blocks before
``b``; a trim tier may shrink an item's result to its placeholder (``replay.engine.tiers.trim``),
and a collapse tier's ``older_reads`` to its notice when the item re-read a read of a file that a
later read of the file follows, an item or a block after ``pos`` (``replay.engine.tiers.collapse``:
to Cline's rule a re-read of a file is a read of it like any other).
A tier's protected range is measured over the recorded blocks (``replay.engine.reach``):
an item inside it does not push older blocks out of it (an approximation, on the side of
protecting more).  Totals over the live items are kept incrementally, so the context's queries stay O(1) when
there are none (the usual case) and O(live items) otherwise.

Not here: deciding when a re-read happens (``replay.engine.induced``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from replay.engine.fenwick import bisect_left

MESSAGES_PER_ITEM: Final = 2
"""The messages one re-read adds to the context: the call and its result (what the context's
message counts and a collapse tier's ``drop_frac`` count it as)."""


@dataclass(slots=True, init=False)
class Induced:
    """The items, in the order they were made (``pos`` never decreases).

    Made empty by its own ``__init__``, which sets every field to the default declared here
    (tests/replay/engine/test_own_inits.py checks they agree): compiled, a dataclass's generated
    ``__init__`` runs as Python, an attribute set through the interpreter each field, and a
    context makes one each replay."""

    pos: list[int] = field(default_factory=list)
    """The block each item follows."""
    src: list[int] = field(default_factory=list)
    """The block whose content each re-reads (what the policy had removed)."""
    est: list[int] = field(default_factory=list)
    """Estimated tokens of the call and the result, message overheads included."""
    truth: list[int] = field(default_factory=list)
    call_est: list[int] = field(default_factory=list)
    """The call's part of ``est`` (kept when the result is trimmed)."""
    call_truth: list[int] = field(default_factory=list)
    result_bytes: list[int] = field(default_factory=list)
    call_bytes: list[int] = field(default_factory=list)
    trimmed: list[bool] = field(default_factory=list)
    gone_at: list[int] = field(default_factory=list)
    """The request from which each item's result is out of context or trimmed (-1: still in)."""
    lo: int = 0
    """The first live item (those before were cut)."""
    n_live: int = 0
    live_est: int = 0
    live_truth: int = 0
    live_result_bytes: int = 0
    live_call_bytes: int = 0

    def __init__(self) -> None:
        self.pos, self.src, self.est, self.truth = [], [], [], []
        self.call_est, self.call_truth, self.result_bytes, self.call_bytes = [], [], [], []
        self.trimmed, self.gone_at = [], []
        self.lo = self.n_live = self.live_est = self.live_truth = 0
        self.live_result_bytes = self.live_call_bytes = 0

    def add(self, pos: int, src: int, call: tuple[int, int, int],
            result: tuple[int, int, int]) -> int:
        """A new item following block ``pos``, re-reading ``src``: its call's and its result's
        (est, truth, bytes), message overheads included; returns its index."""
        est, truth = call[0] + result[0], call[1] + result[1]
        result_bytes, call_bytes = result[2], call[2]
        self.pos.append(pos)
        self.src.append(src)
        self.call_est.append(call[0])
        self.call_truth.append(call[1])
        self.est.append(est)
        self.truth.append(truth)
        self.result_bytes.append(result_bytes)
        self.call_bytes.append(call_bytes)
        self.trimmed.append(False)
        self.gone_at.append(-1)
        self.n_live += 1
        self.live_est += est
        self.live_truth += truth
        self.live_result_bytes += result_bytes
        self.live_call_bytes += call_bytes
        return len(self.pos) - 1

    def live(self, i: int) -> bool:
        """Whether item ``i`` is still in context, its result whole."""
        return i >= self.lo and not self.trimmed[i]

    def upto(self, b: int) -> int:
        """One past the last live item following a block before ``b``."""
        return bisect_left(self.pos, b, self.lo, len(self.pos))

    def est_after_blocks_from(self, b: int) -> int:
        """Estimated tokens of the live items after block ``b`` starts (following ``b`` or later)."""
        return sum(self.est[self.upto(b):])

    def drop_before(self, b: int, request: int = -1) -> range:
        """Remove the items before block ``b`` (a cut); returns their indices."""
        lo, hi = self.lo, self.upto(b)
        for i in range(lo, hi):
            self.live_est -= self.est[i]
            self.live_truth -= self.truth[i]
            self.live_result_bytes -= self.result_bytes[i]
            self.live_call_bytes -= self.call_bytes[i]
            if self.gone_at[i] < 0 <= request:
                self.gone_at[i] = request
        self.n_live -= hi - lo
        self.lo = hi
        return range(lo, hi)

    def shrink(self, i: int, result: tuple[int, int, int], request: int) -> tuple[int, int]:
        """Item ``i``'s result becomes a placeholder of this (est, truth, bytes), message
        overhead included (the call is kept); returns (est, truth) reclaimed."""
        est, truth = self.call_est[i] + result[0], self.call_truth[i] + result[1]
        result_bytes = result[2]
        de, dt = self.est[i] - est, self.truth[i] - truth
        self.live_est -= de
        self.live_truth -= dt
        self.live_result_bytes -= self.result_bytes[i] - result_bytes
        self.est[i], self.truth[i], self.result_bytes[i] = est, truth, result_bytes
        self.trimmed[i] = True
        self.gone_at[i] = request
        return de, dt
