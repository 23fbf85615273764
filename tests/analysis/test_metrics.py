"""The metrics table: one row per (run, policy), fixed columns, deterministic; a trace split by run
whatever its row order; the pandas analyses' frame (``metrics_by_analyses``) alike."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from analysis import frames
from analysis.metrics import (
    BASIC_COLUMNS,
    FLOAT_COLUMNS,
    METRIC_DIRECTIONS,
    metrics,
    metrics_of_replays,
)
from analysis.metrics_by_analyses import corpus_frames, metrics_by_analyses, trace_run_ids
from analysis.run_facts import runs_facts
from replay.corpus import Corpus, iter_replays, replay_corpus
from replay.engine.trace import Trace
from replay.policy import load_policy
from tests.analysis.conftest import Replayed
from tests.analysis.scenarios import corpus_of, reread_after_trim_run

PREFIXES = ("rereads_", "arg_share_", "summarisation_", "cache_invalidation_", "overshoots_",
            "induced_rereads_")


def test_one_row_per_run_and_policy(replayed: dict[str, Replayed]) -> None:
    for rep in replayed.values():
        m = rep.metrics
        req = frames.requests_df(rep.trace)
        assert len(m) == req["run_id"].nunique()
        assert not m.duplicated(["run_id", "policy"]).any()
        assert m["run_id"].tolist() == sorted(m["run_id"])


def test_fixed_column_order(replayed: dict[str, Replayed]) -> None:
    a, b = (rep.metrics for rep in replayed.values())
    assert list(a.columns) == list(b.columns)
    cols = list(a.columns)
    assert cols[:2 + len(BASIC_COLUMNS)] == ["run_id", "policy", *BASIC_COLUMNS]
    rest = cols[2 + len(BASIC_COLUMNS):]
    order = [next(i for i, p in enumerate(PREFIXES) if c.startswith(p)) for c in rest]
    assert order == sorted(order)
    for col in cols[2:]:
        assert str(a[col].dtype) in ("int64", "float64"), col


def test_deterministic(sample_corpus: Corpus, replayed: dict[str, Replayed]) -> None:
    rep = replayed["two-tier-original"]
    again = metrics(sample_corpus, replay_corpus(sample_corpus, rep.policy), rep.policy)
    pd.testing.assert_frame_equal(rep.metrics, again)


def test_basic_columns(replayed: dict[str, Replayed]) -> None:
    for rep in replayed.values():
        m = rep.metrics.set_index("run_id")
        req = frames.requests_df(rep.trace)
        act = frames.actions_df(rep.trace)
        assert m["tokens_sent"].sum() == req["truth_tokens"].sum()
        assert m["n_requests"].sum() == len(req)
        assert m["peak_tokens"].max() == req["truth_tokens"].max()
        applied = act[~act["undone"].astype(bool)]
        assert m["n_trims"].sum() == (applied["kind"] == "trim").sum()
        assert m["n_summaries"].sum() == (act["kind"] == "summarise").sum()
        assert math.isclose(m["cost_usd"].sum(), float(req["cost_usd"].sum()))
        assert "cache_invalidation_cost_usd" not in m  # it was cost_usd twice (issue 16)
        # every summary-kind action counts, applied or not: summaries are never undone, so
        # n_summaries is the one count of them (summarisation_n merged into it, #25 item 10)
        assert m["n_summaries"].sum() == act["kind"].isin(
            ["summarise", "collapse", "custom_cut"]).sum()
        assert "summarisation_n" not in m


def test_directions_name_existing_columns(replayed: dict[str, Replayed]) -> None:
    cols = set(replayed["two-tier-original"].metrics.columns)
    assert set(METRIC_DIRECTIONS) <= cols
    assert set(METRIC_DIRECTIONS.values()) <= {"lower", "higher"}


@pytest.mark.parametrize("of", [metrics, metrics_by_analyses])
def test_rejects_another_policys_trace(sample_corpus: Corpus, replayed: dict[str, Replayed],
                                       of: object) -> None:
    with pytest.raises(ValueError, match="two-tier-corrected"):
        of(sample_corpus, replayed["two-tier-original"].trace,  # type: ignore[operator]
           load_policy("two-tier-corrected"))


def test_a_trace_with_its_runs_interleaved_gives_the_same_rows(
        sample_corpus: Corpus, replayed: dict[str, Replayed]) -> None:
    """Rows of the runs taken in turn (each run's own rows in order): every run's row the same."""
    rep = replayed["two-tier-original"]
    cols = {}
    for name in ("requests", "actions", "evictions"):
        table = rep.trace.columns(name)
        seen: dict[str, int] = {}
        nth = [seen.__setitem__(r, seen.get(r, -1) + 1) or seen[r] for r in table["run_id"]]
        order = sorted(range(len(nth)), key=lambda i: nth[i])
        cols[name] = {c: [v[i] for i in order] for c, v in table.items()}
    shuffled = Trace(columns=cols)
    assert shuffled.columns("requests")["run_id"][:2] != rep.trace.columns("requests")["run_id"][:2]
    pd.testing.assert_frame_equal(metrics(sample_corpus, shuffled, rep.policy), rep.metrics)


def test_metrics_of_replays_equals_metrics(sample_corpus: Corpus,
                                           replayed: dict[str, Replayed]) -> None:
    rep = replayed["two-tier-corrected"]
    per_run = list(iter_replays(sample_corpus, rep.policy))
    got = metrics_of_replays(sample_corpus, [Trace.concat([]), *reversed(per_run)], rep.policy)
    pd.testing.assert_frame_equal(got, rep.metrics)
    with pytest.raises(ValueError, match="one run each"):
        metrics_of_replays(sample_corpus, [Trace.concat(per_run[:2])], rep.policy)


def test_facts_read_once_are_the_ones_used(sample_corpus: Corpus,
                                           replayed: dict[str, Replayed]) -> None:
    """Facts passed in (read once for several policies) are used for their runs, and the other
    runs' are read: the same frame as ``metrics()`` reading every run's facts itself (the
    reference here; ``preset_run``'s frames are computed with facts passed in)."""
    rep = replayed["two-tier-corrected"]
    alone = metrics(sample_corpus, rep.trace, rep.policy)
    pd.testing.assert_frame_equal(alone, rep.metrics)
    ids = alone["run_id"].tolist()
    facts = runs_facts(sample_corpus, ids[:3])
    pd.testing.assert_frame_equal(metrics(sample_corpus, rep.trace, rep.policy, facts=facts),
                                  alone)
    first = facts[ids[0]]
    marked = dataclasses.replace(first, static_rereads={**first.static_rereads,
                                                        "rereads_n_reads": -7})
    got = metrics(sample_corpus, rep.trace, rep.policy, facts={ids[0]: marked})
    assert got["rereads_n_reads"].tolist() == [-7, *alone["rereads_n_reads"].tolist()[1:]]


def test_corpus_frames_read_once_are_the_ones_used(sample_corpus: Corpus,
                                                   replayed: dict[str, Replayed]) -> None:
    """Corpus frames passed in (read once for several policies, as ``preset_run`` does) give the
    frame ``metrics_by_analyses()`` gives reading them itself, and are the ones used: with
    their tool blocks left out, no run has a read; frames of other runs are refused.  On three
    runs with reads (each call over every sample costs ~0.6 s), whose rows are those of the
    whole corpus's frame."""
    rep = replayed["two-tier-corrected"]
    whole = rep.by_analyses
    ids = whole.loc[whole["rereads_n_reads"] > 0, "run_id"].tolist()[:3]
    trace = replay_corpus(sample_corpus, rep.policy, run_ids=ids)
    alone = metrics_by_analyses(sample_corpus, trace, rep.policy)
    pd.testing.assert_frame_equal(alone, whole[whole["run_id"].isin(ids)].reset_index(drop=True))
    given = corpus_frames(sample_corpus, trace_run_ids(trace))
    pd.testing.assert_frame_equal(
        metrics_by_analyses(sample_corpus, trace, rep.policy, given=given), alone)
    no_blocks = dataclasses.replace(given, tool_blocks=given.tool_blocks.iloc[0:0])
    got = metrics_by_analyses(sample_corpus, trace, rep.policy, given=no_blocks)
    assert len(ids) == 3 and alone["rereads_n_reads"].min() > 0
    assert got["rereads_n_reads"].tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="given frames of runs"):
        metrics_by_analyses(sample_corpus, trace, rep.policy,
                            given=corpus_frames(sample_corpus, ids[1:]))


def test_no_request_no_row(sample_corpus: Corpus) -> None:
    m = metrics(sample_corpus, Trace.concat([]), load_policy("none"))
    assert len(m) == 0
    assert list(m.columns[:2 + len(BASIC_COLUMNS)]) == ["run_id", "policy", *BASIC_COLUMNS]
    assert {c for c in m.columns[2:] if m[c].dtype == "float64"} == FLOAT_COLUMNS


def test_edge_hand_built_run() -> None:
    corpus = corpus_of(reread_after_trim_run())
    policy = load_policy("two-tier-original")
    m = metrics(corpus, replay_corpus(corpus, policy), policy)
    assert len(m) == 1
    row = m.iloc[0]
    assert (row["n_requests"], row["rereads_n_reads"], row["rereads_n"]) == (8, 7, 1)
    assert row["summarisation_recorded_n"] == 0
    assert row["cache_invalidation_recorded_requests"] == 0
