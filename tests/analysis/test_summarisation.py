"""Summarisation frequency: spacing, thrash, grow-back and recorded compactions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import frames
from analysis.summarisation import (
    plot_summarisation,
    recorded_compactions,
    summarisation,
    summarisation_summary,
)
from replay.corpus import Corpus
from replay.engine.trace import Trace


def action(request: int, *, kind: str = "summarise", when: str = "before", trigger: int = 100,
           threshold: int = 100, after: int = 10, failed: bool = False,
           tier: str = "sum") -> dict[str, Any]:
    return {"run_id": "r", "policy": "p", "action": 0, "request": request, "tier": tier,
            "kind": kind, "when": when, "trigger_tokens": trigger, "threshold_tokens": threshold,
            "n_blocks": 1, "first_msg": 0, "last_msg": 0, "reclaimed_tokens": 1,
            "reclaimed_est_tokens": 1, "invalidated_tokens": 0, "undone": False,
            "failed": failed, "summary_tokens": 5, "context_after_tokens": after}


def requests(est: list[int], recorded: list[int | None] | None = None,
             policy: str = "p") -> pd.DataFrame:
    rec = recorded if recorded is not None else [None] * len(est)
    return pd.DataFrame({"run_id": "r", "policy": policy, "request": range(len(est)),
                         "est_tokens": est,
                         "recorded_input_tokens": pd.array(rec, dtype="Int64")})


def test_spacing_and_thrash() -> None:
    acts = pd.DataFrame([action(0), action(10), action(40)])
    df = summarisation(acts, requests([0] * 50))
    assert df["requests_since_prev"].tolist() == [pd.NA, 10, 30]
    assert df["requests_to_next"].tolist() == [10, 30, pd.NA]
    assert df["is_thrash"].tolist() == [False, True, False]
    s = summarisation_summary(df, requests([0] * 50)).iloc[0]
    assert ((df["source"] == "replayed").sum(), s["summarisation_n_thrash"]) == (3, 1)
    assert s["summarisation_per_100_requests"] == 6.0
    assert (s["summarisation_mean_requests_between"], s["summarisation_min_requests_between"]) \
        == (20.0, 10.0)
    assert s["summarisation_first_request"] == 0


def test_boundary_thrash_threshold() -> None:
    acts = pd.DataFrame([action(0), action(20), action(39)])
    assert summarisation(acts, requests([0] * 40))["is_thrash"].tolist() == [False, False, True]
    df = summarisation(acts, requests([0] * 40), thrash_requests=21)
    assert df["is_thrash"].tolist() == [False, True, True]


def test_edge_summary_on_the_first_request() -> None:
    df = summarisation(pd.DataFrame([action(0, after=30)]), requests([30, 60, 90, 120]))
    row = df.iloc[0]
    assert row["request"] == 0 and pd.isna(row["requests_since_prev"])
    assert not row["is_thrash"]
    assert row["growback_requests"] == 3  # request 3 is sent at 120 ≥ 100


def test_growback_before_tier_is_the_next_firing() -> None:
    """A before-send tier cuts before the request goes out: the next firing marks the level."""
    acts = pd.DataFrame([action(0, trigger=105), action(4, trigger=101)])
    df = summarisation(acts, requests([10, 40, 70, 95, 30, 60]))
    assert df["growback_requests"].tolist() == [4, pd.NA]  # the second never refills
    s = summarisation_summary(df, requests([10, 40, 70, 95, 30, 60])).iloc[0]
    assert s["summarisation_mean_growback_requests"] == 4.0


def test_growback_after_tier_is_the_request_sent_over_the_level() -> None:
    acts = pd.DataFrame([action(3, when="after")])
    df = summarisation(acts, requests([50, 90, 110, 20, 60, 100, 40]))
    assert df["growback_requests"].tolist() == [2]  # request 5 sent at 100


def test_kinds_counted() -> None:
    acts = pd.DataFrame([action(1, kind="trim"), action(2, kind="collapse_trim"),
                         action(3, kind="collapse", tier="c"), action(5, failed=True)])
    df = summarisation(acts, requests([0] * 10))
    assert df["kind"].tolist() == ["collapse", "summarise"]
    s = summarisation_summary(df, requests([0] * 10)).iloc[0]
    assert (s["summarisation_per_100_requests"], s["summarisation_n_failed"]) == (20.0, 1)


def test_edge_run_without_summaries_or_usage() -> None:
    empty = pd.DataFrame([action(0)]).iloc[0:0]
    df = summarisation(empty, requests([5, 6]))
    assert df.empty
    s = summarisation_summary(df, requests([5, 6])).iloc[0]
    assert (s["summarisation_per_100_requests"], s["summarisation_recorded_n"]) == (0, 0)
    assert s["summarisation_first_request"] == -1
    assert np.isnan(s["summarisation_mean_requests_between"])
    assert np.isnan(s["summarisation_mean_context_after_tokens"])


def test_recorded_compactions_beside_replayed() -> None:
    msgs = pd.DataFrame({"run_id": "r", "msg": [0, 5, 5, 9], "is_harness_summary":
                         [False, True, True, True]})
    rec = pd.DataFrame({"run_id": "r", "request": range(5), "output_msg": [1, 3, 5, 7, 9]})
    comps = recorded_compactions(msgs, rec)
    # one row per flagged message; the compaction request's own output (msg 9) has no request
    assert comps["msg"].tolist() == [5, 9]
    assert comps["request"].tolist() == [3, pd.NA]
    req = pd.concat([requests([0] * 5, [100, 200, 300, 40, 90], policy=p) for p in ("x", "y")])
    df = summarisation(pd.DataFrame([action(2) | {"policy": "x"}]), req, comps)
    recorded = df[df["source"] == "recorded"]
    assert sorted(recorded["policy"]) == ["x", "x", "y", "y"]  # shown under every policy
    first = recorded[recorded["request"].notna()]
    assert first["context_after_tokens"].tolist() == [40, 40]
    s = summarisation_summary(df, req).set_index("policy")
    assert s.loc["x", "summarisation_per_100_requests"] == 20.0  # 1 of 5 requests
    assert s.loc["y", "summarisation_per_100_requests"] == 0
    assert (s["summarisation_recorded_n"] == 2).all()


def test_plot_summarisation() -> None:
    df = summarisation(pd.DataFrame([action(0), action(5)]), requests([0] * 10))
    ax = plot_summarisation(df)
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "request" and "tokens" in ax.get_ylabel()


def test_real_traces_match_actions_and_runs(sample_corpus: Corpus, both_trace: Trace) -> None:
    req, act = frames.requests_df(both_trace), frames.actions_df(both_trace)
    comps = recorded_compactions(frames.messages_df(sample_corpus),
                                 frames.recorded_requests_df(sample_corpus))
    df = summarisation(act, req, comps)
    s = summarisation_summary(df, req)
    assert len(s) == len(req.groupby(["run_id", "policy"]))
    n_cuts = act["kind"].isin(["summarise", "collapse", "custom_cut"]).sum()
    assert (df["source"] == "replayed").sum() == n_cuts > 0
    assert "summarisation_n" not in s  # one metric: n_summaries (#25)
    runs = frames.runs_df(sample_corpus).set_index("run_id")["n_harness_compactions"]
    for rid, n in zip(s["run_id"], s["summarisation_recorded_n"]):
        assert n == runs[rid]
    replayed = df[df["source"] == "replayed"]
    assert (replayed["context_after_tokens"] > 0).all()
    assert (replayed["growback_requests"].dropna() >= 0).all()
