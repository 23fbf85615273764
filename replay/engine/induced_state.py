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
from typing import Any

from replay.engine.fenwick import bisect_left
from replay.engine.needs import RunNeeds, run_needs
from replay.engine.prepared import PreparedRun
from replay.engine.refetch import FileContents, Refetched, file_contents
from replay.policy import Policy, Trim
from replay.policy.invites import invites_recall


@dataclass(frozen=True, slots=True)
class NeedPlan:
    """The run's needs as the replay loop reads them (policy-independent; memoised per run)."""

    needs: RunNeeds
    contents: FileContents
    """What a re-read returns (``replay.engine.refetch``)."""
    turn_of: list[int]
    """Per request: its turn (a new turn starts at a request after a user text)."""
    need_requests: dict[int, tuple[list[int], int]]
    """Block → the requests that need its content (its key), and where the block's own begin
    among them (``BlockNeeds.key_needs``, ``needs_from``: one list a key, shared), for blocks
    needed at least once: what a removal schedules.  (Lists, as ``refetch``'s: compiled, a
    bisection of a list is native code, ``fenwick.bisect_left``, where the ``bisect`` module's
    costs a module lookup and a call, ~850 instructions.)"""
    refetch: dict[int, tuple[list[int], int]]
    """Block → the requests that fetched its content (its key) again, and where the block's own
    begin among them (``BlockNeeds.refetches``, ``refetch_from``: one list a key, shared), for
    every fetched block (``RunNeeds.blocks``'s)."""
    needed: list[int]
    """The blocks of ``need_requests``, ascending (a cut schedules those in its range)."""


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
    turn_of, turn, prev = [], 0, 0
    role, kind = run.role, run.kind
    for hi in run.req_blocks:
        if any(role[b] == "user" and kind[b] == "text" for b in range(prev, hi)):
            turn += 1
        prev = max(prev, hi)
        turn_of.append(turn)
    need_requests = {b: (bn.key_needs.requests, bn.needs_from)
                     for b, bn in needs.blocks.items()
                     if bn.needs_from < len(bn.key_needs.requests)}
    refetch = {b: (bn.refetches.requests, bn.refetch_from) for b, bn in needs.blocks.items()}
    return NeedPlan(needs, file_contents(run), turn_of, need_requests, refetch,
                    sorted(need_requests))


