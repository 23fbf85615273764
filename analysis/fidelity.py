"""Fidelity: does replaying a harness's own policy reproduce its log?

For every run with recorded usage, ``fidelity`` replays the policy of the harness that recorded
it (``HARNESS_POLICY``) and compares the trace with the log:

- ``placement_error_requests``: first replayed compaction − first recorded one, in requests
  (None when either side has none; ``recorded_compaction`` / ``replayed_compaction`` say which;
  ``recorded_trigger``: auto or manual, from the run's compaction event);
- ``post_size_error_median_frac``: median of (truth − recorded) / recorded over the requests
  from the first recorded compaction on (None without a recorded compaction);
- ``cache_read_error_median_frac``: median |simulated cache read − recorded cache read| /
  recorded input, over the requests that recorded a cache read;
- ``held_out_error_frac``: the held-out error of the truth the replay uses — the run's own
  calibration fitted on the first half of its pre-compaction requests, median error on the second
  half (``replay.engine.calibrate``) of the anchored model for ``anchored`` truth
  (``held_out_anchored_error_frac``) or of overhead + scale × count for ``fitted`` truth
  (``held_out_fitted_error_frac``); both are given.  None with too few points, a corpus fit, or a
  truth that does not use the fit (``anchored-unscaled``: the fit is flagged, its scale unused).

- ``reread_recall`` / ``reread_precision`` / ``reread_tokens_error_frac``: after every compaction
  the harness recorded, the files the need rules (``replay.engine.needs``) predict the agent
  fetched again against those it did, pooled over the run's compactions
  (``analysis.reread_fidelity``; None without a compaction that removed something, or with
  nothing recorded / predicted); ``rereads`` holds the counts, ``rereads_naive`` the same under the
  naive rule of issue #22 (``NAIVE_RULES``), to compare with.

``fidelity_totals`` gives the corpus figures against the targets of issues #15 and #22.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from analysis.fidelity_recorded import first_trigger, post_tokens_error, pre_tokens
from analysis.microcompact_check import (
    MicrocompactCheck,
    check_microcompactions,
    microcompact_totals,
)
from analysis.reread_fidelity import NO_REREADS, RereadFidelity, compaction_rereads, pooled
from analysis.truth_notes import unrecorded_count
from replay.corpus import Corpus
from replay.engine.calibrate import first_half_fit
from replay.engine.fold import replay
from replay.engine.needs import NAIVE_RULES
from replay.engine.prepared import PreparedRun
from replay.engine.trace import CUT_KINDS
from replay.policy import Policy, Summarise, load_policy
from replay.policy.harness import largest_prompt, resolve

HARNESS_POLICY: dict[str, str] = {"claude_code": "claude-code", "codex": "codex",
                                  "gemini_cli": "gemini-cli"}
"""The preset reproducing each format's harness; formats not listed use ``none`` (mini-swe-agent
and OpenHands' default condenser do not manage the context)."""
PLACEMENT_TOLERANCE_REQUESTS = 3
POST_SIZE_TARGET_FRAC = 0.05
CACHE_READ_TARGET_FRAC = 0.01
HELD_OUT_TARGET_FRAC = 0.015
REREAD_RECALL_TARGET = 0.85
REREAD_PRECISION_TARGET = 0.75
REREAD_TOKENS_TARGET_FRAC = 0.30
"""Issue #22's targets for re-reads predicted after recorded compactions (pooled recall and
precision; tokens within ±30 % per run)."""
THRESHOLD_TOLERANCE_FRAC = 0.05
"""A recorded compaction this far (relative) from the policy's trigger level, or a context this
far past it with no compaction, comes from a harness configured otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFidelity:
    """One run's figures (None: cannot be computed for this run)."""

    run_id: str
    source: str
    policy: str
    truth_source: str
    n_requests: int
    recorded_compaction: int | None
    """First request after the first harness compaction."""
    recorded_trigger: str
    """``auto`` or ``manual`` as the log recorded that compaction ('' when not recorded)."""
    replayed_compaction: int | None
    """Request before which the replay first cut the context."""
    placement_error_requests: int | None
    post_size_error_median_frac: float | None
    cache_read_error_median_frac: float | None
    held_out_error_frac: float | None
    """Held-out error of the truth this replay uses (see the module docstring)."""
    held_out_anchored_error_frac: float | None = None
    """Held-out error of anchored truth (``Calibration.held_out_anchored_error_frac``)."""
    held_out_fitted_error_frac: float | None = None
    """Held-out error of overhead + scale × count (``Calibration.held_out_error_frac``)."""
    placement_half_fit_error_requests: int | None = None
    """Placement error with a calibration fitted on the first half of the points only."""
    recorded_pre_tokens: int | None = None
    """The level the harness compacted at: the first compaction's own recorded count
    (``ContextEvent.pre_tokens``: Claude Code's ``compactMetadata.preTokens``, the count it
    compared with its threshold) where the log has it, else the recorded prompt of the last
    request with usage before it; for a run the harness never compacted, its largest recorded
    prompt.  ``recorded_pre_basis`` says which."""
    recorded_pre_basis: str = ""
    """``compaction`` (the event's recorded count), ``last request`` or ``largest request``
    (``… with its output and earlier turns' reasoning`` for Codex, what it compared); '' when
    ``recorded_pre_tokens`` is unknown."""
    post_tokens_error_frac: float | None = None
    """(replayed context right after its first compaction − the first recorded compaction's
    own post-compaction count) / that count, where the log records one (Claude Code 2.1.2xx
    ``compactMetadata.postTokens``: the client's rough count of what it kept, not an API
    figure; None when not recorded or the replay did not compact)."""
    policy_trigger_tokens: int | None = None
    """Level the policy's first summarise tier fires at (None: none, or not a token level)."""
    microcompact: MicrocompactCheck | None = None
    """The run's recorded microcompactions against a replay under Claude Code's time-based
    microcompact (``analysis.microcompact_check``; None: the log recorded none)."""
    trigger_basis: str = ""
    """How the policy's trigger level was reached for this run when the policy follows its
    harness's arithmetic (``replay.policy.harness``: version, model, window, settings); ''
    for a fixed level."""
    trigger_estimated: bool = False
    """A figure of that arithmetic is not documented for the run's version (or the version is
    not recorded)."""
    window_from_table: bool = False
    """The log records no window: the harness's model table gave it (Codex; counted)."""
    summaries_encrypted: int = 0
    """Recorded compactions whose summary was encrypted in the log, sized by Codex's estimate
    from its encrypted bytes (counted)."""
    points_estimated: int = 0
    """Calibration points whose context holds blocks sized from redaction markers: their
    held-out error measures the marker estimate (``replay.ingest.redaction``), not the model."""
    reread_recall: float | None = None
    """Files the agent fetched again after the run's recorded compactions that the need rules
    predicted (``analysis.reread_fidelity``; None: none fetched again, or no compaction)."""
    reread_precision: float | None = None
    """Files predicted that the agent fetched again (None: none predicted)."""
    reread_tokens_error_frac: float | None = None
    """(predicted − recorded) / recorded re-read tokens after the compactions (None: none)."""
    rereads: RereadFidelity | None = None
    """The counts behind the three (None: no recorded compaction removed anything)."""
    rereads_naive: RereadFidelity | None = None
    """The same counts under the naive rule (``replay.engine.needs.NAIVE_RULES``)."""
    n_requests_unrecorded: int = 0
    """Requests that recorded no usage, sized as estimates under anchored truth
    (``analysis.truth_notes.unrecorded_count``: the count ``replay run``'s note gives)."""

    @property
    def not_judged_reason(self) -> str:
        """Why the policy is evidently not this run's harness's ('' when nothing says so): the
        harness auto-compacted and the policy has no token-level summarise tier; it
        auto-compacted away from the policy's level; or it let the context pass that level
        without compacting."""
        pre, level, name = self.recorded_pre_tokens, self.policy_trigger_tokens, self.policy
        auto = self.recorded_compaction is not None and self.recorded_trigger == "auto"
        if auto and level is None:
            return (f"its harness auto-compacted; {name} has no summarise tier at a token "
                    "level (no preset reproduces this harness)")
        if pre is None or level is None:
            return ""
        if auto and abs(pre - level) > THRESHOLD_TOLERANCE_FRAC * level:
            why = f" ({self.trigger_basis})" if self.trigger_basis else ""
            own = " (its compaction's own count)" if self.recorded_pre_basis == "compaction" \
                else ""
            return (f"compacted at {pre:,} recorded tokens{own}, {name} at {level:,}{why}: its "
                    "harness was configured otherwise (replay it with its own trigger level: "
                    "--policy)")
        if self.recorded_compaction is None and pre > (1 + THRESHOLD_TOLERANCE_FRAC) * level:
            return (f"reached {pre:,} recorded tokens without compacting, {name} compacts at "
                    f"{level:,}: its harness was configured otherwise (--policy)")
        return ""


