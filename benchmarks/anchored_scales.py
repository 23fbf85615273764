"""Robust scales for anchored truth (issue #15 item 4): does a slope that ignores steps carrying
content the log does not show predict held-out requests better than least squares?

    python benchmarks/anchored_scales.py [PATH ...]
    (default: ../shared/logs-sample, logs/ and tests/fixtures)

For every run whose calibration has an anchored held-out error
(``replay.engine.calibrate.held_out_anchored_error``: scale fitted on the first half of the
pre-compaction requests, anchored on its last one, median relative error on the second half), it
reports that error with the scale taken four ways from the same first half:

- ``ols``: least squares (what ``Calibration.scale`` is);
- ``theil-sen``: the median of the slopes between every two points (of at most
  ``THEIL_SEN_POINTS`` evenly spaced ones: deterministic, and cheap for long runs);
- ``step-median``: the median of the per-request ratios Δrecorded / Δcount, weighted by Δcount,
  over steps adding at least ``MIN_STEP_TOKENS`` counted tokens — it ignores the few steps whose
  recorded input grew far more than the log shows (Codex reasoning) or shrank;
- ``mean-step``: Σ Δrecorded / Σ Δcount (last minus first point), for comparison: it counts that
  unseen growth in.

then the medians, how many runs are within the 1.5 % target and on how many each is worse than
least squares, over all runs and over the recorded (non-generated) ones.

Measured on 2026-12-01 (23 runs, 11 recorded): over the recorded runs, median 2.38 % ols,
2.37 % theil-sen, 1.84 % step-median, 1.15 % mean-step; within 1.5 %: 5, 5, 3 and 6 of 11; worse
than ols on 5, 8 and 4 of 11 (all runs: 17, 17, 15, 18 of 23 within 1.5 %).  The step median,
which ignores the unseen growth, is within the target on fewest: that growth recurs (it is not
one outlier) and prediction across requests has to carry it; Theil–Sen on the cumulative points
is not robust to it either (a jump shifts every later point, so up to half the pairs straddle
it).  The mean step does best by counting the unseen growth into the scale — the opposite of a
scale for the visible tokens a policy removes, which this held-out error cannot measure (it
extrapolates across requests; a replay anchors on the same request).  Not adopted: anchored
truth keeps the least-squares scale.
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from corpus_args import corpus_paths

REPO = Path(__file__).resolve().parents[1]
GENERATED = REPO / "logs"
THEIL_SEN_POINTS = 200
MIN_STEP_TOKENS = 100.0

Points = list[tuple[float, float]]


def theil_sen(pts: Points) -> float | None:
    """Median slope over every pair of at most ``THEIL_SEN_POINTS`` evenly spaced points."""
    n = len(pts)
    idx = (range(n) if n <= THEIL_SEN_POINTS
           else sorted({round(i * (n - 1) / (THEIL_SEN_POINTS - 1)) for i in range(THEIL_SEN_POINTS)}))
    sel = [pts[i] for i in idx]
    slopes = [(yj - yi) / (xj - xi) for a, (xi, yi) in enumerate(sel) for xj, yj in sel[a + 1:]
              if xj != xi]
    return statistics.median(slopes) if slopes else None


def step_median(pts: Points) -> float | None:
    """Δcount-weighted median of Δrecorded / Δcount over steps of at least ``MIN_STEP_TOKENS``."""
    steps = sorted(((y1 - y0) / (x1 - x0), x1 - x0)
                   for (x0, y0), (x1, y1) in itertools.pairwise(pts)
                   if x1 - x0 >= MIN_STEP_TOKENS)
    total, acc = sum(w for _, w in steps), 0.0
    for ratio, w in steps:
        acc += w
        if acc >= total / 2:
            return ratio
    return None


def mean_step(pts: Points) -> float | None:
    """Σ Δrecorded / Σ Δcount: the slope from the first point to the last."""
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return (y1 - y0) / (x1 - x0) if x1 != x0 else None


SCALES: dict[str, Callable[[Points], float | None] | None] = {
    "ols": None, "theil-sen": theil_sen, "step-median": step_median, "mean-step": mean_step}


def main(paths: list[Path]) -> None:
    """Print one line per run, then the medians and counts (runs under ``logs/`` count as
    generated; the package imported here: ``--help`` or a missing path answers without loading
    it)."""
    from replay.corpus import open_corpus
    from replay.engine.calibrate import held_out_anchored_error, points

    rows: list[tuple[str, dict[str, float | None], bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(paths):
            corpus = open_corpus([path], cache_dir=Path(tmp) / str(i))
            sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
            for rid in corpus.replayable():
                pts = points(corpus.prepared(rid))
                if held_out_anchored_error(pts) is not None:
                    rows.append((sources[rid], {k: held_out_anchored_error(pts, f)
                                                for k, f in SCALES.items()},
                                 path.resolve() == GENERATED))
    print(f"{'source':58s} " + " ".join(f"{k:>11s}" for k in SCALES))
    for source, errs, _ in rows:
        print(f"{source[-58:]:58s} " + " ".join(f"{_pct(errs[k]):>11s}" for k in SCALES))
    for name, sel in (("all runs", rows), ("recorded runs", [r for r in rows if not r[2]])):
        if not sel:
            continue
        print(f"\n{name} ({len(sel)}):")
        for k in SCALES:
            got = [(v, o) for _, e, _ in sel
                   if (v := e[k]) is not None and (o := e["ols"]) is not None]
            print(f"  {k:11s} median {_pct(statistics.median(v for v, _ in got))}, within 1.5 %: "
                  f"{sum(v <= 0.015 for v, _ in got)} of {len(got)}, worse than ols on "
                  f"{sum(v > o for v, o in got)}")


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.2%}"


if __name__ == "__main__":
    main(corpus_paths(__doc__, [REPO.parent / "shared" / "logs-sample",
                                              REPO / "logs", REPO / "tests" / "fixtures"]))