@dataclass(slots=True, init=False)
class InduceState:
    """One replay's induced re-reads in progress.

    Made by its own ``__init__``, which sets every field that declares a default to it
    (tests/replay/engine/test_own_inits.py checks they agree): compiled, a dataclass's generated
    ``__init__`` runs as Python, an attribute set through the interpreter each field."""

    plan: NeedPlan
    cap: int
    """``behaviour.max_rereads_per_turn``."""
    recall_tiers: frozenset[str]
    """Tiers whose placeholder invites a re-call, when ``invited_recall`` is ``immediate``."""
    gone_at: list[int]
    """Per block: the first request whose context lacks it (-1: never removed), kept for the
    blocks of ``NeedPlan.need_requests`` only (no other block's need is ever checked)."""
    copy: dict[int, int] = field(default_factory=dict)
    """Block → its newest induced re-read (an item of ``Context.induced``)."""
    file_copy: dict[str, int] = field(default_factory=dict)
    """File key (``path:<file>``) → the newest induced re-read of the file (the file whole as
    known then, whichever of its blocks it was made for)."""
    queue: list[tuple[int, int]] = field(default_factory=list)
    """(request due, block): immediate re-reads a placeholder asked for."""
    turn: int = -1
    used: int = 0
    """Re-reads induced in ``turn`` so far."""
    requests: list[int] = field(default_factory=list)
    """The requests re-reads were induced before, one entry each, with (parallel) the calls,
    their tokens and what their first call invalidated."""
    n_calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    invalidated: list[int] = field(default_factory=list)
    call_sent: list[int] = field(default_factory=list)
    """Every inserted call, in order (``n_calls`` of them per entry of ``requests``): the true
    tokens it sent, the prefix its cache shared with the call before, its output tokens (priced
    with the requests, in one batch, at the end)."""
    call_common: list[int] = field(default_factory=list)
    call_output: list[int] = field(default_factory=list)
    due: dict[int, list[int]] = field(default_factory=dict)
    """Request → removed blocks whose need there is to be checked (``replay.engine.induced``;
    an entry is stale unless ``check_at`` of its block names that request).  Only a removed
    block can have an unmet need, so a block is scheduled when it goes, at its first need from
    ``now`` on; after a check, at its next need while the need could become unmet, when its
    re-read goes while that copy stands for it, never again once the recorded run fetched it
    itself (``induced.check_due``)."""
    check_at: list[int] = field(default_factory=list)
    """Per block: the request whose need is checked next (-1: none scheduled)."""
    now: int = 0
    """The first request whose re-reads were not decided yet (the fold sets it)."""
    sizes: dict[Any, Any] | None = None
    """What a re-read adds, memoised per run and counts (``replay.engine.induced._sizes``; made
    at the first re-read)."""

    def __init__(self, plan: NeedPlan, cap: int, recall_tiers: frozenset[str],
                 gone_at: list[int], check_at: list[int] | None = None) -> None:
        self.plan, self.cap, self.recall_tiers, self.gone_at = plan, cap, recall_tiers, gone_at
        self.check_at = check_at if check_at is not None else []
        self.copy, self.file_copy, self.due = {}, {}, {}
        self.queue, self.requests, self.n_calls, self.tokens, self.invalidated = [], [], [], [], []
        self.call_sent, self.call_common, self.call_output = [], [], []
        self.turn, self.used, self.now, self.sizes = -1, 0, 0, None

    def removed(self, blocks: list[int], request: int, tier: str) -> None:
        """``blocks`` were trimmed by ``tier`` and are gone from ``request`` on.  (Nothing to do
        unless one of them is needed or ``tier`` invites a re-call: ``apply_trims`` checks that
        first for a one-block trim, a call saved at most trims.)"""
        gone, need_requests = self.gone_at, self.plan.need_requests
        for b in blocks:
            if gone[b] < 0 and b in need_requests:
                gone[b] = request
                self.schedule(b, self.now)
        if tier in self.recall_tiers:
            needs = self.plan.needs
            for b in blocks:
                if needs.first_unmet_need(b, request) is not None:
                    self.queue.append((request + 1, b))

    def schedule(self, b: int, after: int) -> None:
        """Check removed block ``b`` at its first need at or after request ``after`` (none:
        nothing scheduled)."""
        reqs, first = self.plan.need_requests[b]  # (its key's: the block's own from ``first``)
        i = bisect_left(reqs, after, first, len(reqs))
        if i == len(reqs):
            self.check_at[b] = -1
            return
        r = reqs[i]
        if self.check_at[b] != r:
            self.check_at[b] = r
            got = self.due.get(r)
            if got is None:
                self.due[r] = [b]
            else:
                got.append(b)

    def due_at(self, k: int) -> list[int]:
        """The blocks whose need at request ``k`` is to be checked, ascending, each once (none
        scheduled after it until ``schedule`` is called again)."""
        due = self.due
        got = due.get(k)  # (get and del: compiled, pop() is a method call by name)
        if got is None:
            return []
        del due[k]
        check_at, out = self.check_at, []
        if len(got) == 1:  # the usual one block (compiled, sorted(set()) costs more than it)
            b = got[0]
            if check_at[b] == k:
                check_at[b] = -1
                out.append(b)
            return out
        for b in sorted(set(got)):
            if check_at[b] == k:
                check_at[b] = -1
                out.append(b)
        return out

    def removed_copy(self, b: int, item: int, request: int, tier: str) -> None:
        """The induced re-read ``item`` of ``b`` was trimmed by ``tier`` (its placeholder may ask
        again).  (Nothing to do unless ``tier`` invites a re-call or ``item`` is ``b``'s newest
        copy: ``replay.engine.tiers.apply`` checks that first.)"""
        if tier in self.recall_tiers and self.plan.needs.first_unmet_need(b, request) is not None:
            self.queue.append((request + 1, b))
        self.copy_gone(b, item)

    def copy_gone(self, b: int, item: int) -> None:
        """The induced re-read ``item`` of ``b`` left the context or was trimmed: when it was
        the newest copy, ``b``'s later needs are checked again."""
        if self.copy.get(b) == item and b in self.plan.need_requests:
            self.schedule(b, self.now)

    def removed_range(self, lo: int, hi: int, request: int) -> None:
        """Blocks ``[lo, hi)`` were cut and are gone from ``request`` on (a block trimmed
        before keeps its earlier time)."""
        gone, needed = self.gone_at, self.plan.needed
        n = len(needed)
        for b in needed[bisect_left(needed, lo, 0, n):bisect_left(needed, hi, 0, n)]:
            if gone[b] < 0:
                gone[b] = request
                self.schedule(b, self.now)

    def content(self, run: PreparedRun, b: int, before: int) -> Refetched:
        """What a re-read of ``b`` returns when made with blocks ``[0, before)`` in the run
        (``replay.engine.refetch``: a file whole as known by then, else ``b``'s own result)."""
        return self.plan.contents.refetch(run, b, before)


def induce_state(run: PreparedRun, policy: Policy) -> InduceState | None:
    """The state of one replay's induced re-reads (None: none can happen)."""
    behaviour = policy.behaviour
    if not behaviour.rereads or not policy.tiers:
        return None
    plan = need_plan(run)
    if not plan.need_requests:  # (nothing in the run is ever needed)
        return None
    recall: frozenset[str] = frozenset()
    if behaviour.invited_recall == "immediate":
        recall = frozenset(t.name for t in policy.tiers if _invites(t))
    return InduceState(plan, behaviour.max_rereads_per_turn, recall, [-1] * run.n_blocks,
                       check_at=[-1] * run.n_blocks)


def _invites(tier: object) -> bool:
    """Whether a tier's trims leave a text asking for a re-call (trim placeholder or write
    note, a collapse tier's placeholder)."""
    texts = []
    if isinstance(tier, Trim):
        texts = [tier.placeholder.template, tier.write_note]
    elif getattr(tier, "type", "") == "collapse":
        texts = [tier.placeholder.template]  # type: ignore[attr-defined]
    return any(invites_recall(t) is not None for t in texts)
