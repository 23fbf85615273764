"""Diff of two policies (or two traces) over the same runs: every metric, per run and in total.

``diff(metrics_a, metrics_b)`` takes two outputs of ``analysis.metrics.metrics``
and compares them run by run (runs present in both only) and in total, one row
per (run, metric):

- ``delta = b − a``; ``rel_delta = delta / |a|`` (0 when both are 0, ±inf when
  only ``a`` is 0, NaN when either is undefined or the metric is a request's number that
  moved, ``REQUEST_NUMBER``);
- ``verdict`` — ``better`` / ``worse`` / ``same`` by ``METRIC_DIRECTIONS`` (``b``
  against ``a``), '' for metrics without a direction or with a NaN.

Totals (``scope = "total"``, ``run_id = TOTAL``) combine each side over the
compared runs (``analysis.run_totals``: one rule per metric, the same as a sweep's
totals per setting).

Rows where both sides are NaN are left out.  The totals come first, then the
per-run rows; each section is sorted by the largest ``|rel_delta|`` first, then
``|delta|``, metric and run id, so equal inputs give equal frames.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics import METRIC_DIRECTIONS
from analysis.run_totals import combine, total_rule

TOTAL = "(all runs)"
"""``run_id`` of the totals rows."""
DIFF_COLUMNS: tuple[str, ...] = ("scope", "run_id", "metric", "a", "b", "delta", "rel_delta",
                                 "direction", "verdict")
KEYS: tuple[str, ...] = ("run_id", "policy")
REQUEST_NUMBER = "_request"
"""How a metric that is a request's number ends (``overshoots_first_request``, -1 for none):
a position, no amount, so it has no relative change (-1 -> 193 was "+19,400%", and sorted
first as the largest change)."""

def totals(metrics: pd.DataFrame) -> pd.DataFrame:
    """Every metric combined over the runs, one row per policy (``analysis.run_totals``).

    Args:
        metrics: the output of ``analysis.metrics.metrics`` (one or several policies).

    Returns:
        ``policy``, ``n_runs`` and one column per metric that has a total, policies in
        order of first appearance.
    """
    cols = [c for c in metrics.columns if c not in KEYS and total_rule(c) is not None]
    out = combine(metrics, "policy", cols)
    out.insert(0, "n_runs", metrics.groupby("policy", sort=False).size())
    return out.rename_axis("policy").reset_index().astype({"policy": str})


def diff(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> pd.DataFrame:
    """Per-metric deltas of ``b`` against ``a``, per run and in total, largest changes first.

    Args:
        metrics_a: ``analysis.metrics.metrics`` of the first policy (or trace).
        metrics_b: the same for the second, over (some of) the same runs.

    Returns:
        ``DIFF_COLUMNS``: the totals section, then the per-run rows.

    Raises:
        ValueError: a frame holds more than one policy, or the two share no run.
    """
    for name, m in (("metrics_a", metrics_a), ("metrics_b", metrics_b)):
        if m["policy"].nunique() > 1:
            raise ValueError(f"{name} holds several policies: {sorted(set(m['policy']))}")
    common = [r for r in metrics_a["run_id"] if r in set(metrics_b["run_id"])]
    if not common:
        raise ValueError("the two metric frames have no run in common")
    a = metrics_a.set_index("run_id").loc[common]
    b = metrics_b.set_index("run_id").loc[common]
    names = [c for c in metrics_a.columns
             if c not in KEYS and c in metrics_b.columns and _numeric(a[c]) and _numeric(b[c])]
    ta = totals(a.reset_index()).iloc[0]
    tb = totals(b.reset_index()).iloc[0]
    total_rows = [_row("total", TOTAL, c, ta[c], tb[c]) for c in names if c in ta.index]
    run_rows = [_row("run", rid, c, av, bv) for c in names
                for rid, av, bv in zip(common, a[c].to_numpy(), b[c].to_numpy())]
    parts = [_sorted(pd.DataFrame([r for r in rows if r is not None], columns=list(DIFF_COLUMNS)))
             for rows in (total_rows, run_rows)]
    return pd.concat(parts, ignore_index=True)


def to_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts for JSON: NaN and ±inf become None, numpy scalars Python ones."""
    out = []
    for rec in df.to_dict(orient="records"):
        out.append({str(k): _plain(v) for k, v in rec.items()})
    return out


def _row(scope: str, run_id: str, metric: str, a: Any, b: Any) -> dict[str, Any] | None:
    a, b = float(a), float(b)
    if math.isnan(a) and math.isnan(b):
        return None
    delta = b - a
    if math.isnan(delta) or (delta != 0 and metric.endswith(REQUEST_NUMBER)):
        rel = math.nan
    elif a != 0:
        rel = delta / abs(a)
    else:
        rel = 0.0 if delta == 0 else math.copysign(math.inf, delta)
    direction = METRIC_DIRECTIONS.get(metric, "")
    if not direction or math.isnan(delta):
        verdict = ""
    elif delta == 0:
        verdict = "same"
    else:
        verdict = "better" if (delta < 0) == (direction == "lower") else "worse"
    return {"scope": scope, "run_id": run_id, "metric": metric, "a": a, "b": b, "delta": delta,
            "rel_delta": rel, "direction": direction, "verdict": verdict}


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    key = df.assign(_rel=-df["rel_delta"].abs().fillna(-1.0), _mag=-df["delta"].abs().fillna(-1.0))
    key = key.sort_values(["_rel", "_mag", "metric", "run_id"], kind="stable")
    return key.drop(columns=["_rel", "_mag"]).reset_index(drop=True)


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _plain(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    return v
