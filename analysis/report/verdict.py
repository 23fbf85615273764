"""The report's one-line verdict: which policy wins on what, and by how much.

``verdict(totals, policies)`` reads the totals over all runs (one row per policy,
``analysis.run_totals``) and says, for each of ``VERDICT_METRICS`` (overshoots, tokens sent,
cost), which policy is best and by how much against the next best, and which provider priced
each policy's cost; with one policy it gives that policy's figures.  A metric unknown for a
policy is said as unknown, never ranked.

Not here: the tables (``analysis.report.pages``), pricing (``replay.policy.pricing``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.metric_spec import count
from analysis.metrics import SPECS, known
from replay.policy import Policy
from replay.policy.providers import provider_label

VERDICT_METRICS: tuple[str, ...] = known("overshoots_n", "tokens_sent", "cost_usd")
"""What the verdict ranks the policies on, in this order (lower is better for each)."""
_WHAT = {"overshoots_n": "fewest overshoots", "tokens_sent": "fewest tokens sent",
         "cost_usd": "cheapest"}


def priced_by(policies: list[Policy]) -> dict[str, str]:
    """Policy name → the provider profile its costs were priced under."""
    return {p.name: provider_label(p.provider, p.cache) for p in policies}


def verdict(totals: pd.DataFrame, policies: list[Policy], pricing: str = "") -> str:
    """The verdict line (see the module docstring); ``pricing``: how the command priced the
    comparison (``replay.policy.pricing``), said after the provider of each cost."""
    rows = {str(r["policy"]): r for r in totals.to_dict(orient="records")}
    names = [p.name for p in policies if p.name in rows]
    if not names:
        return "Verdict: no run was replayed."
    prices = priced_by(policies)
    runs = count(int(rows[names[0]]["n_runs"]), "run")
    if len(names) == 1:
        r = rows[names[0]]
        figures = ", ".join(f"{SPECS[m].header} {SPECS[m].format(_value(r, m))}"
                            for m in VERDICT_METRICS)
        return (f"Verdict: {names[0]} over {runs}: {figures} "
                f"(priced under {prices[names[0]]}).")
    parts = [_ranked(m, names, rows) for m in VERDICT_METRICS]
    same = len(set(prices.values())) == 1
    priced = (f"costs priced under {next(iter(prices.values()))}" if same else
              "costs priced each under its own provider ("
              + ", ".join(f"{n}: {prices[n]}" for n in names) + ")")
    how = f" — {pricing}" if pricing and "own provider" not in pricing else ""
    return f"Verdict over {runs}: " + "; ".join(parts) + f"; {priced}{how}."


def _value(row: dict[str, Any], metric: str) -> float | None:
    v = row.get(metric)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _ranked(metric: str, names: list[str], rows: dict[str, dict[str, Any]]) -> str:
    """``fewest tokens sent: B (12,345 vs 23,456 under A, −47.4%)``."""
    spec = SPECS[metric]
    known_values = sorted(((v, n) for n in names if (v := _value(rows[n], metric)) is not None),
                          key=lambda t: (t[0], names.index(t[1])))
    unknown = [n for n in names if _value(rows[n], metric) is None]
    tail = f" ({', '.join(unknown)}: unknown)" if unknown else ""
    if len(known_values) < 2:
        return f"{_WHAT[metric]}: cannot be ranked{tail}"
    (best, who), (second, runner) = known_values[0], known_values[1]
    if best == second:
        tied = [n for v, n in known_values if v == best]
        return f"{_WHAT[metric]}: a tie between {', '.join(tied)} ({spec.format(best)}){tail}"
    rel = f", {(best - second) / second:+.1%}" if second else ""
    return (f"{_WHAT[metric]}: {who} ({spec.format(best)} vs {spec.format(second)} under "
            f"{runner}{rel}){tail}")
