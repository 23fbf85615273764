"""The per-run ``arg_share_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.arg_share`` (whose pandas ``arg_share_summary`` computes the same
columns, the tests' oracle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.metric_spec import Better, MetricPart, MetricSpec, PartInput
from analysis.per_run.stats import mean


def _fast_arg_share(inp: PartInput) -> dict[str, Any]:
    """Means and peaks of the byte shares over requests with a non-empty context (NumPy over
    the request columns: the same divisions of the same whole numbers, the same pairwise sum)."""
    rq = inp.requests
    args, write, results = (np.asarray(rq[c], dtype=np.int64)
                            for c in ("bytes_args", "bytes_args_write", "bytes_results"))
    totals = args + results + np.asarray(rq["bytes_other"], dtype=np.int64)
    ok = np.flatnonzero(totals > 0)
    out: dict[str, Any] = {}
    if not len(ok):
        for name in ("args", "write", "results"):
            out.update({f"arg_share_{name}_mean": math.nan, f"arg_share_{name}_peak": math.nan,
                        f"arg_share_{name}_peak_request": -1})
        out["arg_share_args_bytes_peak"] = out["arg_share_results_bytes_at_args_peak"] = 0
        return {c: out[c] for c in ARG_SHARE.names}
    denominators = totals[ok]
    for name, num in (("args", args), ("write", write), ("results", results)):
        shares = num[ok] / denominators
        first = int(np.argmax(shares))  # the first of equal peaks, as list.index would
        i = int(ok[first])
        out[f"arg_share_{name}_mean"] = mean(shares)
        out[f"arg_share_{name}_peak"] = float(shares[first])
        out[f"arg_share_{name}_peak_request"] = rq["request"][i]
        if name == "args":
            out["arg_share_args_bytes_peak"] = int(args[i])
            out["arg_share_results_bytes_at_args_peak"] = int(results[i])
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
