"""A trim tier's state in one replay: where its passes have looked, its pending candidates, and
what it resolves once (its categories, minimum, protected range, per-run memos).

Not here: the pass itself (``replay.engine.tiers.trim``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.engine.tiers.apply import Candidate
from replay.engine.tiers.trigger import TriggerCheck


@dataclass(slots=True, init=False)
class TrimState:
    """One trim tier's state in one replay (made by ``bind``; resolved at the first pass).

    Made by its own ``__init__``, which sets every field to the default declared here
    (tests/replay/engine/test_own_inits.py checks they agree): compiled, a dataclass's generated
    ``__init__`` runs as Python, an attribute set through the interpreter each field."""

    ready: bool = False
    """Whether the constants below are resolved for this replay."""
    cursor: int = 0
    """The blocks before it were scanned."""
    next_eligible: int = 0
    """The index in ``eligible`` of the first block at or after ``cursor``."""
    pending: list[Candidate] = field(default_factory=list)
    """Candidates (block, est, truth, bytes) found but not applied, in block order."""
    results: list[int] = field(default_factory=list)
    """The run's tool-result blocks of the tier's ``tools`` (for protecting the newest N or a
    budget of them; memoised per run, found at the first pass), then ``n_blocks``: a sentinel
    past any ``hi``."""
    live_first: int = 0
    live_end: int = 0
    """``results[live_first:live_end]``, the live ones at the previous pass: ``lo`` and ``hi``
    only grow, so the next pass walks them forward from there (see ``act``; two ints, not a
    pair: no tuple made a pass)."""
    gain_est: int = 0
    """Estimated tokens the pending candidates would reclaim."""
    epoch: int = -1
    cats: frozenset[int] = frozenset()
    """Byte categories this tier trims."""
    sized_result: list[Candidate | None] = field(default_factory=list)
    """Per-run memo of each result's candidate under this policy, by block (None: not sized
    yet): (block, est, truth, bytes) of its placeholder (the tuple a pass applies, made once;
    a list, not a dict: no int made a lookup)."""
    sized_write: list[Candidate | None] = field(default_factory=list)
    minimum: int = 0
    """Estimated tokens a pass must reclaim, or it is undone."""
    threshold: int = 0
    """The trigger's level (recorded with each action)."""
    eligible: list[int] = field(default_factory=list)
    """The run's blocks this tier could ever trim (category, tool and size), in order, then
    ``n_blocks``: a sentinel past any ``hi`` (a walk forward needs no length check)."""
    protect: tuple[int, int, int, int, bool] = (0, 0, 0, 0, True)
    """The tier's ``protect``, resolved once: messages, estimated tokens (``tokens``, or its
    ``frac`` of the usable window if more; 0: none), tool results, tool-result tokens, newest."""
    induced_cursor: int = 0
    """The induced re-reads before this one were examined (``apply_induced_trims``)."""
    tools: frozenset[str] = frozenset()
    """The tier's ``tools``: only their results count for ``protect.tool_results``."""
    reach_epoch: int = -1
    reach_hi: int = 0
    reach_first: int = 0
    reach_total: int = 0
    """The protected range by tokens at the previous pass: ``Context.epoch`` and ``hi`` then, its
    first block, the estimated tokens from it to ``hi`` when some of them are trimmed; see
    ``_reaching_est``."""
    touch_newest: bool = False
    """The tier may trim the newest output (``protect.newest`` false)."""
    trims_results: bool = False
    """Tool results are among the blocks it trims (and so are induced re-reads)."""
    probed: list[int] | None = None
    """Under a probe, its record of the token protections giving this tier's passes their
    starts (``Probe.tokens_range``; None until the first pass that measures one)."""
    check: TriggerCheck | None = None
    """The tier's trigger, read once (at the first pass: ``trigger_check``)."""
    name: str = ""
    """The tier's name (recorded with each action)."""

    def __init__(self) -> None:
        self.ready = self.touch_newest = self.trims_results = False
        self.cursor = self.next_eligible = self.live_first = self.live_end = self.gain_est = 0
        self.minimum = self.threshold = self.induced_cursor = 0
        self.reach_hi = self.reach_first = self.reach_total = 0
        self.epoch = self.reach_epoch = -1
        self.pending, self.results, self.eligible = [], [], []
        self.sized_result, self.sized_write = [], []
        self.cats, self.tools = frozenset(), frozenset()
        self.protect = (0, 0, 0, 0, True)
        self.check, self.probed, self.name = None, None, ""
