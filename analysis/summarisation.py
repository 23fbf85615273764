"""Summarisation frequency: how often the context is cut behind a summary, how fast it refills.

Definition.  A *summary* is a context cut that replaces old messages: a replayed
action of kind ``summarise``, ``collapse`` or ``custom_cut`` (``source =
"replayed"``), or a compaction the original harness recorded in the log — a
store message flagged ``is_harness_summary`` (``source = "recorded"``; the
runs table's ``n_harness_compactions`` counts the same rows).  Its ``request``
is the first request it takes effect for: the action's ``request``, or for a
recorded summary the first request whose ``output_msg`` is after it (NA when
no request follows, e.g. a compaction request's own output).

Per summary:

- ``context_after_tokens`` — true tokens in context right after it (the
  action's ``context_after_tokens``; for a recorded one the recorded prompt
  size of its request, NA without usage);
- ``requests_since_prev`` / ``requests_to_next`` — requests since the previous /
  until the next summary of the same (run, policy, source); NA at the ends;
- ``growback_requests`` (replayed only) — requests from the summary until the
  harness's estimate reaches the tier's trigger level (``threshold_tokens``)
  again: the first later request sent with ``est_tokens ≥ threshold`` or, for a
  tier that checks before sending, the next action of the same tier that fired
  at or over it, whichever is first; NA when the level is never reached again
  (the run ends first);
- ``is_thrash`` — the summary came fewer than ``thrash_requests`` (default 20,
  ``analysis.metric_spec.AnalysisParams``)
  requests after the previous one; the seed harness's 15 summaries in 236 calls
  (one every ~15 calls) are all thrash by this default.

Recorded rows are repeated under every policy of ``requests`` so that each
(run, policy) group shows the harness's own compactions beside the replay's.

Not here: what a summary contains (the stub summariser), cache effects
(``analysis.cache_invalidation``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis._numeric import floats, nullable_ints
from analysis.figure_text import plot_text
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.per_run.summarisation import METRICS
from replay.engine.trace import SUMMARY_KINDS

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes


def recorded_compactions(messages: pd.DataFrame, recorded_requests: pd.DataFrame) -> pd.DataFrame:
    """The original harness's compactions: one row per message flagged ``is_harness_summary``.

    Args:
        messages: store messages (``run_id``, ``msg``, ``is_harness_summary``).
        recorded_requests: store requests (``run_id``, ``request``, ``output_msg``).

    Returns:
        ``run_id``, ``msg`` and ``request`` (first request after the summary; NA when none).
    """
    flag = messages["is_harness_summary"].fillna(False).astype(bool)
    rows = messages.loc[flag, ["run_id", "msg"]].drop_duplicates()
    outs = {str(rid): sorted(int(m) for m in g["output_msg"])
            for rid, g in recorded_requests.groupby("run_id", sort=False)}
    reqs = []
    for rid, m in zip(rows["run_id"], rows["msg"]):
        o = outs.get(str(rid), [])
        k = bisect_right(o, int(m))
        reqs.append(k if k < len(o) else pd.NA)
    return pd.DataFrame({"run_id": rows["run_id"].astype(str).to_numpy(),
                         "msg": rows["msg"].astype("int64").to_numpy(),
                         "request": pd.array(reqs, dtype="Int64")})


def summarisation(actions: pd.DataFrame, requests: pd.DataFrame,
                  compactions: pd.DataFrame | None = None, *,
                  thrash_requests: int = DEFAULT_PARAMS.thrash_requests) -> pd.DataFrame:
    """Every summary, replayed or recorded, with spacing, size after it and grow-back.

    Args:
        actions: trace actions.
        requests: trace requests (``est_tokens``, ``recorded_input_tokens``; the (run, policy)
            pairs recorded summaries are shown under).
        compactions: the output of ``recorded_compactions`` (None: replayed summaries only).
        thrash_requests: a summary closer than this to the previous one is thrash.

    Returns:
        One row per summary: ``run_id``, ``policy``, ``source``, ``request``, ``tier``,
        ``kind``, ``failed``, ``context_after_tokens``, ``threshold_tokens``,
        ``requests_since_prev``, ``requests_to_next``, ``growback_requests``, ``is_thrash``.
    """
    acts = actions[actions["kind"].isin(SUMMARY_KINDS)]
    rep = pd.DataFrame({
        **{c: acts[c].astype(str).to_numpy() for c in ("run_id", "policy", "tier", "kind", "when")},
        "source": "replayed", "failed": acts["failed"].astype(bool).to_numpy(),
        **{c: nullable_ints(acts[c]) for c in ("request", "context_after_tokens",
                                               "threshold_tokens", "trigger_tokens")},
    })
    rep["growback_requests"] = _growback(rep, requests)
    parts = [rep.drop(columns=["trigger_tokens", "when"])]
    if compactions is not None and len(compactions):
        parts.append(_recorded_rows(compactions, requests))
    df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    df = df.sort_values(["run_id", "policy", "source", "request"], kind="stable",
                        na_position="last").reset_index(drop=True)
    g = df.groupby(["run_id", "policy", "source"], sort=False)["request"]
    df["requests_since_prev"] = (df["request"] - g.shift(1)).astype("Int64")
    df["requests_to_next"] = (g.shift(-1) - df["request"]).astype("Int64")
    df["is_thrash"] = (df["requests_since_prev"] < thrash_requests).fillna(False).astype(bool)
    return df[_COLUMNS]


def summarisation_summary(df: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Frequency, spacing, size after and grow-back, one row per (run_id, policy).

    Args:
        df: the output of ``summarisation``.
        requests: trace requests (for the (run, policy) pairs and their request counts).

    Returns:
        ``run_id``, ``policy`` and ``summarisation_*`` columns: counts (``_n``, ``_n_thrash``,
        ``_n_failed``, ``_recorded_n``) are 0 when there is none; means, minima and
        maxima are NaN when undefined.
    """
    keys = requests.groupby(["run_id", "policy"], sort=False).size().rename("n").reset_index()
    keys["run_id"], keys["policy"] = keys["run_id"].astype(str), keys["policy"].astype(str)
    # each column made float once and each group's rows taken by position, each statistic as
    # pandas reduces a float column (NaN skipped: a sum with them as 0 over the defined count);
    # a pandas frame a group cost ~5 ms a run
    at = df.groupby(["run_id", "policy", "source"], sort=False).indices if len(df) else {}
    request, since = floats(df["request"]).to_numpy(), floats(df["requests_since_prev"]).to_numpy()
    after_all = floats(df["context_after_tokens"]).to_numpy()
    grow_all = floats(df["growback_requests"]).to_numpy()
    thrash, failed = df["is_thrash"].to_numpy(dtype=bool), df["failed"].to_numpy(dtype=bool)
    none = np.zeros(0, dtype=np.intp)
    rows = []
    for rid, pol, n in zip(keys["run_id"], keys["policy"], keys["n"]):
        rep = at.get((rid, pol, "replayed"), none)
        n_rec = len(at.get((rid, pol, "recorded"), none))
        gaps, grow = _defined(since[rep]), _defined(grow_all[rep])
        after = after_all[rep]
        rows.append({
            "run_id": rid, "policy": pol,
            "summarisation_per_100_requests": 100.0 * len(rep) / n if n else np.nan,
            "summarisation_first_request": int(np.nanmin(request[rep])) if len(rep) else -1,
            "summarisation_mean_requests_between": _mean(gaps) if len(gaps) else np.nan,
            "summarisation_min_requests_between": gaps.min() if len(gaps) else np.nan,
            "summarisation_mean_context_after_tokens": _mean(after) if len(after) else np.nan,
            "summarisation_max_context_after_tokens": _max(after) if len(after) else np.nan,
            "summarisation_mean_growback_requests": _mean(grow) if len(grow) else np.nan,
            "summarisation_n_thrash": int(thrash[rep].sum()),
            "summarisation_n_failed": int(failed[rep].sum()),
            "summarisation_recorded_n": n_rec,
            "summarisation_recorded_per_100_requests": 100.0 * n_rec / n if n else np.nan,
        })
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


