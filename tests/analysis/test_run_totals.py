"""One rule per metric for combining runs: ``diff``'s totals per policy and a sweep's totals per
setting (``pareto.aggregate``) are the same numbers (they were two rule sets by name pattern,
and disagreed: unweighted means and ``*min*``/``*max*`` substrings in pareto)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.metrics import METRIC_COLUMNS
from analysis.report.diff import totals
from analysis.run_totals import total_rule
from analysis.sweep.pareto import aggregate


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(5):
        row: dict[str, object] = {c: float(rng.integers(0, 1000)) for c in METRIC_COLUMNS}
        row.update(run_id=f"r{run}", n_requests=float(rng.integers(1, 300)))
        if run == 2:  # undefined values are skipped, not zeros
            row["overshoots_est_error_median_frac"] = math.nan
            row["cache_invalidation_cached_share"] = math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def test_a_sweep_and_a_diff_total_every_metric_alike() -> None:
    table = _table(7)
    by_policy = totals(table.assign(policy="p")).iloc[0]
    by_setting = aggregate(table.assign(setting="s")).set_index("setting").loc["s"]
    compared = [c for c in METRIC_COLUMNS if total_rule(c) is not None]
    assert len(compared) > 60
    for col in compared:
        assert by_policy[col] == by_setting[col] or (
            math.isnan(by_policy[col]) and math.isnan(by_setting[col])), col


def test_means_are_weighted_by_requests_and_skip_undefined_values() -> None:
    table = _table(3)
    col = "overshoots_est_error_median_frac"
    assert total_rule(col) == "mean"
    ok = table[col].notna()
    want = (table[col][ok] * table["n_requests"][ok]).sum() / table["n_requests"][ok].sum()
    assert math.isclose(totals(table.assign(policy="p")).iloc[0][col], want)
    assert math.isclose(aggregate(table.assign(setting="s")).iloc[0][col], want)
    # counts are summed, peaks take the maximum, ratios come from their summed parts
    agg = aggregate(table.assign(setting="s")).iloc[0]
    assert agg["tokens_sent"] == table["tokens_sent"].sum()
    assert agg["peak_tokens"] == table["peak_tokens"].max()
    assert math.isclose(agg["cache_invalidation_cached_share"],
                        table["cache_invalidation_cached_tokens"].sum()
                        / table["tokens_sent"].sum())
