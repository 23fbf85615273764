"""Claude Code's time-based microcompact, replayed against the ``system/microcompact_boundary``
records a transcript holds (#26 item 4).

A run whose log recorded microcompactions (``ContextEvent`` kind ``microcompaction``: the first
request after it and the tool calls whose results the model saw as ``[Old tool result content
cleared]``) is replayed under ``MICROCOMPACT_POLICY``; the replay's microcompactions are the
passes of its tiers with an ``idle_minutes`` trigger.  ``MicrocompactCheck`` says at which
requests each side cleared, how many recorded ones the replay cleared at the same request, and
how many of the recorded ``compactedToolIds`` the replay had cleared by then.

Not here: the other fidelity figures (``analysis.fidelity``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.engine.fold import replay
from replay.engine.prepared import Calibration, PreparedRun
from replay.engine.trace import TRIMMED
from replay.policy import Policy, load_policy

MICROCOMPACT_POLICY = "claude-code-clearing"
"""The preset holding Claude Code's time-based microcompact."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MicrocompactCheck:
    """One run's recorded microcompactions against the replay's (requests are first requests
    after each)."""

    policy: str
    recorded_at: tuple[int | None, ...]
    """First request after each recorded microcompaction (None: the run ended first)."""
    replayed_at: tuple[int, ...]
    """Requests before which the replay's idle-trigger tiers cleared results."""
    matched: int
    """Recorded microcompactions the replay also made before the same request."""
    ids_recorded: int
    """Tool calls the records name as cleared (``compactedToolIds``), each once."""
    ids_cleared: int
    """Of those, the calls whose results the replay had cleared by the recorded request."""


def check_microcompactions(run: PreparedRun, events: list[dict[str, Any]],
                           calibration: Calibration | None,
                           policy: Policy | None = None) -> MicrocompactCheck | None:
    """The check of one run from its ``ContextEvent`` rows (None: it recorded none)."""
    recorded = [e for e in events if e["kind"] == "microcompaction"]
    if not recorded:
        return None
    p = policy or load_policy(MICROCOMPACT_POLICY)
    idle = {t.name for t in p.tiers if getattr(getattr(t, "trigger", None), "idle_minutes", None)}
    trace = replay(run, p, calibration=calibration)
    index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
    ev = trace.columns("evictions")
    cleared_at: dict[str, int] = {}
    for m, blk, req, tier, fate in zip(ev["msg"], ev["block"], ev["request"], ev["tier"],
                                       ev["fate"]):
        b = index.get((m, blk))
        if tier in idle and fate == TRIMMED and b is not None and run.call_id[b]:
            cleared_at.setdefault(run.call_id[b], req)
    replayed = tuple(sorted(set(cleared_at.values())))
    at = tuple(e["request"] for e in recorded)
    matched = sum(1 for r in at if r is not None and r in replayed)
    ids: dict[str, int | None] = {}
    for e in recorded:
        for cid in e["call_ids"] or ():
            ids.setdefault(cid, e["request"])
    cleared = sum(1 for cid, r in ids.items()
                  if r is not None and cid in cleared_at and cleared_at[cid] <= r)
    return MicrocompactCheck(policy=p.name, recorded_at=at, replayed_at=replayed,
                             matched=matched, ids_recorded=len(ids), ids_cleared=cleared)


def microcompact_totals(checks: list[MicrocompactCheck]) -> dict[str, Any]:
    """The corpus figures of the runs' checks (``analysis.fidelity.fidelity_totals``)."""
    return {"microcompact_runs": len(checks),
            "microcompact_recorded": sum(len(c.recorded_at) for c in checks),
            "microcompact_replayed": sum(len(c.replayed_at) for c in checks),
            "microcompact_matched": sum(c.matched for c in checks),
            "microcompact_ids_recorded": sum(c.ids_recorded for c in checks),
            "microcompact_ids_cleared": sum(c.ids_cleared for c in checks)}
