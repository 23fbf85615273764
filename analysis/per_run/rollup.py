"""The per-run roll-up of ``replay run``: a few of ``metrics()``'s columns, under the same names.

One row per (run, policy): the run's label, source and format, the metrics of
``ROLLUP_METRICS`` — computed by their analyses' fast functions
(``analysis.per_run.part_metrics``, the very code sweeps use, so ``replay run``,
``metrics()``, ``check`` and the report agree by construction) — and which truth
judged them (``truth_source``, ``replay.engine.truth``), and the issues stored for its log file
(``source_issues_n``, ``replay.corpus.source_issues``: in the row, so ``summary.json`` and
``--json`` hold the same rows).  A value that is undefined
(a cached share of a run that sent no token) is unknown (None), never 0.

A run with no recorded request is a row too, its ``note`` ``replay.corpus.NOT_REPLAYED`` (null for
a replayed run): request, token, overshoot, summary and trim counts and cost 0 (there is nothing
to send), peak, largest overshoot, cached share and truth unknown.

``RUN_ROLLUP`` is what ``replay.apply_policy.run`` / ``run_to`` take to make these rows:
the replay layer streams the traces, this layer says what a row holds.

Not here: replaying and writing traces (``replay.apply_policy``), printing (``replay.cli``).
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from analysis.per_run import PARTS, SPECS, known, part_metrics
from analysis.per_run.notes import estimated_text_by_run, figure_notes, unknown_gaps
from analysis.truth_notes import run_note, truth_of
from replay.apply_policy import RunMeta, RunRollup
from replay.corpus import NOT_REPLAYED, Corpus, not_replayed
from replay.engine.tiers.recorded import MANUAL_TIER
from replay.engine.trace import Trace
from replay.ingest.timestamps import WINDOW_SAID
from replay.policy import Policy
from replay.policy.harness import TODAY_LEVEL_TOKENS, largest_prompt, resolve

ROLLUP_METRICS: tuple[str, ...] = known(
    "n_requests", "tokens_sent", "peak_tokens", "overshoots_n", "overshoots_max_tokens",
    "n_summaries", "n_trims", "cache_invalidation_cached_share", "cost_usd",
    "induced_rereads_n", "induced_rereads_tokens", "induced_rereads_estimated_n")
"""The metrics a ``replay run`` row shows (names and values as in ``metrics()``)."""
_PARTS = tuple(p for p in PARTS if set(p.names) & set(ROLLUP_METRICS))
if any(p.needs_facts for p in _PARTS):  # the roll-up reads no store table: replay run's speed
    raise RuntimeError("a replay run roll-up metric needs the run's facts")
ROLLUP_SCHEMA = pa.schema(
    [(c, pa.string()) for c in ("run_id", "run", "source", "format", "policy")]
    + [(c, pa.float64() if SPECS[c].dtype == "float64" else pa.int64())
       for c in ROLLUP_METRICS]
    + [("truth_source", pa.string()), ("note", pa.string()), ("source_issues_n", pa.int64())])
"""One row per (run, policy), replayed or not."""
_UNKNOWN_WITHOUT_REQUESTS = frozenset({"peak_tokens", "overshoots_max_tokens",
                                       "cache_invalidation_cached_share"})
"""Metrics that are unknown, not 0, for a run with no request."""


def replayed_rows(trace: Trace, policy: Policy, meta: RunMeta) -> list[dict[str, Any]]:
    """The roll-up row of one run's replay (none when the trace has no request).

    Args:
        trace: the replay of one run under ``policy``.
        policy: the replayed policy.
        meta: (label, source, format, …) of every run, by run id
            (``replay.apply_policy.run_meta``).

    Returns:
        One row in ``ROLLUP_SCHEMA``'s columns, or none.
    """
    rq = trace.columns("requests")
    if not rq["request"]:
        return []
    rid = rq["run_id"][0]
    if any(r != rid for r in rq["run_id"]):
        raise ValueError("replayed_rows takes the trace of one run")
    values = part_metrics(trace, policy, _PARTS)
    label, source, fmt, harness, model, issues = meta.get(rid, (rid, "", "", "", "", None))
    row: dict[str, Any] = {"run_id": rid, "run": label, "source": source, "format": fmt,
                           "policy": policy.name}
    for name in ROLLUP_METRICS:
        v = values[name]
        row[name] = None if isinstance(v, float) and math.isnan(v) else v
    row["truth_source"] = truth_of(trace)
    row["note"] = replay_note(trace, policy, harness, model)
    row["source_issues_n"] = issues
    return [row]


def replay_note(trace: Trace, policy: Policy, harness: str, model: str) -> str | None:
    """What a run's figures under ``policy`` rest on beyond the log (``replay run``'s ``note``
    column, the report's notes): recorded /compacts replayed, the level a harness-following
    policy took, requests an idle trigger cannot judge, and the truth's estimates
    (``analysis.truth_notes.run_note``); None when nothing.

    Args:
        trace: the replay of one run.
        harness, model: the run's, as recorded (``replay.apply_policy.run_meta``).
    """
    rq = trace.columns("requests")
    notes = [_manual_note(trace), _harness_note(policy, harness, model, largest_prompt(
        rq["recorded_input_tokens"])),
             run_note(truth_of(trace), sum(rq["truth_floored"]), rq["recorded_input_tokens"]),
             _idle_note(trace, policy)]  # (last: a table cuts a long note at its end)
    return "; ".join(n for n in notes if n) or None


def _harness_note(policy: Policy, harness: str, model: str,
                  largest_prompt_tokens: int | None) -> str | None:
    """The level a policy following its harness's arithmetic took for this run (its window and
    why are in the basis), when it is not today's default or rests on a figure not documented
    for the run's version."""
    if policy.harness is None:
        return None
    r = resolve(policy, harness, model, largest_prompt_tokens)
    if r.level_tokens == TODAY_LEVEL_TOKENS and not r.estimated:
        return None
    return (f"{policy.harness.tier} at {r.level_tokens:,}: {r.basis}"
            + (" (a figure not documented for this version: estimated)" if r.estimated else ""))


