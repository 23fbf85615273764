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

import numpy as np
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
    indexed by ``by``.

    Every column of a rule in one group-by (``_per_group``), not one per column."""
    index = table.groupby(by, sort=False).size().index
    codes, uniques = pd.factorize(table[by], sort=False)
    if len(uniques) != len(index):
        raise RuntimeError("combine: groups and factorised keys disagree")
    rules = {c: total_rule(c) for c in columns}
    ratios = [c for c in columns if rules[c] == "ratio"
              and {RATIOS[c][0], RATIOS[c][1]} <= set(table.columns)]
    by_rule: dict[str, list[str]] = {"sum": [], "max": [], "min": [], "mean": []}
    for c in columns:
        r = rules[c]
        if r is not None and c not in ratios:
            by_rule["mean" if r == "ratio" else r].append(c)
    done: dict[str, np.ndarray] = {}
    for how, cols in by_rule.items():
        if not cols:
            continue
        vals = table[cols].astype("float64").to_numpy()
        got = (_weighted(vals, _weights(table, cols, rules), codes, len(index)) if how == "mean"
               else _per_group(vals, codes, len(index), how))
        done.update(zip(cols, got.T))
    groups = table.groupby(by, sort=False)
    for col in ratios:
        num, den, scale = RATIOS[col]
        sums = groups[[num, den]].sum()
        done[col] = (scale * sums[num] / sums[den].where(sums[den] > 0)).to_numpy()
    return pd.DataFrame({c: done[c] for c in columns if c in done}, index=index)


def _weights(table: pd.DataFrame, cols: list[str], rules: dict[str, Rule | None]) -> np.ndarray:
    """The weight of each value of ``cols`` (means), one column each: its ``WEIGHTS`` metric,
    else requests (a ratio whose parts are not in the table: requests always); 1 where the
    table lacks it."""
    out = np.ones((len(table), len(cols)))
    for j, col in enumerate(cols):
        weight = "n_requests" if rules[col] == "ratio" else WEIGHTS.get(col, "n_requests")
        if weight in table:
            out[:, j] = table[weight].astype("float64").to_numpy()
    return out


def _weighted(vals: np.ndarray, w: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group and column: Σ w·v / Σ w over the defined values; the plain mean where the
    weights of the defined values add up to 0; NaN where no value is defined."""
    ok = ~np.isnan(vals)
    k = vals.shape[1]
    sums = _per_group(np.hstack([np.where(ok, vals * w, np.nan), np.where(ok, w, np.nan)]),
                      codes, n_groups, "sum")
    num, den = sums[:, :k], sums[:, k:]
    plain = _per_group(vals, codes, n_groups, "mean")
    has_weight = den > 0
    with np.errstate(invalid="ignore"):
        out = num / np.where(has_weight, den, np.nan)
    return np.where(np.isnan(out) & ~has_weight, plain, out)


def _per_group(vals: np.ndarray, codes: np.ndarray, n_groups: int, how: str) -> np.ndarray:
    """``how`` ("sum" of the defined values, NaN if none; "mean", "max", "min") per group (rows
    by ``codes``; -1: no group, left out) and column, as a ``(n_groups, columns)`` array: the
    bits a group-by of each column alone gives, in two group-bys.

    pandas adds a column's groups with ``np.add.reduceat`` when the groups are contiguous and
    the column has no NaN, else with its compensated (Kahan) kernel; the two round differently,
    so the columns with a NaN and those without are taken apart.  Each part is one group-by of a
    single column, column j's rows being group ``code + j·n_groups``: every (group, column) is
    the same run of values, reduced the same way, as in the column's own group-by."""
    out = np.empty((n_groups, vals.shape[1]))
    has_nan = np.isnan(vals).any(axis=0)
    for part in (np.flatnonzero(has_nan), np.flatnonzero(~has_nan)):
        if len(part):
            out[:, part] = _one_column(vals[:, part], codes, n_groups, how)
    return out


def _one_column(vals: np.ndarray, codes: np.ndarray, n_groups: int, how: str) -> np.ndarray:
    """``_per_group`` of columns that all have a NaN or none, as one group-by of one column."""
    keep = codes >= 0
    k = vals.shape[1]
    labels = (codes[keep][None, :] + n_groups * np.arange(k)[:, None]).ravel()
    g = pd.Series(vals[keep].T.ravel()).groupby(labels, sort=True)
    got = g.sum(min_count=1) if how == "sum" else getattr(g, how)()
    out: np.ndarray = got.reindex(range(n_groups * k)).to_numpy().reshape(k, n_groups).T
    return out
