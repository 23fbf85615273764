"""Metric declarations: each metric declared once, every list of metrics built from them, and the
analyses' constants (``AnalysisParams``) driving the pandas and the fast path alike."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import frames
from analysis.cache_invalidation import cache_actions
from analysis.metric_spec import DEFAULT_PARAMS, AnalysisParams
from analysis.metrics import (
    FLOAT_COLUMNS,
    METRIC_COLUMNS,
    METRIC_DIRECTIONS,
    PARTS,
    RATIOS,
    SPECS,
    WEIGHTS,
    known,
)
from analysis.per_run import part_metrics
from analysis.per_run.fast_metrics import fast_metrics
from analysis.rereads import REREADS_COLUMNS, rereads, rereads_summary
from analysis.run_facts import run_facts
from analysis.summarisation import summarisation, summarisation_summary
from replay.corpus import Corpus, replay_corpus
from replay.policy import load_policy
from tests.analysis.conftest import Replayed


def test_every_metric_is_declared_once_with_a_unit_and_a_description() -> None:
    names = [m.name for p in PARTS for m in p.metrics]
    assert len(names) == len(set(names)) == len(SPECS) == len(METRIC_COLUMNS)
    for m in SPECS.values():
        assert m.unit and m.description, m.name
        assert m.dtype in ("int64", "float64") and m.better in (None, "lower", "higher")
    assert FLOAT_COLUMNS == {n for n, m in SPECS.items() if m.dtype == "float64"}
    assert set(METRIC_DIRECTIONS) == {n for n, m in SPECS.items() if m.better}
    for name, (num, den, _) in RATIOS.items():
        assert SPECS[name].dtype == "float64" and num in SPECS and den in SPECS
    assert all(w in SPECS for w in WEIGHTS.values())


def test_a_name_that_is_not_declared_is_refused() -> None:
    assert known("tokens_sent") == ("tokens_sent",)
    with pytest.raises(KeyError, match="cached_share"):
        known("cached_share")


def test_the_run_table_shows_summary_columns_only() -> None:
    from analysis.per_run.rollup import ROLLUP_METRICS, ROLLUP_SCHEMA
    from replay.cli.replay_commands import RUN_LAYOUT

    shown = set(RUN_LAYOUT.columns) | set(RUN_LAYOUT.totals)
    # source_issues_n is no metric: the issues of the run's log file, in every row of its runs
    # (totalled once per file, not per run: tests/replay/cli/test_issue_totals.py)
    assert RUN_LAYOUT.totals["source_issues_n"] == "per_source"
    assert shown - {"run", "note", "source_issues_n"} <= set(ROLLUP_METRICS) \
        <= set(ROLLUP_SCHEMA.names)
    assert "source_issues_n" in ROLLUP_SCHEMA.names


def test_each_part_computes_exactly_its_declared_columns(sample_corpus: Corpus,
                                                         replayed: dict[str, Replayed]) -> None:
    rep = replayed["two-tier-corrected"]
    rid = sample_corpus.replayable()[0]
    one = replay_corpus(sample_corpus, rep.policy, run_ids=[rid])
    facts = run_facts(sample_corpus, rid)
    for part in PARTS:
        assert tuple(part_metrics(one, rep.policy, [part], facts=facts)) == part.names
        if part.needs_facts:
            with pytest.raises(ValueError, match="run facts|run's facts"):
                part_metrics(one, rep.policy, [part])
        else:
            assert tuple(part_metrics(one, rep.policy, [part])) == part.names


def test_the_parameters_drive_the_pandas_and_the_fast_path_alike(logs_corpus: Corpus) -> None:
    """Non-default constants give the same values both ways, and differ from the defaults (so
    the parameters are really read, not copied literals)."""
    policy = load_policy("two-tier-original")  # summarises 6 times, 33+ requests apart
    params = AnalysisParams(thrash_requests=60, small_reclaim_frac=0.0, loop_k=2,
                            loop_window_requests=40)
    moved = dict.fromkeys(("summarisation_n_thrash", "rereads_n_loops",
                           "cache_invalidation_n_small_trims"), False)
    for rid in logs_corpus.replayable():
        trace = replay_corpus(logs_corpus, policy, run_ids=[rid])
        fast = fast_metrics(run_facts(logs_corpus, rid, params), trace, policy, params)
        default = fast_metrics(run_facts(logs_corpus, rid), trace, policy)
        act, req = frames.actions_df(trace), frames.requests_df(trace)
        summ = summarisation_summary(summarisation(act, req, thrash_requests=params.thrash_requests),
                                     req).iloc[0]
        blocks = frames.messages_df(logs_corpus, REREADS_COLUMNS,
                                    kinds=("tool_call", "tool_result"), run_ids=[rid])
        loops = rereads_summary(rereads(
            blocks, frames.recorded_requests_df(logs_corpus, run_ids=[rid]),
            frames.evictions_df(trace), policies=[policy.name], loop_k=params.loop_k,
            loop_window_requests=params.loop_window_requests),
            keys=pd.DataFrame({"run_id": [rid], "policy": [policy.name]})).iloc[0]
        assert fast["summarisation_n_thrash"] == summ["summarisation_n_thrash"]
        assert fast["rereads_n_loops"] == loops["rereads_n_loops"]
        small = cache_actions(act, policy, small_reclaim_frac=params.small_reclaim_frac)
        assert fast["cache_invalidation_n_small_trims"] == small["is_small_trim"].sum()
        for col in moved:
            moved[col] |= fast[col] != default[col]
    assert all(moved.values()), moved
    assert DEFAULT_PARAMS == AnalysisParams()
