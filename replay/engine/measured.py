"""What the replay loop keeps for each request it sends: a list per value, in request order.

``Context.measure`` appends the context's values (tokens by estimate and by truth, messages,
blocks, bytes per category); the loop appends the prefix the request shares with the previous
one and what it invalidated.  ``replay.engine.fold`` hands the lists to the trace as its
``requests`` columns (the cache's read, the cost and the overshoot follow from them, for all
requests at once).  A list per value, not one flat list of rows sliced into columns at the end:
compiled, a row appended as a tuple cost the tuple's making and freeing (~500 instructions a
request) and the slicing ~7 k a replay, more than the appends.

Not here: what each value means (``replay.engine.trace.RequestRow``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
