"""The loaders: Arrow-backed dtypes, no text unless asked, kind filter before conversion."""

from __future__ import annotations

import pandas as pd

from analysis import frames
from replay.corpus import Corpus
from replay.engine.trace import Trace


def test_messages_df_leaves_text_out_by_default(sample_corpus: Corpus) -> None:
    df = frames.messages_df(sample_corpus)
    assert "text" not in df.columns
    assert list(df.columns) == list(frames.MESSAGE_COLUMNS_NO_TEXT)
    assert len(df) == sample_corpus.messages.num_rows


def test_messages_df_kinds_filter(sample_corpus: Corpus) -> None:
    df = frames.messages_df(sample_corpus, ("run_id", "kind", "text"), kinds=("tool_call",))
    assert set(df["kind"]) == {"tool_call"}
    assert list(df.columns) == ["run_id", "kind", "text"]


def test_nullable_usage_stays_integer(sample_corpus: Corpus, both_trace: Trace) -> None:
    rec = frames.recorded_requests_df(sample_corpus)
    assert isinstance(rec["input_tokens"].dtype, pd.ArrowDtype)
    assert rec["input_tokens"].isna().any()  # runs without usage
    assert str(rec["input_tokens"].dtype) == "int64[pyarrow]"
    req = frames.requests_df(both_trace)
    assert str(req["recorded_input_tokens"].dtype) == "int64[pyarrow]"


def test_loaders_keep_every_row(sample_corpus: Corpus, both_trace: Trace) -> None:
    assert len(frames.runs_df(sample_corpus)) == sample_corpus.runs.num_rows
    assert len(frames.requests_df(both_trace)) == both_trace.requests.num_rows
    assert len(frames.actions_df(both_trace)) == both_trace.actions.num_rows
    assert len(frames.evictions_df(both_trace)) == both_trace.evictions.num_rows


def test_run_ids_load_only_those_runs(sample_corpus: Corpus) -> None:
    rids = sample_corpus.replayable()[:3]
    df = frames.messages_df(sample_corpus, ("run_id", "msg", "text"), kinds=("tool_call",),
                            run_ids=rids)
    assert set(df["run_id"]) <= set(rids)
    whole = frames.messages_df(sample_corpus, ("run_id", "msg", "text"), kinds=("tool_call",))
    assert len(df) == whole["run_id"].isin(rids).sum()
    rec = frames.recorded_requests_df(sample_corpus, run_ids=rids)
    assert rec["run_id"].drop_duplicates().tolist() == rids
    assert frames.messages_df(sample_corpus, run_ids=[]).empty
