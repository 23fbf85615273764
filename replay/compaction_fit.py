"""The compactions a corpus recorded, and the model of a counterfactual compaction fitted on them.

Where a replay compacts away from a recorded compaction it has no recorded summary to reuse:
the summarise tier writes a stub summary and re-attaches what ``Summarise.restore`` says
(``replay.engine.tiers.restore``).  This module measures the recorded compactions and fits that
model's numbers, outside the engine; the numbers go into a policy's ``restore:`` block as data.

Per recorded compaction (``RecordedCompaction``, from the run's ``compaction`` events and its
recorded usage):

- ``summarised_tokens``: what the summary replaced, ``tokens_before`` (the recorded input of the
  last request before, else the harness's recorded ``preTokens``) minus the anchor offset of
  that request (system prompt and tool schemas, which stay; the calibration's overhead when
  the log starts at the compaction);
- ``summary_tokens``: the recorded summary's o200k count;
- ``reattached_tokens``: what the first request after carried beyond its counted context,
  minus what the request before carried (the anchor offset's jump,
  ``replay.engine.truth.reattached_tokens``; against the calibration's overhead when the log starts at
  the compaction): the files, todo list and hook output the harness re-attached without
  writing them to the log (None without usage after it);
- ``files_tokens_by_count``: what the files model (the last ``files`` files read, those over the
  per-file cap named, not attached: ``replay.engine.tiers.restore.pick_files``)
  re-attaches at that boundary, in the same units.

The fit (``fit_compactions``): summary tokens = base + per-summarised × summarised tokens by
least squares (``replay.engine.calibrate.fit``) when the recorded summaries show a rising trend, else
their median with no slope; ``files`` the count (0–``MAX_FILES``) whose re-attached tokens are
closest (median absolute error) to the observed ones, over the compactions whose log holds what
was read before them; caps as Claude Code's.  Only compactions of at least
``MIN_SUMMARISED_TOKENS`` count.  Fewer than ``MIN_COMPACTIONS`` of them (for either part): that
part of the documented ``DEFAULT`` instead, and ``source`` says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from replay.engine.calibrate import fit
from replay.engine.prepared import PreparedRun
from replay.engine.tiers.restore import pick_files
from replay.engine.truth import anchor_offsets, reattached_tokens
from replay.policy import Restore, TokenCounter

if TYPE_CHECKING:
    from replay.corpus import Corpus

MIN_COMPACTIONS = 3
"""Fewest measured recorded compactions the model is fitted from."""
MIN_SUMMARISED_TOKENS = 10_000
"""A compaction of less than this (a test file's, a nearly empty context) says nothing about
the sizes that matter: left out of the fit."""
MAX_FILES = 10
"""Largest file count the fit tries."""
DEFAULT = Restore(summary_base_tokens=3500, summary_tokens_per_summarised=0.0, files=5,
                  file_max_tokens=5000, files_max_tokens=50000)
"""The model without enough recorded compactions: Claude Code's restoration constants (up to 5
recently read files, at most 5,000 tokens each, 50,000 in all: harness-policies.md A2) and the
summary size of the real 2.1.39 compactions in the samples and fixtures (3,000–4,000 o200k
tokens for 142,000–168,000 summarised, no trend)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCompaction:
    """One compaction as the log recorded it (sizes in tokens; None: not recorded)."""

    run_id: str
    source: str
    index: int
    """Its position among the run's harness compactions."""
    trigger: str
    """``auto`` or ``manual`` ('' when not recorded)."""
    first_request: int | None
    """The first request after it."""
    tokens_before: int | None
    summarised_tokens: int | None
    summary_tokens: int
    reattached_tokens: int | None
    files_tokens_by_count: tuple[int, ...] | None
    """What the files model (``DEFAULT``'s caps) re-attaches here with 0, 1, ... ``MAX_FILES``
    files, in the run's scaled tokens (None: the log holds no request before it, so not
    what was read before it either)."""
    summary_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionFit:
    """The fitted model and what it was fitted on."""

    restore: Restore
    """The numbers for a policy's ``restore:`` block."""
    source: str
    """Where each part came from: ``summary: corpus|defaults (…); files: corpus|defaults (…)``."""
    n_compactions: int
    """Recorded compactions with the sizes the fit needs."""
    summary_trend: bool
    """Whether the summary size was fitted as a line (else the median, no slope)."""
    summary_error_median_frac: float | None
    """Median |model − recorded| / recorded summary tokens over the compactions."""
    reattached_error_median_tokens: float | None
    """Median |files model − observed re-attached tokens| at the chosen ``files``."""
    compactions: tuple[RecordedCompaction, ...]


