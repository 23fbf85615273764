"""Limit overshoots: requests the server would have rejected, and how far off the estimator was.

Definitions, per replayed request:

- ``limit_tokens = window − reserve``: what a request may hold when the server
  counts the answer reserve against the window;
- an *overshoot* is a request with ``overshoot_tokens > 0`` in the trace, i.e.
  ``truth + reserve − window > 0`` judged by the true token count (the engine
  leaves the reserve out when the server does not count it);
  ``overshoot_frac = overshoot_tokens / window``;
- ``est_error_frac = (est − truth) / truth`` — the harness's estimator against
  the truth (negative: it reads low, which is what lets a margin fire too late);
- against the recorded usage, on *comparable* requests only — the replayed
  context is still the raw one (``truth_tokens == raw_tokens``: the policy has
  not cut anything yet) and the original harness had not compacted yet (before
  the first recorded compaction) — ``est_vs_recorded_frac = (est − recorded) /
  recorded`` and ``truth_vs_recorded_frac = (truth − recorded) / recorded``;
  NA elsewhere or without usage;
- ``margin_needed_frac`` (overshoots only) — the smallest safety margin ``m`` for
  which a check *before sending* that fires when ``est ≥ (1 − m) × limit_tokens``
  would have fired for this request: ``max(0, 1 − est / limit_tokens)``.  It is
  stated on the exact limit (reserve subtracted); for a harness that plans
  against the whole window the equivalent margin is ``1 − (1 − m) × limit /
  window``.  Firing is necessary, not sufficient: whether the cut then brings
  the request under the limit is the tier's business.  The run's
  ``overshoots_margin_needed_max_frac`` is the margin that would have fired
  before every overshoot.

Not here: what the tiers did about it (``analysis.summarisation``, the actions table).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis._numeric import floats
from analysis.figure_text import plot_text
from analysis.per_run.overshoots import METRICS

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes


def overshoots(requests: pd.DataFrame, *, compactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per request: the limit, overshoot, estimator error and the margin that would have fired.

    Args:
        requests: trace requests.
        compactions: recorded harness compactions (``run_id``, ``request``; the output of
            ``analysis.summarisation.recorded_compactions``); requests from the first one on
            are not comparable with the recorded usage.  None: no compaction is assumed.

    Returns:
        One row per (run_id, policy, request): ``est_tokens``, ``truth_tokens``,
        ``recorded_input_tokens``, ``limit_tokens``, ``overshoot_tokens``, ``is_overshoot``,
        ``overshoot_frac``, ``est_error_frac``, ``is_comparable``, ``est_vs_recorded_frac``,
        ``truth_vs_recorded_frac``, ``margin_needed_frac``.
    """
    keys = requests[["run_id", "policy"]].astype(str).reset_index(drop=True)
    # the columns made apart and the frame made once (~18 columns inserted one by one cost
    # ~1 ms each of pandas)
    out: dict[str, Any] = dict(keys.items())
    for col in ("request", "est_tokens", "truth_tokens", "raw_tokens", "window_tokens",
                "reserve_tokens", "overshoot_tokens"):
        out[col] = floats(requests[col]).astype("int64").to_numpy()
    rec = floats(requests["recorded_input_tokens"]).to_numpy()
    out["recorded_input_tokens"] = pd.array([None if np.isnan(v) else int(v) for v in rec],
                                            dtype="Int64")
    out["limit_tokens"] = out["window_tokens"] - out["reserve_tokens"]
    out["is_overshoot"] = out["overshoot_tokens"] > 0
    with np.errstate(divide="ignore", invalid="ignore"):  # as pandas: x / 0 is inf, 0 / 0 NaN
        out["overshoot_frac"] = out["overshoot_tokens"] / out["window_tokens"]
    est, truth = out["est_tokens"].astype("float64"), out["truth_tokens"].astype("float64")
    out["est_error_frac"] = (est - truth) / np.where(truth > 0, truth, np.nan)
    first = _first_compaction(compactions)
    before = np.array([r < first.get(rid, np.inf) for rid, r in zip(
        keys["run_id"].tolist(), out["request"].tolist())], dtype=bool)
    comparable = (out["truth_tokens"] == out["raw_tokens"]) & before & (rec > 0)
    out["is_comparable"] = comparable
    with np.errstate(divide="ignore", invalid="ignore"):
        out["est_vs_recorded_frac"] = np.where(comparable, (est - rec) / rec, np.nan)
        out["truth_vs_recorded_frac"] = np.where(comparable, (truth - rec) / rec, np.nan)
    limit = out["limit_tokens"].astype("float64")
    need = np.maximum(0.0, 1.0 - est / np.where(limit > 0, limit, np.nan))
    out["margin_needed_frac"] = np.where(out["is_overshoot"], need, np.nan)
    del out["raw_tokens"]
    return pd.DataFrame(out, index=keys.index)


