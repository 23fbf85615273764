"""The fidelity figures in words: the report's caption (``FIDELITY_NOTE``) and the corpus totals
of ``analysis.fidelity.fidelity_totals`` against their targets, one sentence each
(``totals_lines``: ``replay fidelity``, the report, ``benchmarks/fidelity.py``).

Not here: the figures (``analysis.fidelity``).
"""

from __future__ import annotations

from typing import Any

from analysis.fidelity import (
    CACHE_READ_TARGET_FRAC,
    HELD_OUT_TARGET_FRAC,
    PLACEMENT_TOLERANCE_REQUESTS,
    POST_SIZE_TARGET_FRAC,
    REREAD_PRECISION_TARGET,
    REREAD_RECALL_TARGET,
    REREAD_TOKENS_TARGET_FRAC,
)
from analysis.metric_spec import count
from analysis.microcompact_check import MICROCOMPACT_POLICY
from analysis.truth_notes import unrecorded_note

FIDELITY_NOTE = (
    "Each run with recorded usage replayed under the policy of the harness that recorded it "
    "(claude_code: claude-code, codex: codex, gemini_cli: gemini-cli, others: none; a "
    "compaction the user asked for is "
    "replayed where the log recorded it): where it compacts against where "
    "the log did (placement, judged within ±3 requests), the median relative error of the "
    "request sizes from the recorded compaction on (target ±5 %), the median cache-read error "
    "as a share of the recorded input (target ≤ 1 %) and the held-out error of the truth the "
    "replay uses (target ≤ 1.5 %): fitted on the first half of the run's requests before any "
    "compaction, the median error on the second half of anchored truth (the recorded input of "
    "the first half's last request plus the scaled count added since) or of fitted truth "
    "(overhead + scale × count); both models' figures are shown. After each recorded compaction, "
    "the files the need rules predict the agent fetched again against those it did (re-read "
    "recall, precision and the signed error of their tokens; targets 0.85, 0.75, ±30 %). "
    "Unknown: the run lacks what the figure needs (no compaction, too few points, a fit the "
    "truth does not use, nothing fetched again or predicted).")
"""What the fidelity table shows (the report's caption)."""


