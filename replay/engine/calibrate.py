"""Calibration: fit the server's real token counts from the usage a log recorded.

Claude Code, Codex, mini-swe-agent and OpenHands logs carry the prompt size the
server counted for each original request.  ``calibrate`` fits

    recorded input tokens ≈ overhead_tokens + scale × (tokenizer count of the context)

by least squares over the requests before the first harness compaction (after
it, the recorded context is no longer the raw stream), and reports the fit
error.  The overhead absorbs the system prompt and tool schemas the log does
not contain; the scale absorbs the difference between the provider's tokenizer
and ours.  A policy with ``truth: {method: calibrated}`` uses the fit; anchored
truth (``replay.engine.truth``) uses its scale when the fit is usable.

What it cannot do, it says (``Calibration.flags``; a flagged fit is not ``usable``):

- fewer than ``MIN_POINTS`` recorded requests: ``few points`` — the fit is not made from the
  run; ``corpus_fit`` pools the points of every run of the same model instead
  (``source: corpus``), and without enough of those either the run has no fit;
- a scale outside ``PLAUSIBLE_SCALE``: ``scale far from 1``;
- a negative overhead (beyond rounding): ``negative overhead``.

Two held-out errors say how well a model predicts requests it has not seen, not how well it
matches the ones it was fitted on.  Both fit ``fit`` on the first half of the points (in request
order) and take the median relative error on the second half (``None`` with fewer than
``MIN_POINTS // 2`` points in either half):

- ``held_out_error_frac`` — the absolute model of ``fitted`` truth: median over the second half
  of |overhead + scale × x − y| / y;
- ``held_out_anchored_error_frac`` — the model of ``anchored`` truth: anchored on the last point
  (x_a, y_a) of the first half, median over the second half of
  |y_a + scale × (x − x_a) − y| / y.  Only for a run's own fit (a corpus fit pools several runs,
  and one run's request does not anchor another's): None for ``source: corpus``.

The scale is the least-squares one in both.  Robust slopes were measured against it on the
anchored held-out error (``benchmarks/anchored_scales.py``, 2026-12-01, 11 recorded runs) and not
adopted: Theil–Sen was even (median 2.37 % vs 2.38 %, 5 of 11 within 1.5 % either way) and a
median of per-request step ratios, which ignores the steps carrying content the log does not
show (Codex reasoning), was worse (3 of 11): that unseen growth recurs, and the anchored model
has to extrapolate it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from replay.engine.prepared import Calibration, PreparedRun
from replay.policy import TokenCounter, Tokenizer

MIN_POINTS = 8
"""Fewest recorded pre-compaction requests a run's own fit is made from (and the fewest in
each half for the held-out error)."""
PLAUSIBLE_SCALE = (0.7, 2.5)
"""Scales of provider tokens per o200k token outside this range are flagged.  Observed on the
samples: 1.09–1.63 for Claude models up to Opus 4.6, whose tokenizer reads more tokens than
o200k on code.  Claude Opus 4.7's reads about 1.2x (code) to 1.3x (English) as many as 4.6's
on the same text (sammcj/ingest#65; ``harness-policies.md`` Part C), so the same sessions
fit about 1.3–2.1 under 4.7: a top of 1.8 flagged such a session's good fit (held-out errors
of a few per cent) and its replay fell back to an unscaled anchor, counting what a policy
removed at about half its size.  The bottom is where a recorded input stops being the
prompt's size (``replay.engine.truth``)."""
NEGATIVE_OVERHEAD_TOKENS = -500.0
"""An overhead below this is flagged (a few hundred either way is fitting noise); a fit above
it is used by ``calibrated`` truth (``replay.engine.truth``)."""


def points(run: PreparedRun, tokenizer: Tokenizer = "o200k_base",
           message_overhead_tokens: int = 0) -> list[tuple[float, float]]:
    """(tokenizer count of the context, recorded input) of each recorded request before the
    first harness compaction, in request order."""
    return _points(run, tokenizer, message_overhead_tokens)[0]


def _points(run: PreparedRun, tokenizer: Tokenizer,
            message_overhead_tokens: int) -> tuple[list[tuple[float, float]], int]:
    """The points and how many of them count blocks sized from redaction markers."""
    counts = run.counts(TokenCounter(method="tokenizer", tokenizer=tokenizer))
    out: list[tuple[float, float]] = []
    total, upto, n_msgs, estimated, n_est = 0, 0, 0, False, 0
    stop = run.first_compaction_request if run.first_compaction_request is not None else run.n_requests
    for k in range(stop):
        hi = run.req_blocks[k]
        for b in range(upto, hi):
            total += counts[b]
            estimated = estimated or run.estimated[b]
            if run.msg_start[run.ordinal[b]] == b:
                n_msgs += 1
        upto = max(upto, hi)
        y = run.recorded_input[k]
        if y is not None and y > 0:
            out.append((float(total + n_msgs * message_overhead_tokens), float(y)))
            n_est += estimated
    return out, n_est