def overshoots_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Overshoot counts and sizes, estimator error distribution, margin needed, per (run, policy).

    Args:
        df: the output of ``overshoots``.

    Returns:
        ``run_id``, ``policy`` and ``overshoots_*`` columns: ``_n``, ``_frac`` (of requests),
        ``_first_request`` (-1 when none), ``_max_tokens``, ``_total_tokens``,
        ``_margin_needed_max_frac`` (NaN when none), the estimator error's
        ``_est_error_{median,p05,p95,mean_abs}_frac`` and, on comparable requests,
        ``_n_comparable``, ``_est_vs_recorded_median_frac``, ``_truth_vs_recorded_median_frac``.
    """
    # numpy per (run, policy), not a pandas frame per group: each value as pandas gives it
    # (np.quantile is what Series.quantile calls; the mean stays a Series mean)
    codes = df.groupby(["run_id", "policy"], sort=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(codes.max() + 2 if len(codes) else 1))
    rid_col, pol_col = df["run_id"].to_numpy(), df["policy"].to_numpy()
    over_col = df["is_overshoot"].to_numpy(dtype=bool)
    comp_col = df["is_comparable"].to_numpy(dtype=bool)
    request, tokens = df["request"].to_numpy(), df["overshoot_tokens"].to_numpy()
    fl = {c: df[c].to_numpy(dtype="float64", na_value=np.nan)
          for c in ("est_error_frac", "margin_needed_frac", "est_vs_recorded_frac",
                    "truth_vs_recorded_frac")}
    rows = []
    for lo, hi in itertools.pairwise(bounds):
        pos = order[lo:hi]
        over, comp = pos[over_col[pos]], pos[comp_col[pos]]
        err = _defined(fl["est_error_frac"][pos])
        margin = _defined(fl["margin_needed_frac"][over])
        rows.append({
            "run_id": rid_col[pos[0]], "policy": pol_col[pos[0]],
            "overshoots_n": len(over),
            "overshoots_frac": len(over) / len(pos),
            "overshoots_first_request": int(request[over].min()) if len(over) else -1,
            "overshoots_max_tokens": int(tokens[over].max()) if len(over) else 0,
            "overshoots_total_tokens": int(tokens[over].sum()),
            "overshoots_margin_needed_max_frac": (float(margin.max()) if len(margin)
                                                  else np.nan),
            "overshoots_est_error_median_frac": _q(err, 0.5),
            "overshoots_est_error_p05_frac": _q(err, 0.05),
            "overshoots_est_error_p95_frac": _q(err, 0.95),
            "overshoots_est_error_mean_abs_frac": (float(pd.Series(np.abs(err)).mean())
                                                   if len(err) else np.nan),
            "overshoots_n_comparable": len(comp),
            "overshoots_est_vs_recorded_median_frac": _q(
                _defined(fl["est_vs_recorded_frac"][comp]), 0.5),
            "overshoots_truth_vs_recorded_median_frac": _q(
                _defined(fl["truth_vs_recorded_frac"][comp]), 0.5),
        })
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


HIST_CLIP_PCT = 1.0
"""The estimator histogram spans the 1st to 99th percentile of the errors widened by that
range again on each side (and 0); errors beyond are drawn at its edges and counted in the
legend, so one outlier does not squeeze the rest into a bin."""
HIST_LOG_RATIO = 10.0
"""The histogram's counts go on a log scale when its tallest bin is this many times the median
bin's (a spike of exact estimates would flatten the rest)."""


def plot_overshoots(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Distribution of the estimator's relative error (estimate vs truth; vs recorded usage).

    Args:
        df: the output of ``overshoots``.
        ax: where to draw (default: a new figure).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(7, 4))[1]
    series = [(f"{plot_text(pol)}: estimate vs truth", g["est_error_frac"].dropna())
              for pol, g in df.groupby("policy", sort=True)]
    rec = df.drop_duplicates(subset=["run_id", "request"])["est_vs_recorded_frac"].dropna()
    if len(rec):
        series.append(("estimate vs recorded usage", rec))
    values = [s.to_numpy(dtype="float64") for _, s in series]
    pooled = np.concatenate(values) if values else np.zeros(0)
    lo, hi = -1.0, 1.0
    if len(pooled):  # the bulk's range, and as much again on each side as the data reach
        p_lo, p_hi = (float(x) for x in np.percentile(pooled, [HIST_CLIP_PCT,
                                                              100 - HIST_CLIP_PCT]))
        more = max(p_hi - p_lo, 0.01)
        lo = max(float(pooled.min()), p_lo - more)
        hi = min(float(pooled.max()), p_hi + more)
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.01, hi + 0.01
    bins = [float(b) for b in np.linspace(lo, hi, 41)]
    tallest = []
    for (label, _), v in zip(series, values):
        out = int(((v < lo) | (v > hi)).sum())
        counts = ax.hist(np.clip(v, lo, hi), bins=bins, histtype="step",
                         label=label + (f" ({out} beyond the axis, drawn at its edges)"
                                        if out else ""))[0]
        tallest += [c for c in np.ravel(counts) if c > 0]
    log = bool(tallest) and max(tallest) > HIST_LOG_RATIO * float(np.median(tallest))
    if log:  # one spike (an exact estimator's zeros) would flatten every other bin
        ax.set_yscale("log")
    n_over = int(df["is_overshoot"].sum())
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("relative error of the estimate ((est − reference) / reference, fraction)")
    ax.set_ylabel("requests (count, log scale)" if log else "requests (count)")
    ax.set_title(f"Estimator error ({n_over} requests over window − reserve)")
    ax.legend(fontsize="small")
    return ax


def _first_compaction(compactions: pd.DataFrame | None) -> dict[str, float]:
    """run_id → the first request after a recorded compaction."""
    if compactions is None or not len(compactions):
        return {}
    c = compactions.dropna(subset=["request"])
    return {str(rid): float(g["request"].min()) for rid, g in c.groupby("run_id", sort=False)}


def _defined(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v[~np.isnan(v)]
    return out


def _q(v: np.ndarray, q: float) -> float:
    """The ``q`` quantile of defined values ``v`` (NaN if none), as ``Series.quantile``."""
    return float(np.quantile(v, [q], method="linear")[0]) if len(v) else np.nan


_SUMMARY_COLUMNS = ["run_id", "policy", *(n for p in METRICS for n in p.names)]