def totals_lines(t: dict[str, Any]) -> list[str]:
    """The corpus totals of ``fidelity_totals`` against the targets, one sentence each."""
    return [
        (f"{count(t['runs'], 'run')} with recorded usage{_left_out(t)}, "
        f"{t['runs_compacted']} auto-compacted at the "
        f"policy's level ({t['runs_manual']} compacted manually, {t['runs_trigger_unknown']} with "
        f"no recorded trigger, "
        f"{sum(d['compacted'] for d in t['runs_not_judged'])} by a harness the policy is not: "
        "not judged on placement and post-compaction size)"),
        *(f"not judged: {r['source']}: {r['reason']}" for r in t["runs_not_judged"]),
        (f"placement within ±{PLACEMENT_TOLERANCE_REQUESTS} requests: "
        f"{t['placement_within_tolerance']} of {t['placement_runs']} "
        f"({t['placement_missed']} never compacted in the replay, "
        f"{t['runs_compacted'] - t['placement_runs']} logs begin after their compaction); with a "
        "calibration fitted on the first half of the requests before the compaction: "
        f"{t['placement_half_fit_within_tolerance']} of {t['placement_runs']}"),
        (f"post-compaction sizes within ±{POST_SIZE_TARGET_FRAC:.0%}: "
        f"{t['post_size_within_target']} of {t['runs_compacted']}; median "
        f"{_pct(t['post_size_error_median_frac'], signed=True)}"
        + (f"; against the compaction's own post-compaction count, where the log records one "
           f"({count(t['post_tokens_runs'], 'run')}): median "
           f"{_pct(t['post_tokens_error_median_frac'], signed=True)}"
           if t["post_tokens_runs"] else "")),
        (f"cache reads within {CACHE_READ_TARGET_FRAC:.0%} of input: "
        f"{t['cache_read_within_target']} of {t['cache_read_runs']}; median "
        f"{_pct(t['cache_read_error_median_frac'])}"),
        (f"held-out error of the truth each replay uses ({_by_truth(t['held_out_runs_by_truth'])}) "
        f"within {HELD_OUT_TARGET_FRAC:.1%}: {t['held_out_within_target']} of "
        f"{t['held_out_runs']}; median {_pct(t['held_out_error_median_frac'])} (anchored model: "
        f"{t['held_out_anchored_within_target']} of {t['held_out_anchored_runs']}, median "
        f"{_pct(t['held_out_anchored_error_median_frac'])}; fitted overhead + scale × count: "
        f"{t['held_out_fitted_within_target']} of {t['held_out_fitted_runs']}, median "
        f"{_pct(t['held_out_fitted_error_median_frac'])}); {t['held_out_redacted_runs']} of those "
        "runs are sized from redaction markers (their error is the marker estimate's)"),
        (f"re-reads after {count(t['reread_compactions'], 'recorded compaction')} in "
        f"{count(t['reread_runs'], 'run')}: {t['reread_recorded']} files fetched again, "
        f"{t['reread_predicted']} predicted, "
        f"{t['reread_hits']} both: recall {_frac(t['reread_recall'])} (target "
        f"≥ {REREAD_RECALL_TARGET}), precision {_frac(t['reread_precision'])} (target "
        f"≥ {REREAD_PRECISION_TARGET}), tokens {_pct(t['reread_tokens_error_frac'], signed=True)}"
        f" pooled, within ±{REREAD_TOKENS_TARGET_FRAC:.0%} in {t['reread_tokens_within_target']} "
        f"of {t['reread_tokens_runs']} runs; the naive rule (a later non-read call names the "
        f"file): recall {_frac(t['reread_naive_recall'])}, precision "
        f"{_frac(t['reread_naive_precision'])}, tokens "
        f"{_pct(t['reread_naive_tokens_error_frac'], signed=True)}"
        + (f"; {count(t['reread_edits_unapplied'], 'edit')} of predicted files not applied to "
           "their sizes (no replaced/new text: a patch, a shell edit)"
           if t.get("reread_edits_unapplied") else "")
        + _sized(t)
        + (f"; {count(t['reread_rereads_failed'], 'removed file')} the agent tried to read again "
           "but every read of it failed (an error result: not counted as re-read)"
           if t.get("reread_rereads_failed") else "")),
        (f"estimated: {count(t['runs_window_from_table'], 'run')} planned against the model "
         "table's window (the log records none); "
         f"{count(t['summaries_encrypted'], 'recorded summary', 'recorded summaries')} "
         "encrypted in the log, sized from their encrypted bytes"),
        (f"microcompactions recorded (system/microcompact_boundary): "
         f"{t['microcompact_recorded']} in {count(t['microcompact_runs'], 'run')}; replayed under "
         f"Claude Code's time-based microcompact ({MICROCOMPACT_POLICY}): "
         f"{t['microcompact_replayed']}, {t['microcompact_matched']} before the recorded "
         f"request; of the {t['microcompact_ids_recorded']} tool results the records name as "
         f"cleared, {t['microcompact_ids_cleared']} cleared by then in the replay"),
        *filter(None, [unrecorded_note(t.get("requests_unrecorded") or {})]),
    ]


def _left_out(t: dict[str, Any]) -> str:
    """The runs of the corpus with no fidelity row, counted ("" when none, or not known)."""
    n = t.get("runs_in_corpus")
    if n is None or n == t["runs"]:
        return ""
    return (f" of {count(n, 'run')} (the other {n - t['runs']:,} recorded no usage or no "
            "request: not judged)")


def _frac(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.2f}"


def _by_truth(runs: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v} run{'s' if v != 1 else ''}" for k, v in runs.items()) or "none"


def _pct(v: float | None, signed: bool = False) -> str:
    return "unknown" if v is None else (f"{v:+.2%}" if signed else f"{v:.2%}")


def _sized(t: dict[str, Any]) -> str:
    """The predicted re-read sizes that are estimates, by why ("" when none)."""
    parts, lost = t.get("reread_sized_parts_only", 0), t.get("reread_sized_as_lost_before", 0)
    if not parts and not lost:
        return ""
    return (f"; {count(parts + lost, 'predicted size')} estimated ({parts} the largest part read "
            f"of a file never read whole, a lower bound; {lost} the part the agent read when "
            "it lost the file before)")
