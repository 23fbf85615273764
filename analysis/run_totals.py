"""How a metric combines over runs: one rule per metric (``total_rule``) and one way to apply it
(``combine``), used by ``diff`` (totals per policy) and ``pareto`` (a sweep's totals per setting).

- ratios (``RATIOS``) are recomputed from their summed parts: cached share = Σ cached tokens /
  Σ tokens sent, overshoot fraction = Σ overshoots / Σ requests, summaries per 100 requests;
- maxima and peaks take the maximum, minima the minimum;
- every other mean, median, share or fraction is averaged over the runs weighted by what it
  is a mean of (``WEIGHTS``: requests by default) — for medians and quantiles an
  approximation of the pooled statistic;
- counts, tokens, bytes and costs are summed;
- request indices (``*_request``) and values tied to one run's peak have no total.

Undefined values (NaN) are skipped; a total of nothing but undefined values is undefined.

Not here: the metrics (``analysis.metrics``), what the totals are compared for (``diff``,
``pareto``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pandas as pd

from analysis.metrics import RATIOS, WEIGHTS, known

Rule = Literal["sum", "max", "min", "mean", "ratio"]
_NO_TOTAL = set(known("arg_share_results_bytes_at_args_peak"))
_MEAN_MARKS = ("_mean", "_median", "_p05", "_p95", "share", "_frac", "per_100", "per_action")


def total_rule(metric: str) -> Rule | None:
    """How ``metric`` is combined over runs (see the module docstring); None: no total."""
    if metric in RATIOS:
        return "ratio"
    if metric in _NO_TOTAL or metric.endswith("_request"):
        return None
    if "_max_" in metric or "peak" in metric or metric.endswith(("_max", "_mismatch_usd")):
        return "max"
    if "_min_" in metric:
        return "min"
    if any(mark in metric for mark in _MEAN_MARKS):
        return "mean"
    return "sum"


def combine(table: pd.DataFrame, by: str, columns: Sequence[str]) -> pd.DataFrame:
    """Each of ``columns`` combined over the rows of each ``by`` group (``total_rule``; the
    columns without a total are left out), one row per group in order of first appearance,
    indexed by ``by``."""
    keys = table[by]
    groups = table.groupby(by, sort=False)
    out = pd.DataFrame(index=groups.size().index)
    for col in columns:
        rule = total_rule(col)
        if rule is None:
            continue
        vals = table[col].astype("float64")
        if rule == "ratio" and {RATIOS[col][0], RATIOS[col][1]} <= set(table.columns):
            num, den, scale = RATIOS[col]
            sums = groups[[num, den]].sum()
            out[col] = scale * sums[num] / sums[den].where(sums[den] > 0)
        elif rule == "sum":
            out[col] = vals.groupby(keys, sort=False).sum(min_count=1)
        elif rule == "max":
            out[col] = vals.groupby(keys, sort=False).max()
        elif rule == "min":
            out[col] = vals.groupby(keys, sort=False).min()
        else:  # a mean (or a ratio whose parts are not in the table): weighted over runs
            weight = "n_requests" if rule == "ratio" else WEIGHTS.get(col, "n_requests")
            out[col] = _weighted(vals, table[weight].astype("float64") if weight in table
                                 else pd.Series(1.0, index=table.index), keys)
    return out


def _weighted(vals: pd.Series, w: pd.Series, keys: pd.Series) -> pd.Series:
    """Per group: Σ w·v / Σ w over the defined values; the plain mean where the weights of
    the defined values add up to 0; NaN where no value is defined."""
    ok = vals.notna()
    num = (vals * w).where(ok).groupby(keys, sort=False).sum(min_count=1)
    den = w.where(ok).groupby(keys, sort=False).sum(min_count=1)
    plain = vals.groupby(keys, sort=False).mean()
    return (num / den.where(den > 0)).fillna(plain.where(den.fillna(0) <= 0))