def recorded_compactions(corpus: Corpus) -> list[RecordedCompaction]:
    """Every harness compaction of every replayable run of ``corpus``, with its sizes."""
    sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
    out = []
    for rid in corpus.replayable():
        run = corpus.prepared(rid)
        if not run.harness_boundary:
            continue
        cal = corpus.calibration(rid)
        scale = cal.scale if cal is not None and cal.usable else 1.0
        counter = TokenCounter(method="tokenizer", tokenizer="o200k_base", scale=scale)
        usage = any(v is not None and v > 0 for v in run.recorded_input)
        offsets = anchor_offsets(run, counter, 0) if usage else None
        jumps = reattached_tokens(run, counter, 0)
        counts = run.counts(TokenCounter(method="tokenizer", tokenizer="o200k_base"))
        events = sorted((e for e in corpus.events(rid).to_pylist() if e["kind"] == "compaction"),
                        key=lambda e: e["msg"])
        for c, (boundary, first) in enumerate(zip(run.harness_boundary,
                                                  run.harness_first_request)):
            at = run.msg[boundary] if boundary < run.n_blocks else None
            ev = next((e for e in reversed(events) if at is None or e["msg"] <= at), None)
            before = _last_recorded_before(run.recorded_input, first)
            tokens_before = (run.recorded_input[before] if before is not None
                             else ev["pre_tokens"] if ev else None)
            off_before = (offsets[before] if offsets is not None and before is not None
                          else round(cal.overhead_tokens) if cal is not None else None)
            off_after = (offsets[first] if offsets is not None and first is not None
                         and run.recorded_input[first] else None)
            tokens = run.harness_summary_tokens[c]
            out.append(RecordedCompaction(
                run_id=rid, source=sources[rid], index=c, trigger=ev["trigger"] if ev else "",
                first_request=first, tokens_before=tokens_before,
                summarised_tokens=(tokens_before - off_before
                                   if tokens_before is not None and off_before is not None
                                   else None),
                summary_tokens=tokens.get("o200k_base", next(iter(tokens.values()), 0)),
                reattached_tokens=(jumps[c] if before is not None and off_after is not None
                                   else max(0, off_after - off_before)
                                   if off_after is not None and off_before is not None else None),
                files_tokens_by_count=(_files_tokens(run, boundary, counts, scale)
                                       if before is not None else None),
                summary_text=run.harness_summary_text[c]))
    return out


