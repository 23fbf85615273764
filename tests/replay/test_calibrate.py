"""Calibration reports what it cannot do: held-out error, a minimum of points, implausible fits."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.engine.calibrate import MIN_POINTS, from_points, points


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


def test_too_few_points_take_the_models_corpus_fit(sample_corpus):  # type: ignore[no-untyped-def]
    rid = _run_id(sample_corpus, "claude-code/tool_heavy.jsonl")
    own = from_points(points(sample_corpus.prepared(rid)))
    assert own is not None and "few points" in own.flags and not own.usable
    got = sample_corpus.calibration(rid)
    assert got is not None and got.source == "corpus" and got.n_points >= MIN_POINTS


@given(st.floats(2.0, 50.0), st.floats(1000.0, 50000.0))
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
        assert r["held_out_error"] is None or isinstance(r["held_out_error"], float)
    assert any(r["fit"].startswith("none") and r["flags"] == "no recorded usage" for r in rows)
