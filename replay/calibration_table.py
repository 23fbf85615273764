"""``replay calibrate``'s table: one row per run of a corpus, the fit of truth it gets
(``replay.engine.calibrate``), its errors and flags; a run with no recorded request a row too,
flagged ``NOT_REPLAYED`` (never dropped silently).

Here, above ``replay.corpus``, because it reads a corpus; the fit itself is the engine's and pure.
"""

from __future__ import annotations

from typing import Any

from replay.corpus import NOT_REPLAYED, Corpus
from replay.engine.calibrate import points


def calibration_rows(corpus: Corpus) -> list[dict[str, Any]]:
    """One row per run of ``corpus``: the fit it gets, its errors and flags (numbers as numbers;
    None where there is no fit); then a row for each run with no recorded request, in order:
    no point, no fit (its figures unknown), flagged ``NOT_REPLAYED``."""
    rows = []
    sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
    models = dict(zip(corpus.run_ids, corpus.runs["model"].to_pylist()))
    for rid in corpus.replayable():
        own = len(points(corpus.prepared(rid)))
        c = corpus.calibration(rid)
        rows.append({
            "run_id": rid, "source": sources[rid], "model": models[rid] or "", "points": own,
            "fit": c.source if c else "none (no recorded usage)" if own == 0 else "none",
            "fit_points": c.n_points if c else 0,
            "points_estimated": c.n_points_estimated if c else 0,
            "overhead_tokens": round(c.overhead_tokens) if c else None,
            "scale": round(c.scale, 4) if c else None,
            "mean_abs_error": round(c.mean_abs_error_frac, 6) if c else None,
            "held_out_fitted_error": _round(c.held_out_error_frac if c else None),
            "held_out_anchored_error": _round(c.held_out_anchored_error_frac if c else None),
            "flags": ", ".join(c.flags) if c else ("no recorded usage" if own == 0
                                                   else "too few points, no corpus fit"),
        })
    for rid in corpus.not_replayable():
        rows.append({
            "run_id": rid, "source": sources[rid], "model": models[rid] or "", "points": 0,
            "fit": "none (no request)", "fit_points": 0, "points_estimated": 0,
            "overhead_tokens": None, "scale": None, "mean_abs_error": None,
            "held_out_fitted_error": None, "held_out_anchored_error": None,
            "flags": NOT_REPLAYED,
        })
    return rows


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)
