"""The induced re-reads' schedule (``InduceState.due``) checks exactly the needs that could be
unmet: a replay that checks every need of every block at every request makes the same trace."""

from __future__ import annotations

import pytest

from replay.compiled_engine import choose
from replay.engine import fold
from replay.engine.fold import replay
from replay.engine.induced_state import InduceState, NeedPlan, induce_state
from replay.engine.prepared import PreparedRun
from replay.policy import Policy, load_policy, replace_path
from tests.pure_rerun import ran_pure


def _every_need_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schedule replaced by the plain rule: at every request k, every block needed there,
    in block order (a block still in context whole is met; the check says so)."""

    def every_request(run: PreparedRun, policy: Policy) -> InduceState | None:
        st = induce_state(run, policy)
        if st is not None:
            st.due = {k: [] for k in range(run.n_requests)}
        return st

    monkeypatch.setattr(fold, "induce_state", every_request)
    monkeypatch.setattr(InduceState, "due_at", lambda self, k: _needed_at(self.plan)[k])
    monkeypatch.setattr(InduceState, "schedule", lambda self, b, after: None)


_AT: dict[int, tuple[NeedPlan, list[list[int]]]] = {}


def _needed_at(plan: NeedPlan) -> list[list[int]]:
    """Per request: every block the recorded run needs there, in block order."""
    got = _AT.get(id(plan))
    if got is None or got[0] is not plan:
        at: list[list[int]] = [[] for _ in range(len(plan.turn_of))]
        for b, bn in sorted(plan.needs.blocks.items()):
            for r in bn.need_requests:
                at[r].append(b)
        got = _AT[id(plan)] = (plan, at)
    return got[1]


def _policies() -> list[Policy]:
    out = []
    for name in ("observation-masking", "two-tier-original", "two-tier-corrected", "corecoder",
                 "openhands-condenser-v0", "claude-code-clearing"):
        p = load_policy(name)
        out.append(p)
        # a small window cuts and trims often; a re-call placeholder re-reads at once (copies
        # made outside the schedule); a cap of one leaves needs undone
        small = replace_path(replace_path(p, "behaviour.invited_recall", "immediate"),
                             "behaviour.max_rereads_per_turn", 1)
        out.append(small)
    for frac in (0.05, 0.5):
        p = load_policy("two-tier-corrected")
        out.append(replace_path(replace_path(p, "tiers.0.protect.frac", frac),
                                "tiers.1.trigger.at_tokens", 40_000))
    return out


def test_the_schedule_makes_the_trace_of_checking_every_need(  # type: ignore[no-untyped-def]
        request, monkeypatch) -> None:
    if ran_pure(request, choose().compiled):  # (compiled, fold calls the engine's functions
        return  # straight: the patches below would change nothing)
    logs_corpus, sample_corpus = (request.getfixturevalue(n) for n in ("logs_corpus",
                                                                       "sample_corpus"))
    runs = [(c, r) for c in (logs_corpus, sample_corpus) for r in c.replayable()]
    policies = _policies()
    # a run's policies in a row: its prepared run and need plan are made once, not per policy
    # (the corpus keeps the last 8 prepared runs; there are 37)
    scheduled = {(j, i): replay(c.prepared(r), p, calibration=c.calibration(r))
                 for i, (c, r) in enumerate(runs) for j, p in enumerate(policies)}
    n_induced = sum(sum(t.columns("requests")["induced_rereads"]) for t in scheduled.values())
    assert n_induced > 100  # the comparison covers many re-reads
    _every_need_checked(monkeypatch)
    for i, (c, r) in enumerate(runs):
        for j, p in enumerate(policies):
            every = replay(c.prepared(r), p, calibration=c.calibration(r))
            for table in ("requests", "actions", "evictions"):
                assert scheduled[(j, i)].columns(table) == every.columns(table), (p.name, r)
