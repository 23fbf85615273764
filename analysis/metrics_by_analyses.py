"""The metric frame of a replay computed a second way, by the pandas analyses: the cross-check.

``metrics_by_analyses(corpus, trace, policy)`` loads the frames once, runs the five
analyses and joins their per-run summaries after a few basic columns (``_basic``, pandas
over the trace's requests and actions).  It gives the frame ``analysis.metrics.metrics``
gives — the same columns in the same order, rows sorted by ``run_id`` then ``policy``,
``int64`` integers and ``float64`` the rest (NaN where a statistic is undefined) — from the
analyses' own definitions, not from the per-run functions (``analysis.per_run``) that every
command uses.  No command calls it: it is the independent reference the tests compare those
functions against (``tests/analysis/test_metrics_agree.py``,
``tests/analysis/sweep/test_sweep.py``: integers exactly, floats to 1e-12 relative), so a
per-run function that drifts from its analysis is caught.

The corpus's own frames (recorded requests, tool blocks, the harness's compactions: the same
for every policy) are read by ``corpus_frames``; a caller that measures several policies over
the same runs reads them once and passes them in (``given``), as the tests' ``preset_run``
does for 17 presets.

Not here: the declarations (``analysis.per_run``), the frame the commands use
(``analysis.metrics``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import frames
from analysis.arg_share import arg_share, arg_share_summary
from analysis.cache_invalidation import (
    cache_actions,
    cache_invalidation,
    cache_invalidation_summary,
)
from analysis.induced import induced_summary
from analysis.overshoots import overshoots, overshoots_summary
from analysis.per_run.basic import BASIC
from analysis.rereads import REREADS_COLUMNS, rereads, rereads_summary
from analysis.summarisation import recorded_compactions, summarisation, summarisation_summary
from replay.corpus import Corpus
from replay.engine.trace import SUMMARY_KINDS, TRIM_KINDS, Trace
from replay.policy import Policy


@dataclass(frozen=True, eq=False)
class CorpusFrames:
    """The frames of a corpus's runs that no policy changes, as the analyses read them."""

    run_ids: tuple[str, ...]
    """The runs loaded, in the order asked."""
    recorded: pd.DataFrame
    """The recorded requests (``frames.recorded_requests_df``)."""
    tool_blocks: pd.DataFrame
    """The tool calls and results with ``REREADS_COLUMNS``."""
    compactions: pd.DataFrame
    """The original harness's compactions (``summarisation.recorded_compactions``)."""


def corpus_frames(corpus: Corpus, run_ids: Sequence[str]) -> CorpusFrames:
    """The policy-independent frames ``metrics_by_analyses`` reads for ``run_ids``."""
    ids = list(run_ids)
    recorded = frames.recorded_requests_df(corpus, run_ids=ids)
    tool_blocks = frames.messages_df(corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"),
                                     run_ids=ids)
    flags = frames.messages_df(corpus, ("run_id", "msg", "is_harness_summary"), run_ids=ids)
    return CorpusFrames(tuple(ids), recorded, tool_blocks, recorded_compactions(flags, recorded))


def trace_run_ids(trace: Trace) -> tuple[str, ...]:
    """The runs of ``trace``, in the order they first appear (``corpus_frames``'s ``run_ids``)."""
    return tuple(dict.fromkeys(str(r) for r in trace.requests.column("run_id").to_pylist()))


