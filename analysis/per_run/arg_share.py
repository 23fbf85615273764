"""The per-run ``arg_share_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.arg_share`` (whose pandas ``arg_share_summary`` computes the same
columns, the tests' oracle).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.metric_spec import Better, MetricPart, MetricSpec, PartInput, one_of
from analysis.per_run.columns import request_columns
from analysis.per_run.stats import mean


def _fast_arg_share_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """Means and peaks of the byte shares over requests with a non-empty context, of several
    replays of one run (NumPy over the request columns of all of them at once: the same
    divisions of the same whole numbers, the same pairwise sums along each replay's row; a
    replay with an empty context somewhere takes its own requests with one)."""
    args, write, results, other = request_columns(
        inps, ("bytes_args", "bytes_args_write", "bytes_results", "bytes_other"), np.int64)
    totals = args + results + other
    everywhere = (totals > 0).all(axis=1).tolist()
    n = totals.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):  # rows with an empty context: below
        shares = {name: num / totals for name, num in
                  (("args", args), ("write", write), ("results", results))}
    peaks = {name: sh.argmax(axis=1).tolist() for name, sh in shares.items()}
    sums = {name: np.add.reduce(sh, axis=1).tolist() for name, sh in shares.items()}
    rows = []
    for r, inp in enumerate(inps):
        if not everywhere[r]:
            rows.append(_arg_share_where(inp, args[r], write[r], results[r], totals[r]))
            continue
        request = inp.requests["request"]
        out: dict[str, Any] = {}
        for name, sh in shares.items():
            i = peaks[name][r]  # the first of equal peaks, as list.index would
            out[f"arg_share_{name}_mean"] = sums[name][r] / n  # stats.mean's steps
            out[f"arg_share_{name}_peak"] = float(sh[r, i])
            out[f"arg_share_{name}_peak_request"] = request[i]
            if name == "args":
                out["arg_share_args_bytes_peak"] = int(args[r, i])
                out["arg_share_results_bytes_at_args_peak"] = int(results[r, i])
        rows.append({c: out[c] for c in ARG_SHARE.names})
    return rows


def _arg_share_where(inp: PartInput, args: np.ndarray, write: np.ndarray, results: np.ndarray,
                     totals: np.ndarray) -> dict[str, Any]:
    """``_fast_arg_share_many``'s values for one replay, over its requests with a non-empty
    context only (some have none)."""
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
        out[f"arg_share_{name}_peak_request"] = inp.requests["request"][i]
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
), one_of(_fast_arg_share_many), needs_facts=False, many=_fast_arg_share_many)
METRICS: tuple[MetricPart, ...] = (ARG_SHARE,)
"""The per-run ``arg_share_*`` metrics (``arg_share_summary`` computes the same with pandas)."""
