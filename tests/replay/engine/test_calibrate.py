"""Calibration reports what it cannot do: held-out errors (of fitted and of anchored truth), a
minimum of points, implausible fits."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.engine.calibrate import (
    MIN_POINTS,
    PLAUSIBLE_SCALE,
    corpus_fit,
    from_points,
    held_out_anchored_error,
    points,
)


def _run_id(corpus, suffix: str) -> str:  # type: ignore[no-untyped-def]
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith(suffix))


def test_held_out_error_is_fitted_on_the_first_half_only(sample_corpus):  # type: ignore[no-untyped-def]
    rid = _run_id(sample_corpus, "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    pts = points(sample_corpus.prepared(rid))
    cal = sample_corpus.calibration(rid)
    assert cal is not None and cal.source == "run" and cal.n_points == len(pts) >= MIN_POINTS
    half = len(pts) // 2
    xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    scale, overhead = np.polyfit(xs[:half], ys[:half], 1)
    expected = float(np.median(np.abs(overhead + scale * xs[half:] - ys[half:]) / ys[half:]))
    assert cal.held_out_error_frac is not None
    assert abs(cal.held_out_error_frac - expected) < 1e-9
    # anchored truth: the recorded input of the first half's last request + scale × the growth
    anchored = float(np.median(np.abs(ys[half - 1] + scale * (xs[half:] - xs[half - 1])
                                      - ys[half:]) / ys[half:]))
    assert cal.held_out_anchored_error_frac is not None
    assert abs(cal.held_out_anchored_error_frac - anchored) < 1e-9


HAND = [(1000.0, 2210.0), (2000.0, 3390.0), (3000.0, 4620.0), (4000.0, 5900.0),
        (5000.0, 7100.0), (6000.0, 8150.0), (7000.0, 9500.0), (8000.0, 10400.0)]
"""Eight requests: the first half near 1000 + 1.2 × count, its last one above the line."""


def test_held_out_anchored_error_of_a_hand_made_run() -> None:
    cal = from_points(HAND)
    assert cal is not None and cal.held_out_anchored_error_frac is not None
    # by hand: least squares over the first four points
    x, y = [p[0] for p in HAND[:4]], [p[1] for p in HAND[:4]]
    mx, my = sum(x) / 4, sum(y) / 4
    scale = (sum((a - mx) * (b - my) for a, b in zip(x, y))
             / sum((a - mx) ** 2 for a in x))
    assert abs(scale - 1.23) < 1e-12  # (1500·1820 + 500·640 + 500·590 + 1500·1870) / 5e6
    errors = sorted(abs(5900.0 + scale * (xi - 4000.0) - yi) / yi for xi, yi in HAND[4:])
    assert abs(cal.held_out_anchored_error_frac - (errors[1] + errors[2]) / 2) < 1e-12
    overhead = my - scale * mx  # the absolute model misses by its offset at the anchor too
    absolute = sorted(abs(overhead + scale * xi - yi) / yi for xi, yi in HAND[4:])
    assert abs(cal.held_out_error_frac - (absolute[1] + absolute[2]) / 2) < 1e-12  # type: ignore[operator]
    assert abs(cal.held_out_anchored_error_frac - cal.held_out_error_frac) > 1e-3  # type: ignore[operator]
    # another slope for the same anchored model (what benchmarks/anchored_scales.py compares)
    unit = sorted(abs(5900.0 + (xi - 4000.0) - yi) / yi for xi, yi in HAND[4:])
    got = held_out_anchored_error(HAND, scale_of=lambda first: 1.0 if first == HAND[:4] else None)
    assert got is not None and abs(got - (unit[1] + unit[2]) / 2) < 1e-12


def test_held_out_errors_need_enough_points_and_one_run() -> None:
    few = from_points(HAND[:MIN_POINTS - 1])
    assert few is not None and few.held_out_error_frac is None
    assert few.held_out_anchored_error_frac is None
    pooled = corpus_fit([HAND, HAND])  # one run's request does not anchor another's
    assert pooled is not None and pooled.held_out_error_frac is not None
    assert pooled.held_out_anchored_error_frac is None


def test_too_few_points_take_the_models_corpus_fit(sample_corpus):  # type: ignore[no-untyped-def]
    rid = _run_id(sample_corpus, "claude-code/tool_heavy.jsonl")
    own = from_points(points(sample_corpus.prepared(rid)))
    assert own is not None and "few points" in own.flags and not own.usable
    got = sample_corpus.calibration(rid)
    assert got is not None and got.source == "corpus" and got.n_points >= MIN_POINTS


@given(st.one_of(st.floats(PLAUSIBLE_SCALE[1] + 0.01, 50.0),
                 st.floats(0.05, PLAUSIBLE_SCALE[0] - 0.01)), st.floats(1000.0, 50000.0))
def test_a_scale_far_from_one_is_flagged(scale: float, overhead: float) -> None:
    pts = [(float(x), overhead + scale * x) for x in range(1000, 1000 + 100 * MIN_POINTS, 100)]
    cal = from_points(pts)
    assert cal is not None and "scale far from 1" in cal.flags and not cal.usable


def test_a_negative_overhead_is_flagged() -> None:
    pts = [(float(x), 1.1 * x - 5000.0) for x in range(10000, 10000 + 1000 * MIN_POINTS, 1000)]
    cal = from_points(pts)
    assert cal is not None and cal.flags == ("negative overhead",)


def test_calibrate_json_numbers_are_numbers(sample_corpus, tmp_path):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(app, ["calibrate", str(sample_corpus.root), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    fitted = [r for r in rows if r["fit"] == "run"]
    assert fitted
    for r in fitted:
        assert isinstance(r["scale"], float) and isinstance(r["mean_abs_error"], float)
        assert r["held_out_fitted_error"] is None or isinstance(r["held_out_fitted_error"], float)
        assert (r["held_out_anchored_error"] is None
                or isinstance(r["held_out_anchored_error"], float))
    assert any(isinstance(r["held_out_anchored_error"], float) for r in fitted)
    assert all(r["held_out_anchored_error"] is None for r in rows if r["fit"] == "corpus")
    assert any(r["fit"].startswith("none") and r["flags"] == "no recorded usage" for r in rows)