def fidelity(corpus: Corpus, run_ids: list[str] | None = None, *,
             policy: Policy | None = None) -> list[RunFidelity]:
    """The figures of every run of ``corpus`` (or of ``run_ids``, in that order) that recorded
    usage, each replayed under its format's harness preset (``HARNESS_POLICY``) or, when given,
    under ``policy`` — the user's own configuration of their harness."""
    fmts = dict(zip(corpus.run_ids, corpus.runs["format"].to_pylist()))
    sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
    out = []
    replayable = set(corpus.replayable())
    for rid in corpus.replayable() if run_ids is None else run_ids:
        if rid not in replayable:
            continue
        run = corpus.prepared(rid)
        if not any(v is not None and v > 0 for v in run.recorded_input):
            continue
        harness = policy or load_policy(HARNESS_POLICY.get(fmts[rid], "none"))
        resolved = (resolve(harness, run.harness, run.model, largest_prompt(run.recorded_input),
                            window_tokens=run.window_tokens,
                            compact_limit_tokens=run.compact_limit_tokens)
                    if harness.harness is not None else None)
        name, cal = harness.name, corpus.calibration(rid)
        trace = replay(run, harness, calibration=cal)
        req = trace.columns("requests")
        rec_at, rep_at = run.first_compaction_request, _first_cut(trace)
        half_at = None
        if rec_at is not None:
            half = first_half_fit(run)
            if half is not None:
                half_at = _first_cut(replay(run, harness, calibration=half))
        truth, rec = req["truth_tokens"], run.recorded_input
        post = None
        if rec_at is not None:
            post = _median([(truth[k] - rec[k]) / rec[k] for k in range(rec_at, run.n_requests)
                            if rec[k]])
        cache = _median([abs(c - r) / i for c, r, i in zip(
            req["cached_tokens"], run.recorded_cache_read, rec) if r is not None and i])
        own = cal if cal is not None and cal.source == "run" else None
        anchored = own.held_out_anchored_error_frac if own is not None else None
        fitted = own.held_out_error_frac if own is not None else None
        truth_source = req["truth_source"][0]
        rereads, naive = _rereads(run)
        events = corpus.events(rid).to_pylist()
        micro = check_microcompactions(run, events, cal)
        pre, pre_basis = pre_tokens(run, events, harness)
        out.append(RunFidelity(
            run_id=rid, source=sources[rid], policy=name, truth_source=truth_source,
            n_requests=run.n_requests, recorded_compaction=rec_at,
            recorded_trigger=first_trigger(events) if rec_at is not None else "",
            replayed_compaction=rep_at,
            placement_error_requests=(rep_at - rec_at if rec_at is not None and rep_at is not None
                                      else None),
            post_size_error_median_frac=post, cache_read_error_median_frac=cache,
            held_out_error_frac={"anchored": anchored, "fitted": fitted}.get(truth_source),
            held_out_anchored_error_frac=anchored, held_out_fitted_error_frac=fitted,
            placement_half_fit_error_requests=(half_at - rec_at if rec_at is not None
                                               and half_at is not None else None),
            recorded_pre_tokens=pre, recorded_pre_basis=pre_basis,
            post_tokens_error_frac=post_tokens_error(trace, events),
            policy_trigger_tokens=_trigger_tokens(resolved.policy if resolved else harness),
            trigger_basis=resolved.basis if resolved else "",
            trigger_estimated=resolved.estimated if resolved else False,
            window_from_table=resolved.window_from_table if resolved else False,
            summaries_encrypted=sum(run.harness_summary_encrypted),
            points_estimated=own.n_points_estimated if own is not None else 0,
            reread_recall=rereads.recall if rereads else None,
            reread_precision=rereads.precision if rereads else None,
            reread_tokens_error_frac=rereads.tokens_error_frac if rereads else None,
            rereads=rereads, rereads_naive=naive, microcompact=micro,
            n_requests_unrecorded=unrecorded_count(truth_source, rec)))
    return out


