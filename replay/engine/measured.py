"""What the replay loop keeps for each request it sends: a list per value, in request order.

``measure`` appends the context's values (tokens by estimate and by truth, messages,
blocks, bytes per category); the loop appends the prefix the request shares with the previous
one and what it invalidated.  ``replay.engine.fold`` hands the lists to the trace as its
``requests`` columns (the cache's read, the cost and the overshoot follow from them, for all
requests at once).  A list per value, not one flat list of rows sliced into columns at the end:
compiled, a row appended as a tuple cost the tuple's making and freeing (~500 instructions a
request) and the slicing ~7 k a replay, more than the appends.

Not here: what each value means (``replay.engine.trace.RequestRow``); the context whose values
they are and its running totals (``replay.engine.context``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.engine.context import Context
from replay.engine.induced_items import MESSAGES_PER_ITEM
from replay.engine.truth import floored


@dataclass(slots=True, init=False)
class Measured:
    """The requests' measured values so far, a list each (``RequestRow``'s names, but
    ``common``).  Made empty by its own ``__init__`` (compiled, a dataclass's generated one runs
    as Python; tests/replay/engine/test_own_inits.py checks it sets every field)."""

    est_tokens: list[int] = field(default_factory=list)
    truth_tokens: list[int] = field(default_factory=list)
    n_messages: list[int] = field(default_factory=list)
    n_blocks: list[int] = field(default_factory=list)
    bytes_args: list[int] = field(default_factory=list)
    bytes_args_write: list[int] = field(default_factory=list)
    bytes_results: list[int] = field(default_factory=list)
    bytes_other: list[int] = field(default_factory=list)
    common: list[int] = field(default_factory=list)
    """The prefix shared with the previous request (0 when the cache expired)."""
    invalidated_tokens: list[int] = field(default_factory=list)
    floored: list[int] = field(default_factory=list)
    """The requests (by index) whose truth is the floor (``replay.engine.truth.floored``): few,
    so kept as indices, not a value a request."""

    def __init__(self) -> None:
        self.est_tokens, self.truth_tokens, self.n_messages, self.n_blocks = [], [], [], []
        self.bytes_args, self.bytes_args_write, self.bytes_results = [], [], []
        self.bytes_other, self.common, self.invalidated_tokens = [], [], []
        self.floored = []

    def floored_truth(self, fixed_truth: int, truth: int, floor: float) -> int:
        """The next request's ``truth`` (``fixed_truth`` included) floored
        (``replay.engine.truth.floored``), the request noted in ``floored`` when the floor is
        what it takes (called before its ``truth_tokens`` is appended)."""
        got = floored(fixed_truth, truth - fixed_truth, floor)
        if got != truth:
            self.floored.append(len(self.truth_tokens))
        return got


def measure(ctx: Context, m: Measured, fixed_est: int, fixed_truth: int, floor: float) -> int:
    """One request's measured values of ``ctx`` appended to ``m``'s lists, in one call: estimated
    tokens (``fixed_est`` added), true tokens (``fixed_truth`` added, never below ``floor``
    × the context's count: ``replay.engine.truth.floored``), messages, blocks, bytes of all
    call args, of write/edit args, of results, of other text (a returned tuple unpacked
    into them cost about 900 instructions a request).  Returns the true tokens."""
    lo, hi = ctx.lo, ctx.hi
    est0, truth0, msg0, blocks0, args0, write0, results0, other0 = ctx.at_lo
    pre, cut = ctx.pre_bytes, ctx.live_cut_bytes  # (by index: a list's unpacking is generic)
    other, args, write, results = pre[0], pre[1], pre[2], pre[3]
    w = write[hi] - write0 - cut[2]
    n_messages = ctx.run.ordinal[hi - 1] - msg0 if hi > lo else len(ctx.head)
    ind = ctx.induced
    if ind.n_live:  # each re-read is two messages: the call and its result
        extra = MESSAGES_PER_ITEM * ind.n_live
        truth = ctx.pre_truth[hi] - truth0 - ctx.live_cut_truth + ind.live_truth + fixed_truth
        if floor:
            truth = m.floored_truth(fixed_truth, truth, floor)
        m.est_tokens.append(fixed_est + (ctx.pre_est[hi] - est0 - ctx.live_cut_est
                                         + ind.live_est))
        m.truth_tokens.append(truth)
        m.n_messages.append(n_messages + extra)
        m.n_blocks.append(hi - blocks0 + extra)
        m.bytes_args.append(args[hi] - args0 - cut[1] + w + ind.live_call_bytes)
        m.bytes_args_write.append(w)
        m.bytes_results.append(results[hi] - results0 - cut[3] + ind.live_result_bytes)
        m.bytes_other.append(other[hi] - other0 - cut[0])
        return truth
    truth = ctx.pre_truth[hi] - truth0 - ctx.live_cut_truth + fixed_truth
    if floor:
        truth = m.floored_truth(fixed_truth, truth, floor)
    m.est_tokens.append(fixed_est + (ctx.pre_est[hi] - est0 - ctx.live_cut_est))
    m.truth_tokens.append(truth)
    m.n_messages.append(n_messages)
    m.n_blocks.append(hi - blocks0)
    m.bytes_args.append(args[hi] - args0 - cut[1] + w)
    m.bytes_args_write.append(w)
    m.bytes_results.append(results[hi] - results0 - cut[3])
    m.bytes_other.append(other[hi] - other0 - cut[0])
    return truth
