"""What one replay remembers for its induced re-reads, and what a removal tells it.

Made once per replay by ``induce_state`` (None when the policy's ``behaviour.rereads`` is off,
when the policy has no tier — nothing is ever removed — or when nothing in the run is needed
again: the replay then runs exactly as without the model).  ``removed`` / ``removed_range`` are
called by ``replay.engine.tiers.apply`` — the one place blocks leave the context — with the
request from which the block is gone; a trim by a tier whose placeholder invites a re-call
(``replay.policy.invites``) queues an immediate re-read when ``behaviour.invited_recall`` is
``immediate`` and the block is needed later.

The per-run arrays come from the need rules (``replay.engine.needs``), memoised per run: which
blocks the recorded run needs at each request and which turn each request belongs to; what a
re-read returns is ``replay.engine.refetch``'s.

Not here: acting at a request (``replay.engine.induced``), the live items
(``replay.engine.induced_items``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.engine.needs import RunNeeds, run_needs
from replay.engine.prepared import PreparedRun
from replay.engine.refetch import FileContents, file_contents
from replay.policy import Policy, Trim
from replay.policy.invites import invites_recall


@dataclass(frozen=True, slots=True)
class NeedPlan:
    """The run's needs as the replay loop reads them (policy-independent; memoised per run)."""

    needs: RunNeeds
    contents: FileContents
    """What a re-read returns (``replay.engine.refetch``)."""
    at: list[tuple[int, ...]]
    """Per request: the blocks the recorded run needs there (ascending)."""
    turn_of: list[int]
    """Per request: its turn (a new turn starts at a request after a user text)."""


def need_plan(run: PreparedRun) -> NeedPlan:
    """The run's ``NeedPlan`` (memoised per run)."""
    memo = run.memo("need_plan")
    got = memo.get(None)
    if got is None:
        got = memo[None] = _plan(run)
    assert isinstance(got, NeedPlan)
    return got


def _plan(run: PreparedRun) -> NeedPlan:
    needs = run_needs(run)
    at: list[list[int]] = [[] for _ in range(run.n_requests)]
    for b, bn in needs.blocks.items():
        for r in bn.need_requests:
            at[r].append(b)
    turn_of, turn, prev = [], 0, 0
    role, kind = run.role, run.kind
    for hi in run.req_blocks:
        if any(role[b] == "user" and kind[b] == "text" for b in range(prev, hi)):
            turn += 1
        prev = max(prev, hi)
        turn_of.append(turn)
    return NeedPlan(needs, file_contents(run), [tuple(sorted(a)) for a in at], turn_of)


@dataclass(slots=True)
class InduceState:
    """One replay's induced re-reads in progress."""

    plan: NeedPlan
    cap: int
    """``behaviour.max_rereads_per_turn``."""
    recall_tiers: frozenset[str]
    """Tiers whose placeholder invites a re-call, when ``invited_recall`` is ``immediate``."""
    gone_at: list[int]
    """Per block: the first request whose context lacks it (-1: never removed)."""
    copy: dict[int, int] = field(default_factory=dict)
    """Block → its newest induced re-read (an item of ``Context.induced``)."""
    queue: list[tuple[int, int]] = field(default_factory=list)
    """(request due, block): immediate re-reads a placeholder asked for."""
    turn: int = -1
    used: int = 0
    """Re-reads induced in ``turn`` so far."""
    requests: list[int] = field(default_factory=list)
    """The requests re-reads were induced before, one entry each, with (parallel) the calls,
    their tokens, their cost and what their first call invalidated."""
    n_calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    cost_usd: list[float] = field(default_factory=list)
    invalidated: list[int] = field(default_factory=list)

    def removed(self, blocks: list[int], request: int, tier: str) -> None:
        """``blocks`` were trimmed by ``tier`` and are gone from ``request`` on."""
        gone, needs = self.gone_at, self.plan.needs
        recall = tier in self.recall_tiers
        for b in blocks:
            if gone[b] < 0:
                gone[b] = request
            if recall and needs.first_unmet_need(b, request) is not None:
                self.queue.append((request + 1, b))

    def removed_copy(self, b: int, request: int, tier: str) -> None:
        """The induced re-read of ``b`` was trimmed by ``tier`` (its placeholder may ask again)."""
        if tier in self.recall_tiers and self.plan.needs.first_unmet_need(b, request) is not None:
            self.queue.append((request + 1, b))

    def removed_range(self, lo: int, hi: int, request: int) -> None:
        """Blocks ``[lo, hi)`` were cut and are gone from ``request`` on (a block trimmed
        before keeps its earlier time)."""
        gone = self.gone_at
        gone[lo:hi] = [g if g >= 0 else request for g in gone[lo:hi]]

    def content_block(self, b: int, before: int) -> int:
        """What a re-read of ``b`` returns when made with blocks ``[0, before)`` in the run
        (``replay.engine.refetch``: a file whole as known by then, else ``b``'s own result)."""
        return self.plan.contents.refetch(b, before)


def induce_state(run: PreparedRun, policy: Policy) -> InduceState | None:
    """The state of one replay's induced re-reads (None: none can happen)."""
    behaviour = policy.behaviour
    if not behaviour.rereads or not policy.tiers:
        return None
    plan = need_plan(run)
    if not any(plan.at):
        return None
    recall: frozenset[str] = frozenset()
    if behaviour.invited_recall == "immediate":
        recall = frozenset(t.name for t in policy.tiers if _invites(t))
    return InduceState(plan, behaviour.max_rereads_per_turn, recall, [-1] * run.n_blocks)


def _invites(tier: object) -> bool:
    """Whether a tier's trims leave a text asking for a re-call (trim placeholder or write
    note, a collapse tier's placeholder)."""
    texts = []
    if isinstance(tier, Trim):
        texts = [tier.placeholder.template, tier.write_note]
    elif getattr(tier, "type", "") == "collapse":
        texts = [tier.placeholder.template]  # type: ignore[attr-defined]
    return any(invites_recall(t) is not None for t in texts)
