"""Arguments vs results byte share: how much of each request's context is call arguments.

Definition.  For every replayed request, with ``context_bytes = bytes_args +
bytes_results + bytes_other`` (UTF-8 bytes of everything in context: call
arguments of every tool, tool results, and all other text — user and assistant
text, reasoning, summaries and re-inserted items):

- ``args_share = bytes_args / context_bytes`` (all call arguments, write/edit included),
- ``write_share = bytes_args_write / context_bytes`` (write/edit arguments only),
- ``results_share = bytes_results / context_bytes``,
- ``other_share = bytes_other / context_bytes``.

Shares are fractions in [0, 1]; ``args + results + other = 1`` and
``write ≤ args``.  A request with an empty context (0 bytes) has NaN shares
and is left out of means and peaks.  Bytes, not tokens: the trace records bytes
per category, and the seed harness's finding was stated in bytes (152 KB of
arguments vs 38 KB of results).

The summary gives, per (run, policy) and share, the mean over requests
(unweighted), the peak, and the first request at which the peak occurs.

Not here: per-tool breakdowns (the trace keeps only the categories).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis._numeric import floats
from analysis.figure_text import plot_text
from analysis.per_run.arg_share import METRICS

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes

SHARES: tuple[str, ...] = ("args", "write", "results", "other")
"""Share names; the per-request columns are ``<name>_share``."""
_BYTES = {"args": "bytes_args", "write": "bytes_args_write", "results": "bytes_results",
          "other": "bytes_other"}


def arg_share(requests: pd.DataFrame) -> pd.DataFrame:
    """Per request: the shares of the context's bytes held by arguments, write/edit, results.

    Args:
        requests: trace requests (``run_id``, ``policy``, ``request``, ``bytes_args``,
            ``bytes_args_write``, ``bytes_results``, ``bytes_other``).

    Returns:
        One row per (run_id, policy, request): the byte columns, ``context_bytes`` and
        ``args_share``, ``write_share``, ``results_share``, ``other_share``.
    """
    out = requests[["run_id", "policy", "request"]].copy()
    for col in _BYTES.values():
        out[col] = floats(requests[col]).astype("int64")
    total = (out["bytes_args"] + out["bytes_results"] + out["bytes_other"]).astype("int64")
    out["context_bytes"] = total
    denom = total.astype("float64").where(total > 0)
    for name, col in _BYTES.items():
        out[f"{name}_share"] = out[col].astype("float64") / denom
    out["request"] = floats(requests["request"]).astype("int64")
    return out.reset_index(drop=True)


def arg_share_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, peak and the request at the peak of each share, one row per (run_id, policy).

    Args:
        df: the output of ``arg_share``.

    Returns:
        ``run_id``, ``policy`` and, for each of args / write / results, ``arg_share_<s>_mean``,
        ``arg_share_<s>_peak`` and ``arg_share_<s>_peak_request`` (-1 when every request
        has an empty context), plus ``arg_share_args_bytes_peak`` and
        ``arg_share_results_bytes_at_args_peak`` (bytes at the args-share peak).
    """
    # numpy per (run, policy) over columns read once, not a pandas frame per group (~1 ms a
    # run): groups in order of first appearance, as groupby(sort=False) gives them
    codes = df.groupby(["run_id", "policy"], sort=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(codes.max() + 2 if len(codes) else 1))
    rid_col, pol_col = df["run_id"].to_numpy(), df["policy"].to_numpy()
    request, b_args, b_results = (df[c].to_numpy() for c in ("request", "bytes_args",
                                                             "bytes_results"))
    shares = {name: df[f"{name}_share"].to_numpy(dtype="float64", na_value=np.nan)
              for name in ("args", "write", "results")}
    rows = []
    for lo, hi in itertools.pairwise(bounds):
        pos = order[lo:hi]
        row: dict[str, object] = {"run_id": rid_col[pos[0]], "policy": pol_col[pos[0]]}
        for name in ("args", "write", "results"):
            s = shares[name][pos]
            ok = ~np.isnan(s)
            if ok.any():
                i = int(np.flatnonzero(ok)[np.argmax(s[ok])])
                row[f"arg_share_{name}_mean"] = float(s[ok].mean())
                row[f"arg_share_{name}_peak"] = float(s[i])
                row[f"arg_share_{name}_peak_request"] = int(request[pos[i]])
                if name == "args":
                    row["arg_share_args_bytes_peak"] = int(b_args[pos[i]])
                    row["arg_share_results_bytes_at_args_peak"] = int(b_results[pos[i]])
            else:
                row[f"arg_share_{name}_mean"] = row[f"arg_share_{name}_peak"] = np.nan
                row[f"arg_share_{name}_peak_request"] = -1
                if name == "args":
                    row["arg_share_args_bytes_peak"] = 0
                    row["arg_share_results_bytes_at_args_peak"] = 0
        rows.append(row)
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


def plot_arg_share(df: pd.DataFrame, *, ax: Axes | None = None,
                   labels: Mapping[str, str] | None = None) -> Axes:
    """Share of the context held by call arguments (solid) and write/edit arguments (dashed).

    One pair of lines per (run, policy), over the request index.

    Args:
        df: the output of ``arg_share`` (best for one or a few runs).
        ax: where to draw (default: a new figure).
        labels: run id → how the legend names the run (default: its id).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(7, 4))[1]
    for (rid, pol), g in df.groupby(["run_id", "policy"], sort=False):
        name = plot_text(f"{(labels or {}).get(rid, rid)} {pol}")
        line = ax.plot(g["request"], g["args_share"], label=f"{name}: all arguments")[0]
        ax.plot(g["request"], g["write_share"], linestyle="--", color=line.get_color(),
                label=f"{name}: write/edit arguments")
    ax.set_xlabel("request")
    ax.set_ylabel("share of context bytes (fraction)")
    ax.set_ylim(0, 1)
    ax.set_title("Call arguments in context")
    ax.legend(fontsize="small")
    return ax


_SUMMARY_COLUMNS = ["run_id", "policy", *(n for p in METRICS for n in p.names)]