def metrics_by_analyses(corpus: Corpus, trace: Trace, policy: Policy, *,
                        given: CorpusFrames | None = None) -> pd.DataFrame:
    """Every summary column of the five analyses, one row per (run_id, policy): the cross-check
    of ``analysis.metrics.metrics`` (the same frame, computed by the pandas analyses).

    Args:
        corpus: the corpus the trace was replayed from.
        trace: the replay of ``policy`` over (some of) the corpus's runs.
        policy: the replayed policy (prices, tier minimums).
        given: ``corpus_frames(corpus, trace_run_ids(trace))``, read once for several
            policies (default: read here).

    Returns:
        ``run_id``, ``policy``, the basic columns (``analysis.per_run.basic``) and the ``rereads_*``, ``arg_share_*``,
        ``summarisation_*``, ``cache_invalidation_*`` and ``overshoots_*`` columns.

    Raises:
        ValueError: the trace holds another policy's rows, or ``given`` other runs than it.
    """
    req = frames.requests_df(trace)
    names = sorted(set(req["policy"].astype(str)))
    if any(n != policy.name for n in names):
        raise ValueError(f"trace holds policies {names}, expected only {policy.name!r}")
    act, ev = frames.actions_df(trace), frames.evictions_df(trace)
    run_ids = trace_run_ids(trace)
    if given is None:
        given = corpus_frames(corpus, run_ids)
    elif given.run_ids != run_ids:
        raise ValueError(f"given frames of runs {list(given.run_ids)}, the trace's are "
                         f"{list(run_ids)}")
    recorded, comps = given.recorded, given.compactions

    keys = _basic(req, act)
    parts = [
        rereads_summary(rereads(given.tool_blocks, recorded, ev, policies=names), keys=keys),
        arg_share_summary(arg_share(req)),
        summarisation_summary(summarisation(act, req, comps), req),
        cache_invalidation_summary(cache_invalidation(req, policy), cache_actions(act, policy)),
        overshoots_summary(overshoots(req, compactions=comps)),
        induced_summary(req, act),
    ]
    # each part's columns looked up at the keys (NaN where a part has no row for a pair), the
    # frame made once: a left merge a part cost ~14 ms of pandas however small the frames
    at = pd.MultiIndex.from_frame(keys[["run_id", "policy"]])
    cols: dict[str, Any] = dict(keys.items())
    for part in parts:
        rows = part.set_index(["run_id", "policy"])
        if not rows.index.is_unique:
            raise ValueError(f"an analysis gave two rows for a run: {list(rows.columns)}")
        for name, values in rows.reindex(at).items():
            assert name not in cols, f"two analyses give {name!r}"
            cols[name] = values.array
    out = pd.DataFrame(cols, index=keys.index)
    out = out.sort_values(["run_id", "policy"], kind="stable").reset_index(drop=True)
    return _plain_dtypes(out)


def _basic(req: pd.DataFrame, act: pd.DataFrame) -> pd.DataFrame:
    """Keys and the basic columns, one row per (run_id, policy) of the trace."""
    r = req.assign(run_id=req["run_id"].astype(str), policy=req["policy"].astype(str))
    g = r.groupby(["run_id", "policy"], sort=False)
    out = pd.DataFrame({
        "n_requests": g.size(),
        "tokens_sent": g["truth_tokens"].sum(),
        "peak_tokens": g["truth_tokens"].max(),
        "cost_usd": g["cost_usd"].sum(),
    }).reset_index()
    # the applied summaries and trims counted in one pass over the actions (a filter and a
    # group-by each cost ~10 ms of pandas)
    n_summaries: Counter[tuple[str, str]] = Counter()
    n_trims: Counter[tuple[str, str]] = Counter()
    for rid, pol, kind, undone in zip(act["run_id"].astype(str).tolist(),
                                      act["policy"].astype(str).tolist(), act["kind"].tolist(),
                                      act["undone"].astype(bool).tolist()):
        if not undone:
            n_summaries[rid, pol] += kind in SUMMARY_KINDS
            n_trims[rid, pol] += kind in TRIM_KINDS
    at = list(zip(out["run_id"].tolist(), out["policy"].tolist()))
    out["n_summaries"] = np.array([n_summaries[k] for k in at], dtype="int64")
    out["n_trims"] = np.array([n_trims[k] for k in at], dtype="int64")
    return out[["run_id", "policy", *BASIC.names]]


def _plain_dtypes(df: pd.DataFrame) -> pd.DataFrame:
    """Keys as str, whole-number columns as int64, the rest as float64."""
    # the columns made apart and the frame made once (inserting ~110 columns one by one into a
    # frame, each through pandas' astype, cost ~0.4 ms a column: most of a small run's metrics)
    cols: dict[str, Any] = {"run_id": df["run_id"].astype(str), "policy": df["policy"].astype(str)}
    for col in df.columns[2:]:
        values = df[col].to_numpy(dtype="float64", na_value=np.nan)
        is_int = pd.api.types.is_integer_dtype(df[col].dtype) or (
            str(df[col].dtype) in ("int64[pyarrow]",))
        cols[col] = values.astype("int64") if is_int and not np.isnan(values).any() else values
    return pd.DataFrame(cols, index=df.index)
