"""Every metric of one replay, one row per (run_id, policy): what sweeps and CI checks compare.

``metrics(corpus, trace, policy)`` loads the frames once, runs the five
analyses and joins their summaries after a few basic columns:

``n_requests``, ``tokens_sent``, ``peak_tokens``, ``n_summaries``, ``n_trims`` and
``cost_usd`` (``analysis.per_run.basic``: their declarations say what each is).

Columns come in a fixed order (keys, basic, then ``rereads_*``,
``arg_share_*``, ``summarisation_*``, ``cache_invalidation_*``,
``overshoots_*``), rows sorted by ``run_id`` then ``policy``; integers are
``int64`` and everything else ``float64`` (NaN where a statistic is undefined),
so two runs of the same inputs give equal frames.
Every column is declared once, as a ``MetricSpec`` in ``analysis.per_run.<analysis>``
beside its fast computation; ``METRIC_COLUMNS``, ``FLOAT_COLUMNS``, ``METRIC_DIRECTIONS``
(which way is better), ``RATIOS`` and ``WEIGHTS`` (how runs combine) are built from them
there and re-exported here.
"""

from __future__ import annotations

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
from analysis.per_run import (
    FLOAT_COLUMNS,
    METRIC_COLUMNS,
    METRIC_DIRECTIONS,
    PARTS,
    RATIOS,
    SPECS,
    WEIGHTS,
    known,
)
from analysis.per_run.basic import BASIC
from analysis.rereads import REREADS_COLUMNS, rereads, rereads_summary
from analysis.summarisation import recorded_compactions, summarisation, summarisation_summary
from replay.corpus import Corpus
from replay.engine.trace import SUMMARY_KINDS, TRIM_KINDS, Trace
from replay.policy import Policy

__all__ = ["BASIC", "BASIC_COLUMNS", "FLOAT_COLUMNS", "METRIC_COLUMNS", "METRIC_DIRECTIONS", "PARTS",
           "RATIOS", "SPECS", "WEIGHTS", "known", "metrics"]
BASIC_COLUMNS: tuple[str, ...] = BASIC.names


def metrics(corpus: Corpus, trace: Trace, policy: Policy) -> pd.DataFrame:
    """Every summary column of the five analyses, one row per (run_id, policy).

    Args:
        corpus: the corpus the trace was replayed from.
        trace: the replay of ``policy`` over (some of) the corpus's runs.
        policy: the replayed policy (prices, tier minimums).

    Returns:
        ``run_id``, ``policy``, ``BASIC_COLUMNS`` and the ``rereads_*``, ``arg_share_*``,
        ``summarisation_*``, ``cache_invalidation_*`` and ``overshoots_*`` columns.

    Raises:
        ValueError: the trace holds another policy's rows.
    """
    req = frames.requests_df(trace)
    names = sorted(set(req["policy"].astype(str)))
    if any(n != policy.name for n in names):
        raise ValueError(f"trace holds policies {names}, expected only {policy.name!r}")
    act, ev = frames.actions_df(trace), frames.evictions_df(trace)
    run_ids = list(dict.fromkeys(req["run_id"].astype(str)))
    recorded = frames.recorded_requests_df(corpus, run_ids=run_ids)
    tool_blocks = frames.messages_df(corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"),
                                     run_ids=run_ids)
    flags = frames.messages_df(corpus, ("run_id", "msg", "is_harness_summary"), run_ids=run_ids)
    comps = recorded_compactions(flags, recorded)

    keys = _basic(req, act)
    parts = [
        rereads_summary(rereads(tool_blocks, recorded, ev, policies=names), keys=keys),
        arg_share_summary(arg_share(req)),
        summarisation_summary(summarisation(act, req, comps), req),
        cache_invalidation_summary(cache_invalidation(req, policy), cache_actions(act, policy)),
        overshoots_summary(overshoots(req, compactions=comps)),
        induced_summary(req, act),
    ]
    out = keys
    for part in parts:
        out = out.merge(part, on=["run_id", "policy"], how="left", validate="one_to_one")
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
    a = act.assign(run_id=act["run_id"].astype(str), policy=act["policy"].astype(str))
    applied = a[~a["undone"].astype(bool)]
    counts = {
        "n_summaries": applied[applied["kind"].isin(SUMMARY_KINDS)].groupby(["run_id", "policy"]).size(),
        "n_trims": applied[applied["kind"].isin(TRIM_KINDS)].groupby(["run_id", "policy"]).size(),
    }
    for name, s in counts.items():
        idx = pd.MultiIndex.from_frame(out[["run_id", "policy"]])
        out[name] = s.reindex(idx, fill_value=0).to_numpy() if len(s) else 0
    return out[["run_id", "policy", *BASIC_COLUMNS]]


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