def _defined(v: np.ndarray) -> np.ndarray:
    """The defined values of ``v`` (``Series.dropna``)."""
    defined: np.ndarray = v[~np.isnan(v)]
    return defined


def _mean(v: np.ndarray) -> float:
    """``Series.mean`` of a float column: the sum with NaN as 0 over the defined count."""
    defined = ~np.isnan(v)
    count = int(defined.sum())
    return np.where(defined, v, 0.0).sum() / count if count else np.nan


def _max(v: np.ndarray) -> float:
    """``Series.max`` of a float column: the largest defined value, NaN if none."""
    v = _defined(v)
    return v.max() if len(v) else np.nan


def plot_summarisation(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Context size right after each summary, over the request index.

    Replayed summaries are dots, recorded harness compactions crosses; thrash
    summaries are drawn in red.

    Args:
        df: the output of ``summarisation``.
        ax: where to draw (default: a new figure).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(7, 4))[1]
    for (pol, src), g in df.groupby(["policy", "source"], sort=True):
        g = g.dropna(subset=["request", "context_after_tokens"])
        marker = "o" if src == "replayed" else "x"
        ax.scatter(floats(g["request"]), floats(g["context_after_tokens"]), marker=marker,
                   label=f"{plot_text(pol)} ({src})")
        thrash = g[g["is_thrash"]]
        if len(thrash):
            ax.scatter(floats(thrash["request"]), floats(thrash["context_after_tokens"]),
                       marker=marker, facecolors="none", edgecolors="red", s=80)
    ax.set_xlabel("request")
    ax.set_ylabel("context right after the summary (tokens)")
    ax.set_title("Summaries (red ring: thrash)")
    ax.legend(fontsize="small")
    return ax