def _idle_note(trace: Trace, policy: Policy) -> str | None:
    """A run's requests with no idle gap the replay can read (``notes.unknown_gaps``), said
    under any policy: the prefix cache never expires there (nor does an ``idle_minutes``
    trigger fire, when the policy has one)."""
    ts = trace.columns("requests")["ts"]
    missing, back = unknown_gaps(ts)
    idle = any(getattr(getattr(t, "trigger", None), "idle_minutes", None) for t in policy.tiers)
    what = "the cache never expires" + (" and the idle_minutes trigger never fires"
                                        if idle else "")
    notes = []
    if missing:
        notes.append(f"{missing} of {len(ts)} requests have no timestamp (or one not ISO "
                     f"8601, or {WINDOW_SAID}): no idle gap there ({what} there)")
    if back:
        notes.append(f"{back} request(s) timestamped before the request before (the clock went "
                     f"back): no idle gap there, the next measured from it")
    return "; ".join(notes) or None


def _manual_note(trace: Trace) -> str | None:
    """What the replay took from the log whatever the policy: the user's /compact
    (``replay.engine.tiers.recorded``), counted in the summaries too."""
    act = trace.columns("actions")
    undone = [u for t, u in zip(act["tier"], act["undone"]) if t == MANUAL_TIER]
    if not undone:
        return None
    done = undone.count(False)
    note = f"{done} /compact replayed as recorded (in n_summaries; manual_compactions: keep)"
    if done < len(undone):
        note += f"; {len(undone) - done} not applied: the policy had already cut past it"
    return note


def not_replayed_rows(corpus: Corpus, policy: Policy, meta: RunMeta) -> list[dict[str, Any]]:
    """A row for each run with no recorded request (``NOT_REPLAYED``), by run id: never dropped
    from the roll-up silently."""
    left = sorted(set(corpus.run_ids) - set(corpus.replayable()))
    rows = []
    for rid in left:
        label, source, fmt, _, _, issues = meta.get(rid, (rid, "", "", "", "", None))
        row: dict[str, Any] = {"run_id": rid, "run": label, "source": source, "format": fmt,
                               "policy": policy.name}
        for name in ROLLUP_METRICS:
            zero = 0.0 if SPECS[name].dtype == "float64" else 0
            row[name] = None if name in _UNKNOWN_WITHOUT_REQUESTS else zero
        rows.append({**row, "truth_source": None, "note": NOT_REPLAYED,
                     "source_issues_n": issues})
    return rows


def run_notes(rows: pa.Table, corpus: Corpus) -> list[str]:
    """What a ``replay run`` says under its rows (``ROLLUP_SCHEMA``), for every reader: its
    figures include induced work (and how many re-reads were sized as estimates), runs judged by
    the tokenizer count rather than recorded usage, redacted blocks sized as estimates, runs of
    ``corpus`` not replayed."""
    replayed = [rid for rid, truth in zip(rows["run_id"].to_pylist(),
                                          rows["truth_source"].to_pylist()) if truth is not None]
    return figure_notes(
        induced=any(rows["induced_rereads_n"].to_pylist()),
        n_estimated=sum(rows["induced_rereads_estimated_n"].to_pylist()),
        truth_cells=zip(rows["run_id"].to_pylist(), rows["truth_source"].to_pylist()),
        truth_where="each run's truth_source (--wide, --json, summary.json)",
        estimated_text=estimated_text_by_run(corpus, replayed),
        not_replayed=not_replayed(corpus))


RUN_ROLLUP = RunRollup(ROLLUP_SCHEMA, replayed_rows, not_replayed_rows, run_notes)
"""What ``replay.apply_policy.run`` and ``run_to`` make their roll-up rows with."""