def _rereads(run: PreparedRun) -> tuple[RereadFidelity | None, RereadFidelity | None]:
    """The run's re-read figures under the rules and the naive rule (None: no compaction)."""
    rows = compaction_rereads(run)
    if not rows:
        return None, None
    return pooled(rows), pooled(compaction_rereads(run, rules=NAIVE_RULES))


def _first_cut(trace: Any) -> int | None:
    """Request before which the replay first cut the context (None: never)."""
    act = trace.columns("actions")
    return min((r for r, k, u in zip(act["request"], act["kind"], act["undone"])
                if k in CUT_KINDS and not u), default=None)


def _trigger_tokens(policy: Policy) -> int | None:
    first = next((t for t in policy.tiers if isinstance(t, Summarise)), None)
    return None if first is None else first.trigger.level_tokens(policy.usable_tokens)


def fidelity_totals(rows: list[RunFidelity], runs_in_corpus: int | None = None) -> dict[str, Any]:
    """Corpus figures and, per target, how many runs meet it of those it applies to.  The
    placement and post-compaction targets apply to auto-compacted runs (a manual compaction is
    the user's choice, not the policy's); ``runs_manual`` / ``runs_trigger_unknown`` count the
    others.  ``runs_in_corpus``: the runs ``rows`` were chosen from (those without recorded
    usage or without a request have no row), so that the runs left out are counted."""
    auto = [r for r in rows if r.recorded_compaction is not None and r.recorded_trigger == "auto"]
    compacted = [r for r in auto if not r.not_judged_reason]
    placeable = [r for r in compacted if r.recorded_compaction]  # not one the log begins after
    placed = [r for r in placeable if r.placement_error_requests is not None
              and abs(r.placement_error_requests) <= PLACEMENT_TOLERANCE_REQUESTS]
    half = [r for r in placeable if r.placement_half_fit_error_requests is not None
            and abs(r.placement_half_fit_error_requests) <= PLACEMENT_TOLERANCE_REQUESTS]
    post = [r.post_size_error_median_frac for r in compacted
            if r.post_size_error_median_frac is not None]
    cache = [r.cache_read_error_median_frac for r in rows
             if r.cache_read_error_median_frac is not None and not r.not_judged_reason]
    held = [r.held_out_error_frac for r in rows if r.held_out_error_frac is not None]
    truths: dict[str, int] = {}
    for r in rows:
        if r.held_out_error_frac is not None:
            truths[r.truth_source] = truths.get(r.truth_source, 0) + 1
    anchored = [r.held_out_anchored_error_frac for r in rows
                if r.held_out_anchored_error_frac is not None]
    fitted = [r.held_out_fitted_error_frac for r in rows
              if r.held_out_fitted_error_frac is not None]
    rereads = [r.rereads for r in rows if r.rereads is not None]
    naive = [r.rereads_naive for r in rows if r.rereads_naive is not None]
    per_run = [x.tokens_error_frac for x in rereads if x.tokens_error_frac is not None]
    return {
        "runs": len(rows),
        "runs_in_corpus": runs_in_corpus,
        "requests_unrecorded": {r.run_id: r.n_requests_unrecorded for r in rows
                                if r.n_requests_unrecorded},
        "runs_compacted": len(compacted),
        "runs_not_judged": [
            {"source": r.source, "reason": r.not_judged_reason,
             "compacted": r.recorded_compaction is not None,
             "recorded_pre_tokens": r.recorded_pre_tokens,
             "recorded_pre_basis": r.recorded_pre_basis,
             "policy_trigger_tokens": r.policy_trigger_tokens,
             "placement_error_requests": r.placement_error_requests,
             "post_size_error_median_frac": r.post_size_error_median_frac,
             "cache_read_error_median_frac": r.cache_read_error_median_frac}
            for r in rows if r.not_judged_reason],
        "runs_manual": sum(r.recorded_trigger == "manual" for r in rows),
        "runs_trigger_unknown": sum(r.recorded_compaction is not None and r.recorded_trigger == ""
                                    for r in rows),
        "placement_within_tolerance": len(placed),
        "placement_runs": len(placeable),
        "placement_missed": sum(r.replayed_compaction is None for r in placeable),
        "placement_half_fit_within_tolerance": len(half),
        "post_size_within_target": sum(abs(x) <= POST_SIZE_TARGET_FRAC for x in post),
        "post_size_error_median_frac": _median(post),
        "post_tokens_runs": len(own_post := [r.post_tokens_error_frac for r in rows
                                             if r.post_tokens_error_frac is not None]),
        "post_tokens_error_median_frac": _median(own_post),
        "cache_read_runs": len(cache),
        "cache_read_within_target": sum(x <= CACHE_READ_TARGET_FRAC for x in cache),
        "cache_read_error_median_frac": _median(cache),
        "held_out_runs": len(held),
        "held_out_runs_by_truth": dict(sorted(truths.items())),
        "held_out_within_target": sum(x <= HELD_OUT_TARGET_FRAC for x in held),
        "held_out_redacted_runs": sum(r.held_out_error_frac is not None and r.points_estimated > 0
                                      for r in rows),
        "held_out_error_median_frac": _median(held),
        "held_out_anchored_runs": len(anchored),
        "held_out_anchored_within_target": sum(x <= HELD_OUT_TARGET_FRAC for x in anchored),
        "held_out_anchored_error_median_frac": _median(anchored),
        "held_out_fitted_runs": len(fitted),
        "held_out_fitted_within_target": sum(x <= HELD_OUT_TARGET_FRAC for x in fitted),
        "held_out_fitted_error_median_frac": _median(fitted),
        **_reread_totals("reread", rereads),
        "reread_tokens_runs": len(per_run),
        "reread_tokens_within_target": sum(abs(x) <= REREAD_TOKENS_TARGET_FRAC for x in per_run),
        **_reread_totals("reread_naive", naive),
        **microcompact_totals([r.microcompact for r in rows if r.microcompact is not None]),
        "runs_window_from_table": sum(r.window_from_table for r in rows),
        "summaries_encrypted": sum(r.summaries_encrypted for r in rows),
    }



def _reread_totals(prefix: str, runs: list[RereadFidelity]) -> dict[str, Any]:
    total = sum(runs, NO_REREADS)
    return {f"{prefix}_runs": len(runs), f"{prefix}_compactions": total.compactions,
            f"{prefix}_recorded": total.recorded, f"{prefix}_predicted": total.predicted,
            f"{prefix}_hits": total.hits, f"{prefix}_recall": total.recall,
            f"{prefix}_precision": total.precision,
            f"{prefix}_tokens_error_frac": total.tokens_error_frac,
            f"{prefix}_edits_unapplied": total.edits_unapplied,
            f"{prefix}_sized_parts_only": total.sized_parts_only,
            f"{prefix}_sized_as_lost_before": total.sized_as_lost_before,
            f"{prefix}_rereads_failed": total.rereads_failed}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
