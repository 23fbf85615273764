"""Cache invalidation: how much of each request the prefix cache served, what cuts broke, the cost.

Definitions.

- ``cached_share`` of a (run, policy) = Σ ``cached_tokens`` / Σ ``truth_tokens``
  over its requests (a ratio of sums, so long requests weigh more; ≤ 1 because a
  request's cached tokens never exceed its input).  Per request, the same ratio
  (NaN for an empty request).
- ``invalidated_tokens`` — tokens of the previous request's prefix that a cut
  made since then forced to be recomputed (trace ``requests``); per action, the
  tokens after the action's first changed position (trace ``actions``; actions
  of one request may overlap, so per-request totals come from ``requests``).
  Tiers are grouped by family: trim, summarise, collapse (``collapse`` and
  ``collapse_trim``), custom.
- cost — the trace's ``cost_usd`` per request, with the policy's price table:
  fresh input, cache reads, cache writes and output priced separately.  The
  module re-prices every request (``cost_check_usd``) and checks each input
  token is priced once (``cached + cache_write + fresh == truth``).
- *below the minimum* — a trim pass undone because it would have reclaimed less
  than the tier's minimum, or an applied trim that reclaimed (estimated tokens,
  as the tier judges) less than ``min_reclaim_tokens`` / ``min_reclaim_frac ×
  usable``.  Policies without a minimum have none, so a common yardstick is also
  given: a *small trim* is an applied trim-like action (``trim``,
  ``collapse_trim``, ``custom_trim``) that invalidated cached tokens but reclaimed
  (truth) less than ``small_reclaim_frac`` (default 1/8, the corrected seed
  harness's rule; ``analysis.metric_spec.AnalysisParams``) of the usable window.
- recorded comparison — where the log recorded usage, ``recorded_cached_share``
  = Σ ``recorded_cache_read_tokens`` / Σ ``recorded_input_tokens`` over the
  requests that have both, beside the replay's share over the same requests.

Not here: the cache model itself (``replay.engine.cache``), summary frequency.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis._numeric import floats
from analysis.figure_text import plot_text
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.per_run.cache_invalidation import METRICS, beyond_rounding
from analysis.per_run.stats import ratio
from replay.engine.trace import FAMILIES, FAMILY_NAMES, TRIM, TRIM_KINDS
from replay.policy import Policy

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes


def cache_invalidation(requests: pd.DataFrame, policy: Policy) -> pd.DataFrame:
    """Per request: cache split, cached share, invalidated tokens, cost (and its check).

    Args:
        requests: trace requests of ``policy``.
        policy: the replayed policy (its price table).

    Returns:
        One row per (run_id, policy, request): token columns, ``cached_share``,
        ``invalidated_tokens``, ``cost_usd``, ``cost_<part>_usd`` for fresh / cache_read /
        cache_write / output / the induced re-reads' calls (``replay.engine.induced``: in
        ``cost_usd``), ``cost_check_usd``, ``is_priced_once``,
        ``recorded_input_tokens``, ``recorded_cache_read_tokens``, ``recorded_cached_share``.
    """
    p = policy.cache.prices
    keys = requests[["run_id", "policy"]].astype(str).reset_index(drop=True)
    # the columns made apart and the frame made once (~20 columns inserted one by one cost
    # ~1 ms each of pandas)
    out: dict[str, Any] = dict(keys.items())
    for col in ("request", "truth_tokens", "cached_tokens", "cache_write_tokens", "fresh_tokens",
                "output_tokens", "invalidated_tokens"):
        out[col] = floats(requests[col]).astype("int64").to_numpy()
    truth = out["truth_tokens"].astype("float64")
    out["cached_share"] = out["cached_tokens"] / np.where(truth > 0, truth, np.nan)
    out["cost_usd"] = floats(requests["cost_usd"]).to_numpy()
    out["cost_fresh_usd"] = out["fresh_tokens"] * p.input_per_mtok / 1e6
    out["cost_cache_read_usd"] = out["cached_tokens"] * p.cache_read_per_mtok / 1e6
    out["cost_cache_write_usd"] = out["cache_write_tokens"] * (p.cache_write_per_mtok or 0.0) / 1e6
    out["cost_output_usd"] = out["output_tokens"] * p.output_per_mtok / 1e6
    out["cost_induced_usd"] = (floats(requests["induced_cost_usd"]).to_numpy()
                               if "induced_cost_usd" in requests
                               else np.zeros(len(keys), dtype="float64"))
    parts = ("cost_fresh_usd", "cost_cache_read_usd", "cost_cache_write_usd", "cost_output_usd",
             "cost_induced_usd")
    out["cost_check_usd"] = pd.DataFrame({c: out[c] for c in parts}).sum(axis=1).to_numpy()
    out["is_priced_once"] = (out["cached_tokens"] + out["cache_write_tokens"]
                             + out["fresh_tokens"]) == out["truth_tokens"]
    rin = floats(requests["recorded_input_tokens"]).to_numpy()
    rcr = floats(requests["recorded_cache_read_tokens"]).to_numpy()
    out["recorded_input_tokens"] = pd.array(_nullable(rin), dtype="Int64")
    out["recorded_cache_read_tokens"] = pd.array(_nullable(rcr), dtype="Int64")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["recorded_cached_share"] = np.where(rin > 0, rcr / rin, np.nan)
    return pd.DataFrame(out, index=keys.index)


def cache_actions(actions: pd.DataFrame, policy: Policy, *,
                  small_reclaim_frac: float = DEFAULT_PARAMS.small_reclaim_frac) -> pd.DataFrame:
    """Per action: tokens invalidated and reclaimed, below the tier's minimum, small trim.

    Args:
        actions: trace actions of ``policy``.
        policy: the replayed policy (tier minimums, usable window).
        small_reclaim_frac: the yardstick for a small trim, as a fraction of the usable window.

    Returns:
        One row per action: ``run_id``, ``policy``, ``action``, ``request``, ``tier``,
        ``kind``, ``family``, ``undone``, ``invalidated_tokens``, ``reclaimed_tokens``,
        ``reclaimed_est_tokens``, ``min_reclaim_tokens``, ``is_below_min``, ``is_small_trim``.
    """
    keys = actions[["run_id", "policy", "tier", "kind"]].astype(str).reset_index(drop=True)
    out: dict[str, Any] = dict(keys.items())  # the frame made once, as in cache_invalidation
    for col in ("action", "request", "invalidated_tokens", "reclaimed_tokens",
                "reclaimed_est_tokens", "min_reclaim_tokens"):
        out[col] = floats(actions[col]).astype("int64").to_numpy()
    undone = actions["undone"].astype(bool).to_numpy()
    out["undone"] = undone
    out["family"] = keys["kind"].map(FAMILIES).fillna("other")
    kind = keys["kind"].to_numpy(dtype=object)
    short = out["reclaimed_est_tokens"] < out["min_reclaim_tokens"]
    applied_short = (kind == TRIM) & short
    out["is_below_min"] = undone | (~undone & applied_short)
    small = int(small_reclaim_frac * policy.usable_tokens)
    out["is_small_trim"] = (keys["kind"].isin(TRIM_KINDS).to_numpy() & ~undone
                            & (out["invalidated_tokens"] > 0) & (out["reclaimed_tokens"] < small))
    return pd.DataFrame({c: out[c] for c in _ACTION_COLUMNS}, index=keys.index)


def cache_invalidation_summary(df: pd.DataFrame, acts: pd.DataFrame) -> pd.DataFrame:
    """Cached share, invalidation, cost and small trims, one row per (run_id, policy).

    Args:
        df: the output of ``cache_invalidation``.
        acts: the output of ``cache_actions`` for the same trace.

    Returns:
        ``run_id``, ``policy`` and ``cache_invalidation_*`` columns.
    """
    # numpy per (run, policy), not pandas frames per group: each value as the pandas
    # reduction gives it (float sums skip NaN, pairwise; means are float sums over counts)
    g = ["run_id", "policy"]
    codes = df.groupby(g, sort=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(codes.max() + 2 if len(codes) else 1))
    r_ = {c: df[c].to_numpy() for c in ("run_id", "policy", "cached_tokens", "truth_tokens",
                                        "invalidated_tokens")}
    r_f = {c: df[c].to_numpy(dtype="float64", na_value=np.nan)
           for c in ("cost_cache_read_usd", "cost_usd", "cost_check_usd",
                     "recorded_input_tokens", "recorded_cache_read_tokens")}
    rec_in, rec_read = r_f["recorded_input_tokens"], r_f["recorded_cache_read_tokens"]
    rec_both = ~np.isnan(rec_in) & ~np.isnan(rec_read)
    priced_once = df["is_priced_once"].to_numpy(dtype=bool)
    by_acts = acts.groupby(g, sort=False).indices if len(acts) else {}
    a_undone = acts["undone"].to_numpy(dtype=bool)
    a_inv = acts["invalidated_tokens"].to_numpy()
    a_family = acts["family"].to_numpy()
    a_below, a_small = (acts[c].to_numpy(dtype=bool) for c in ("is_below_min", "is_small_trim"))
    none = np.zeros(0, dtype=np.intp)
    rows = []
    for lo, hi in itertools.pairwise(bounds):
        pos = order[lo:hi]
        rid, pol = r_["run_id"][pos[0]], r_["policy"][pos[0]]
        ap = by_acts.get((rid, pol), none)
        applied = ap[~a_undone[ap]]
        both = pos[rec_both[pos] & (rec_in[pos] > 0)]
        inv_applied = a_inv[applied]
        small = ap[a_small[ap]]
        row: dict[str, object] = {
            "run_id": rid, "policy": pol,
            "cache_invalidation_cached_share": ratio(_total(r_["cached_tokens"][pos]),
                                                      _total(r_["truth_tokens"][pos])),
            "cache_invalidation_cached_tokens": int(_total(r_["cached_tokens"][pos])),
            "cache_invalidation_invalidated_tokens": int(_total(r_["invalidated_tokens"][pos])),
            "cache_invalidation_n_invalidating_actions": int((inv_applied > 0).sum()),
            "cache_invalidation_invalidated_per_action_tokens": (
                float(inv_applied.sum(dtype=np.float64) / len(applied)) if len(applied)
                else np.nan),
        }
        for fam in FAMILY_NAMES:
            row[f"cache_invalidation_invalidated_{fam}_tokens"] = int(
                inv_applied[a_family[applied] == fam].sum())
        row.update({
            "cache_invalidation_n_below_min": int(a_below[ap].sum()),
            "cache_invalidation_n_undone": int(a_undone[ap].sum()),
            "cache_invalidation_n_small_trims": len(small),
            "cache_invalidation_small_trim_invalidated_tokens": int(a_inv[small].sum()),
            "cache_invalidation_cost_cache_read_usd": float(
                _total(r_f["cost_cache_read_usd"][pos])),
            "cache_invalidation_cost_mismatch_usd": beyond_rounding(_nan_max(np.abs(
                r_f["cost_usd"][pos] - r_f["cost_check_usd"][pos]))),
            "cache_invalidation_n_mispriced": int((~priced_once[pos]).sum()),
            "cache_invalidation_recorded_requests": len(both),
            "cache_invalidation_recorded_cached_share": ratio(
                _total(rec_read[both]), _total(rec_in[both])),
            "cache_invalidation_cached_share_where_recorded": ratio(
                _total(r_["cached_tokens"][both]), _total(r_["truth_tokens"][both])),
        })
        rows.append(row)
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


def _total(v: np.ndarray) -> float:
    """The sum of the defined values, as ``Series.sum`` (NaN counted as 0, numpy's sum)."""
    return v.sum() if v.dtype.kind != "f" else np.where(np.isnan(v), 0.0, v).sum()  # type: ignore[no-any-return]


def _nan_max(v: np.ndarray) -> float:
    """The largest defined value (NaN if none), as ``Series.max``."""
    v = v[~np.isnan(v)]
    return float(v.max()) if len(v) else np.nan


def plot_cache_invalidation(df: pd.DataFrame, *, ax: Axes | None = None,
                            labels: Mapping[str, str] | None = None) -> Axes:
    """Cumulative tokens invalidated by cuts, over the request index, one line per (run, policy).

    Args:
        df: the output of ``cache_invalidation``.
        ax: where to draw (default: a new figure).
        labels: run id → how the legend names the run (default: its id).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(7, 4))[1]
    for (rid, pol), g in df.groupby(["run_id", "policy"], sort=False):
        share = ratio(g["cached_tokens"].sum(), g["truth_tokens"].sum())
        ax.plot(g["request"], g["invalidated_tokens"].cumsum(),
                label=f"{plot_text(f'{(labels or {}).get(rid, rid)} {pol}')} "
                      f"(cached share {share:.0%})")
    ax.set_xlabel("request")
    ax.set_ylabel("tokens invalidated, cumulative (tokens)")
    ax.set_title("Prefix-cache invalidation")
    ax.legend(fontsize="small")
    return ax


_ACTION_COLUMNS = ["run_id", "policy", "action", "request", "tier", "kind", "family", "undone",
                   "invalidated_tokens", "reclaimed_tokens", "reclaimed_est_tokens",
                   "min_reclaim_tokens", "is_below_min", "is_small_trim"]


def _nullable(a: np.ndarray) -> list[int | None]:
    return [None if np.isnan(v) else int(v) for v in a]


_SUMMARY_COLUMNS = ["run_id", "policy", *(n for p in METRICS for n in p.names)]
