"""Argument vs result byte shares: hand-built requests, then properties of real traces."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import frames
from analysis.arg_share import arg_share, arg_share_summary, plot_arg_share
from replay.engine.trace import Trace


def requests(*rows: tuple[int, int, int, int]) -> pd.DataFrame:
    """(bytes_args, bytes_args_write, bytes_results, bytes_other) per request of run r, policy p."""
    return pd.DataFrame({
        "run_id": "r", "policy": "p", "request": range(len(rows)),
        "bytes_args": [r[0] for r in rows], "bytes_args_write": [r[1] for r in rows],
        "bytes_results": [r[2] for r in rows], "bytes_other": [r[3] for r in rows]})


def test_shares_by_construction() -> None:
    df = arg_share(requests((0, 0, 0, 100), (600, 500, 200, 200), (100, 0, 800, 100)))
    assert df["args_share"].tolist() == [0.0, 0.6, 0.1]
    assert df["write_share"].tolist() == [0.0, 0.5, 0.0]
    assert df["results_share"].tolist() == [0.0, 0.2, 0.8]
    assert df["context_bytes"].tolist() == [100, 1000, 1000]
    s = arg_share_summary(df).iloc[0]
    assert math.isclose(s["arg_share_args_mean"], 0.7 / 3)
    assert (s["arg_share_args_peak"], s["arg_share_args_peak_request"]) == (0.6, 1)
    assert (s["arg_share_write_peak"], s["arg_share_write_peak_request"]) == (0.5, 1)
    assert (s["arg_share_results_peak"], s["arg_share_results_peak_request"]) == (0.8, 2)
    assert (s["arg_share_args_bytes_peak"], s["arg_share_results_bytes_at_args_peak"]) == (600, 200)


def test_edge_empty_context_is_left_out() -> None:
    df = arg_share(requests((0, 0, 0, 0), (50, 0, 50, 0)))
    assert np.isnan(df["args_share"].iloc[0])
    s = arg_share_summary(df).iloc[0]
    assert (s["arg_share_args_mean"], s["arg_share_args_peak_request"]) == (0.5, 1)


def test_edge_only_empty_contexts() -> None:
    s = arg_share_summary(arg_share(requests((0, 0, 0, 0)))).iloc[0]
    assert np.isnan(s["arg_share_args_peak"]) and s["arg_share_args_peak_request"] == -1


def test_boundary_first_request_wins_a_tied_peak() -> None:
    s = arg_share_summary(arg_share(requests((1, 0, 1, 0), (0, 0, 1, 0), (5, 0, 5, 0))))
    assert s["arg_share_args_peak_request"].item() == 0


def test_real_shares_in_unit_interval_and_consistent(both_trace: Trace) -> None:
    df = arg_share(frames.requests_df(both_trace))
    ok = df.dropna(subset=["args_share"])
    for col in ("args_share", "write_share", "results_share", "other_share"):
        assert ok[col].between(0, 1).all()
    total = ok["args_share"] + ok["results_share"] + ok["other_share"]
    assert np.allclose(total, 1.0)
    assert (ok["write_share"] <= ok["args_share"] + 1e-12).all()
    s = arg_share_summary(df)
    assert len(s) == len(df.groupby(["run_id", "policy"]))
    assert (s["arg_share_args_mean"].dropna() <= s["arg_share_args_peak"].dropna()).all()


def test_plot_arg_share() -> None:
    ax = plot_arg_share(arg_share(requests((1, 0, 1, 0), (3, 1, 1, 0))))
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "request" and "fraction" in ax.get_ylabel()
    assert len(ax.get_lines()) == 2
