"""The per-run ``arg_share_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.arg_share`` (whose pandas ``arg_share_summary`` computes the same
columns, the tests' oracle).
"""

from __future__ import annotations

import math
from typing import Any

from analysis.metric_spec import Better, MetricPart, MetricSpec, PartInput
from analysis.per_run.stats import mean


def _fast_arg_share(inp: PartInput) -> dict[str, Any]:
    """Means and peaks of the byte shares over requests with a non-empty context."""
    rq = inp.requests
    args, write, results = rq["bytes_args"], rq["bytes_args_write"], rq["bytes_results"]
    totals = [a + r + o for a, r, o in zip(args, results, rq["bytes_other"])]
    ok = [i for i, t in enumerate(totals) if t > 0]
    out: dict[str, Any] = {}
    for name, num in (("args", args), ("write", write), ("results", results)):
        if not ok:
            out.update({f"arg_share_{name}_mean": math.nan, f"arg_share_{name}_peak": math.nan,
                        f"arg_share_{name}_peak_request": -1})
            continue
        shares = [num[i] / totals[i] for i in ok]
        peak = max(shares)
        i = ok[shares.index(peak)]
        out[f"arg_share_{name}_mean"] = mean(shares)
        out[f"arg_share_{name}_peak"] = peak
        out[f"arg_share_{name}_peak_request"] = rq["request"][i]
        if name == "args":
            out["arg_share_args_bytes_peak"] = args[i]
            out["arg_share_results_bytes_at_args_peak"] = results[i]
    if not ok:
        out["arg_share_args_bytes_peak"] = out["arg_share_results_bytes_at_args_peak"] = 0
    return {c: out[c] for c in ARG_SHARE.names}


def _shares(name: str, what: str, better: bool) -> tuple[MetricSpec, ...]:
    b: Better | None = "lower" if better else None
    return (
        MetricSpec(f"arg_share_{name}_mean", "fraction", f"mean share of context bytes held by "
                   f"{what}, over requests with a context", dtype="float64", better=b,
                   label=f"{what} share (mean)" if better else ""),
        MetricSpec(f"arg_share_{name}_peak", "fraction", f"largest share of context bytes held "
                   f"by {what}", dtype="float64", better=b),
        MetricSpec(f"arg_share_{name}_peak_request", "request index", f"first request at the "
                   f"peak {what} share (-1 when none)"),
    )


ARG_SHARE = MetricPart("arg_share", (
    *_shares("args", "arguments", True),
    *_shares("write", "write/edit arguments", True),
    *_shares("results", "tool results", False),
    MetricSpec("arg_share_args_bytes_peak", "bytes", "argument bytes at the arguments' peak share"),
    MetricSpec("arg_share_results_bytes_at_args_peak", "bytes",
               "result bytes at the arguments' peak share"),
), _fast_arg_share, needs_facts=False)
METRICS: tuple[MetricPart, ...] = (ARG_SHARE,)
"""The per-run ``arg_share_*`` metrics (``arg_share_summary`` computes the same with pandas)."""