def fit(pts: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares (overhead, scale), or None when the points do not determine a line."""
    n = len(pts)
    if n < 2:
        return None
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    scale = sum((x - mx) * (y - my) for x, y in pts) / sxx
    overhead = my - scale * mx
    if scale <= 0:
        scale, overhead = my / mx if mx else 1.0, 0.0
    return overhead, scale


def held_out_error(pts: list[tuple[float, float]]) -> float | None:
    """Median |fit − recorded| / recorded on the second half, fitted on the first half (the
    absolute model of ``fitted`` truth)."""
    got = _halves(pts)
    fitted = fit(got[0]) if got is not None else None
    if got is None or fitted is None:
        return None
    overhead, scale = fitted
    return statistics.median(abs(overhead + scale * x - y) / y for x, y in got[1])


def held_out_anchored_error(pts: list[tuple[float, float]],
                            scale_of: Callable[[list[tuple[float, float]]], float | None]
                            | None = None) -> float | None:
    """Median |y_a + scale × (x − x_a) − y| / y on the second half, the scale fitted on the
    first half (least squares, or ``scale_of`` it: ``benchmarks/anchored_scales.py`` compares
    others) and (x_a, y_a) its last point (the model of ``anchored`` truth)."""
    got = _halves(pts)
    if got is None:
        return None
    first, later = got
    if scale_of is None:
        fitted = fit(first)
        scale = fitted[1] if fitted is not None else None
    else:
        scale = scale_of(first)
    if scale is None:
        return None
    x_a, y_a = first[-1]
    return statistics.median(abs(y_a + scale * (x - x_a) - y) / y for x, y in later)


def first_half_fit(run: PreparedRun, tokenizer: Tokenizer = "o200k_base") -> Calibration | None:
    """The run's calibration fitted on the first half of its points only — what it would know
    had the log ended half-way to its first compaction (None when too few to split)."""
    got = _halves(points(run, tokenizer))
    return from_points(got[0]) if got is not None else None


def _halves(pts: list[tuple[float, float]]
            ) -> tuple[list[tuple[float, float]], list[tuple[float, float]]] | None:
    """The first and the second half; None with fewer than ``MIN_POINTS // 2`` points in
    either."""
    half = len(pts) // 2
    if half < MIN_POINTS // 2 or len(pts) - half < MIN_POINTS // 2:
        return None
    return pts[:half], pts[half:]


def from_points(pts: list[tuple[float, float]], source: str = "run",
                n_estimated: int = 0) -> Calibration | None:
    """The fit of ``pts`` with its errors and flags (None when no line fits them)."""
    got = fit(pts)
    if got is None:
        return None
    overhead, scale = got
    flags = []
    if len(pts) < MIN_POINTS:
        flags.append("few points")
    if not PLAUSIBLE_SCALE[0] <= scale <= PLAUSIBLE_SCALE[1]:
        flags.append("scale far from 1")
    if overhead < NEGATIVE_OVERHEAD_TOKENS:
        flags.append("negative overhead")
    err = sum(abs(overhead + scale * x - y) / y for x, y in pts) / len(pts)
    return Calibration(overhead_tokens=overhead, scale=scale, n_points=len(pts),
                       mean_abs_error_frac=err, held_out_error_frac=held_out_error(pts),
                       held_out_anchored_error_frac=(held_out_anchored_error(pts)
                                                     if source == "run" else None),
                       flags=tuple(flags), source=source, n_points_estimated=n_estimated)


def calibrate(run: PreparedRun, tokenizer: Tokenizer = "o200k_base",
              message_overhead_tokens: int = 0) -> Calibration | None:
    """The run's own fit (flagged ``few points`` under ``MIN_POINTS``), or None when it has
    fewer than two usable recorded requests."""
    pts, n_est = _points(run, tokenizer, message_overhead_tokens)
    return from_points(pts, n_estimated=n_est)


def corpus_fit(point_sets: Iterable[list[tuple[float, float]]]) -> Calibration | None:
    """One fit over the pooled points of several runs (of one model); flagged like a run's."""
    pooled = [p for pts in point_sets for p in pts]
    return from_points(pooled, source="corpus")