def fit_compactions(compactions: list[RecordedCompaction]) -> CompactionFit:
    """The model fitted on ``compactions`` (``DEFAULT`` under ``MIN_COMPACTIONS``)."""
    sized = [c for c in compactions if c.summarised_tokens is not None
             and c.summarised_tokens >= MIN_SUMMARISED_TOKENS and c.summary_tokens > 0]
    observed = [c for c in sized
                if c.reattached_tokens is not None and c.files_tokens_by_count is not None]
    base, per, trend, summary_err = float(DEFAULT.summary_base_tokens or 0), 0.0, False, None
    if len(sized) >= MIN_COMPACTIONS:
        pts = [(float(c.summarised_tokens or 0), float(c.summary_tokens)) for c in sized]
        line = fit(pts)  # a falling or flat cloud comes back as a ratio with no base: no trend
        trend = line is not None and line[0] > 0 and 0 < line[1] < 1
        base, per = line if trend and line is not None else (
            statistics.median(y for _, y in pts), 0.0)
        summary_err = statistics.median(abs(base + per * x - y) / y for x, y in pts)
    files, files_err = DEFAULT.files, None
    if len(observed) >= MIN_COMPACTIONS:
        errs = {k: statistics.median(abs((c.files_tokens_by_count or ())[k]
                                         - (c.reattached_tokens or 0)) for c in observed)
                for k in range(MAX_FILES + 1)}
        files = min(errs, key=lambda k: (errs[k], k))
        files_err = errs[files]
    return CompactionFit(
        restore=replace(DEFAULT, summary_base_tokens=round(base),
                        summary_tokens_per_summarised=round(per, 6), files=files),
        source=(f"summary: {_said(len(sized))}; files: {_said(len(observed))}"),
        n_compactions=len(sized), summary_trend=trend, summary_error_median_frac=summary_err,
        reattached_error_median_tokens=files_err, compactions=tuple(compactions))


def _said(n: int) -> str:
    return (f"corpus ({n} compactions)" if n >= MIN_COMPACTIONS
            else f"defaults ({n} measured compaction(s), fewer than {MIN_COMPACTIONS})")


def _files_tokens(run: PreparedRun, boundary: int, counts: list[int],
                  scale: float) -> tuple[int, ...]:
    return tuple(round(scale * sum(counts[b] for b in pick_files(
        run, boundary, replace(DEFAULT, files=k), counts))) for k in range(MAX_FILES + 1))


def _last_recorded_before(recorded: list[int | None], first: int | None) -> int | None:
    """The last request before ``first`` with a recorded input (None: none)."""
    end = len(recorded) if first is None else first
    return next((k for k in range(end - 1, -1, -1) if recorded[k]), None)


def compaction_report(corpus: Corpus) -> dict[str, Any]:
    """What ``replay calibrate --compactions`` prints: one row per recorded compaction (numbers
    as numbers, None where unknown) and the fitted model with where each part came from."""
    got = fit_compactions(recorded_compactions(corpus))
    r = got.restore
    return {
        "compactions": [{
            "source": c.source, "compaction": c.index, "trigger": c.trigger or None,
            "first_request": c.first_request, "tokens_before": c.tokens_before,
            "summarised_tokens": c.summarised_tokens, "summary_tokens": c.summary_tokens,
            "reattached_tokens": c.reattached_tokens,
            "files_model_tokens": (c.files_tokens_by_count[r.files]
                                   if c.files_tokens_by_count is not None else None),
        } for c in got.compactions],
        "model": {
            "summary_base_tokens": r.summary_base_tokens,
            "summary_tokens_per_summarised": r.summary_tokens_per_summarised,
            "files": r.files, "file_max_tokens": r.file_max_tokens,
            "files_max_tokens": r.files_max_tokens, "source": got.source,
            "compactions_fitted": got.n_compactions, "summary_trend": got.summary_trend,
            "summary_error_median_frac": got.summary_error_median_frac,
            "reattached_error_median_tokens": got.reattached_error_median_tokens,
        },
    }


def model_lines(model: dict[str, Any]) -> list[str]:
    """The fitted model of ``compaction_report`` in words: the ``restore:`` numbers, then where
    they came from and how well they fit (``replay calibrate --compactions`` and the report)."""
    restore = ", ".join(f"{k}: {model[k]}" for k in (
        "summary_base_tokens", "summary_tokens_per_summarised", "files", "file_max_tokens",
        "files_max_tokens"))
    s, r = model["summary_error_median_frac"], model["reattached_error_median_tokens"]
    return ["restore: {" + restore + "}",
            (f"fitted from: {model['source']}; summary error median "
            f"{'unknown' if s is None else f'{s:.1%}'}, re-attached error median "
            f"{'unknown' if r is None else f'{round(r):,} tokens'}")]
