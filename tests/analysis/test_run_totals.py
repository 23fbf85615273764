"""One rule per metric for combining runs: ``diff``'s totals per policy and a sweep's totals per
setting (``pareto.aggregate``) are the same numbers (they were two rule sets by name pattern,
and disagreed: unweighted means and ``*min*``/``*max*`` substrings in pareto)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.metrics import METRIC_COLUMNS, RATIOS, WEIGHTS
from analysis.report.diff import totals
from analysis.run_totals import combine, total_rule
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


def _one_column_at_a_time(table: pd.DataFrame, by: str, columns: list[str]) -> pd.DataFrame:
    """The rules of ``combine`` applied with one pandas group-by reduction per column (its
    former code, each column's values, products and weights made frame-wide first: the same
    elementwise bits): the bits ``combine`` must give."""
    keys = table[by]
    rules = {c: total_rule(c) for c in columns}
    ruled = [c for c in columns if rules[c] is not None]
    vals = table[ruled].astype("float64")
    weights = {c: "n_requests" if rules[c] == "ratio" else WEIGHTS.get(c, "n_requests")
               for c in ruled}
    w = pd.DataFrame({c: table[weight].astype("float64") if weight in table else 1.0
                      for c, weight in weights.items()}, index=table.index)
    ok = vals.notna()
    groups, g = table.groupby(keys, sort=False), vals.groupby(keys, sort=False)
    num_g = (vals * w).where(ok).groupby(keys, sort=False)
    den_g = w.where(ok).groupby(keys, sort=False)
    out: dict[str, pd.Series] = {}
    for col in ruled:
        rule = rules[col]
        if rule == "ratio" and {RATIOS[col][0], RATIOS[col][1]} <= set(table.columns):
            num, den, scale = RATIOS[col]
            sums = groups[[num, den]].sum()
            out[col] = scale * sums[num] / sums[den].where(sums[den] > 0)
        elif rule in ("sum", "max", "min"):
            out[col] = g[col].sum(min_count=1) if rule == "sum" else getattr(g[col], rule)()
        else:
            num_s, den_s = num_g[col].sum(min_count=1), den_g[col].sum(min_count=1)
            out[col] = (num_s / den_s.where(den_s > 0)).fillna(
                g[col].mean().where(den_s.fillna(0) <= 0))
    return pd.DataFrame(out, index=groups.size().index)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_groups=st.integers(1, 5), n_runs=st.integers(1, 40),
       contiguous=st.booleans(), nan_share=st.sampled_from([0.0, 0.1, 0.5]),
       infinite=st.booleans())
def test_combine_gives_the_bits_of_one_group_by_per_column(
        seed: int, n_groups: int, n_runs: int, contiguous: bool, nan_share: float,
        infinite: bool) -> None:
    # pandas sums a NaN-free column of contiguous groups with np.add.reduceat and any other with
    # a compensated kernel, which round differently: a frame-wide group-by mixes them up
    rng = np.random.default_rng(seed)
    n = n_groups * n_runs
    keys = np.repeat([f"p{i}" for i in range(n_groups)], n_runs)
    table = pd.DataFrame({c: rng.random(n) * 10.0 ** rng.integers(-4, 6) for c in METRIC_COLUMNS})
    for c in rng.choice(METRIC_COLUMNS, size=int(nan_share * len(METRIC_COLUMNS))):
        table.loc[rng.random(n) < 0.3, c] = math.nan
    if infinite:
        table.iloc[int(rng.integers(n)), int(rng.integers(len(METRIC_COLUMNS)))] = math.inf
    table["n_requests"] = rng.integers(0, 300, n)
    table.insert(0, "policy", keys if contiguous else rng.permutation(keys))
    got = combine(table, "policy", list(METRIC_COLUMNS))
    want = _one_column_at_a_time(table, "policy", list(METRIC_COLUMNS))
    assert list(got.columns) == list(want.columns)
    assert list(got.index) == list(want.index)
    for col in want.columns:
        g, w = got[col].to_numpy(), want[col].to_numpy()
        assert ((g == w) | (np.isnan(g) & np.isnan(w))).all(), col