_COLUMNS = ["run_id", "policy", "source", "request", "tier", "kind", "failed",
            "context_after_tokens", "threshold_tokens", "requests_since_prev", "requests_to_next",
            "growback_requests", "is_thrash"]


def _growback(rep: pd.DataFrame, requests: pd.DataFrame) -> pd.Series:
    """Requests from each replayed summary until the estimate reaches its trigger level again."""
    # each (run, policy)'s requests and estimates gathered in one pass over the columns (a
    # pandas group a pair, and its values one by one, cost ~3 ms a run)
    est: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
    for rid, pol, q, e in zip(requests["run_id"].tolist(), requests["policy"].tolist(),
                              nullable_ints(requests["request"]).tolist(),
                              nullable_ints(requests["est_tokens"]).tolist()):
        reqs_ests = est.setdefault((rid, pol), ([], []))  # a missing key: never looked up
        reqs_ests[0].append(q)
        reqs_ests[1].append(e)
    fired: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    for rid, pol, tier, r, trig, when in zip(rep["run_id"], rep["policy"], rep["tier"],
                                             rep["request"], rep["trigger_tokens"], rep["when"]):
        if when == "before":
            fired.setdefault((rid, pol, tier), []).append((int(r), int(trig)))
    out: list[object] = []
    for rid, pol, tier, r, thr in zip(rep["run_id"], rep["policy"], rep["tier"], rep["request"],
                                      rep["threshold_tokens"]):
        r, thr = int(r), int(thr)
        reqs, ests = est.get((rid, pol), ([], []))
        start = bisect_left(reqs, r)
        cands = [next((reqs[j] for j in range(start, len(reqs)) if ests[j] >= thr), None),
                 min((q for q, trig in fired.get((rid, pol, tier), []) if q > r and trig >= thr),
                     default=None)]
        hits = [c for c in cands if c is not None]
        out.append(min(hits) - r if hits else pd.NA)
    return pd.Series(pd.array(out, dtype="Int64"), index=rep.index)


def _recorded_rows(compactions: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Recorded compactions, repeated under every policy replayed for the run."""
    recorded = {(str(rid), int(q)): v for rid, q, v in zip(
        requests["run_id"].tolist(), nullable_ints(requests["request"]).tolist(),
        nullable_ints(requests["recorded_input_tokens"]).tolist())}
    pairs = requests[["run_id", "policy"]].drop_duplicates().astype(str)
    m = compactions.astype({"run_id": str}).merge(pairs, on="run_id", how="inner")
    after = [None if pd.isna(q) else recorded.get((rid, int(q)))
             for rid, q in zip(m["run_id"], m["request"])]
    return pd.DataFrame({
        "run_id": m["run_id"].to_numpy(), "policy": m["policy"].to_numpy(), "source": "recorded",
        "request": pd.array(m["request"], dtype="Int64"), "tier": "harness", "kind": "compaction",
        "failed": False,
        "context_after_tokens": nullable_ints(pd.Series(after, dtype="object")),
        "threshold_tokens": pd.array([pd.NA] * len(m), dtype="Int64"),
        "growback_requests": pd.array([pd.NA] * len(m), dtype="Int64"),
    })


_SUMMARY_COLUMNS = ["run_id", "policy", *(n for p in METRICS for n in p.names)]
