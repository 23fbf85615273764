"""Re-read loops: reads of a file the run had read before, classified under a replayed policy.

Definition.  A *read* is a ``tool_call`` block with ``op == "read"`` and a
non-empty ``path``; it is issued by the request whose ``output_msg`` is the
call's message, and its result (the ``tool_result`` with the same ``call_id``)
is in context from the first request whose ``output_msg`` is greater than the
result's message.  A *re-read* is a read of a path read before in the same run;
it is compared with the *previous* read of that path (the latest earlier one)
and classified, first match wins:

1. ``refresh`` — a write/edit call of the same path lies between the two reads
   (legitimate: the file changed);
2. ``retry`` — the previous read has no result, or its result is an error;
3. ``eviction_induced`` — the previous read's result block was trimmed,
   summarised or dropped by the policy before the re-read's request (an
   ``evictions`` row with ``request <=`` the re-read's request);
4. ``redundant`` — otherwise: the previous result was still in context (or had
   not arrived yet: both calls issued in the same turn; ``prev_in_context``
   tells the two apart).

The replay does not change what the model did: the classes are
counterfactual — "under this policy, the earlier copy would have been gone /
still there when the model asked again".  Tokens spent by a read are its
result's ``tokens_o200k`` (0 without a result).

Loops: ``loop_k`` (default 3, ``analysis.metric_spec.AnalysisParams``) or more reads of
one path, first reads included, whose requests span fewer than
``loop_window_requests`` (default 10) requests, i.e. all within a window of that many
consecutive requests.  Overlapping windows of
the same path merge into one loop (``loop_id``, -1 outside loops).  The
defaults flag the seed harness's 55 reads of one file in one turn and leave
alone a file read twice, or three times across a long session.

Identical repeats: any tool call (read or not) whose tool name and argument
text equal an earlier call's in the run; ``is_unchanged_repeat`` when no
write/edit call of any path happened between the two.

Edge cases: paths are compared as recorded (``./a.py`` and ``a.py`` differ);
file changes made through shell commands (``sed -i``) are not seen as writes;
partial reads (offset/limit) of one file count as reads of that path
(``same_args`` says whether the arguments matched the previous read).
Placeholder texts that invite the model to call the tool again are flagged by
``lint_placeholders`` (``analysis.placeholders``, re-exported here).

Not here: a run's tool calls before any policy (previous reads, repeats, loops:
``analysis.reread_calls``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.figure_text import plot_text
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.per_run.rereads import METRICS
from analysis.placeholders import lint_placeholders
from analysis.reread_calls import Call, calls_by_run, mark_loops, series_values
from replay.engine.trace import FATES

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes

__all__ = ["CLASSES", "FATES", "REREADS_COLUMNS", "lint_placeholders", "plot_rereads", "rereads",
           "rereads_summary"]

CLASSES: tuple[str, ...] = ("redundant", "eviction_induced", "refresh", "retry")
"""Re-read classes, in the order the summary reports them (``first`` marks a first read)."""
REREADS_COLUMNS: tuple[str, ...] = (
    "run_id", "msg", "block", "kind", "call_id", "tool", "op", "path", "text", "tokens_o200k",
    "is_error")
"""Message columns ``rereads`` needs (``text`` only of tool calls, for identical repeats)."""



def rereads(messages: pd.DataFrame, recorded_requests: pd.DataFrame, evictions: pd.DataFrame,
            *, loop_k: int = DEFAULT_PARAMS.loop_k,
            loop_window_requests: int = DEFAULT_PARAMS.loop_window_requests,
            policies: Sequence[str] | None = None) -> pd.DataFrame:
    """Every read of a path, and every identical repeat of a call, classified per policy.

    Args:
        messages: store messages with ``REREADS_COLUMNS`` (``text`` may be limited to tool calls).
        recorded_requests: store requests (``run_id``, ``request``, ``output_msg``).
        evictions: trace evictions (``run_id``, ``policy``, ``msg``, ``block``, ``request``).
        loop_k: reads of one path that make a loop.
        loop_window_requests: the loop's reads lie within this many consecutive requests.
        policies: policies to classify under (default: those in ``evictions``; required
            when it is empty, e.g. for a policy that never evicted anything).

    Returns:
        One row per (run_id, policy, call) that is a read with a path or an identical
        repeat: ``request``, ``msg``, ``block``, ``call_id``, ``tool``, ``op``, ``path``,
        ``is_read``, ``reread_class`` (``first``, a class of ``CLASSES``, or '' for a
        non-read repeat), ``prev_msg``, ``prev_request``, ``prev_in_context``,
        ``evicted_tier`` / ``evicted_fate`` (the previous result's first eviction before
        the re-read, '' when none), ``same_args``,
        ``result_tokens``, ``loop_id``, ``is_identical_repeat``, ``is_unchanged_repeat``.
    """
    if "text" not in messages.columns:
        raise ValueError("rereads needs the messages' text column (identical repeats): "
                         "messages_df(corpus, columns=REREADS_COLUMNS)")
    pols = list(policies) if policies is not None else sorted(set(evictions["policy"]))
    if not pols:
        raise ValueError("no policy in evictions: pass policies=[...]")
    evicted = _eviction_requests(evictions)
    out_msgs: dict[Any, list[int]] = {}  # one pass over the columns, not a pandas group a run
    for rid, m in zip(series_values(recorded_requests["run_id"]),
                      series_values(recorded_requests["output_msg"])):
        out_msgs.setdefault(rid, []).append(int(m))
    for msgs in out_msgs.values():
        msgs.sort()
    rows: list[dict[str, Any]] = []
    for calls in calls_by_run(messages, out_msgs).values():
        mark_loops(calls, loop_k, loop_window_requests)
        rows += [_classify(c, pol, evicted) for pol in pols for c in calls
                 if c.is_read or c.is_identical_repeat]
    return pd.DataFrame(rows, columns=list(_COLUMNS)).astype(_COLUMNS)


def rereads_summary(df: pd.DataFrame, *, keys: pd.DataFrame | None = None) -> pd.DataFrame:
    """Counts per class, loops, identical repeats and tokens, one row per (run_id, policy).

    Args:
        df: the output of ``rereads``.
        keys: (run_id, policy) pairs to report; pairs without reads get zeros
            (default: the pairs in ``df``).

    Returns:
        ``run_id``, ``policy`` and ``rereads_*`` columns (counts and tokens).
    """
    g = ["run_id", "policy"]
    read = df["is_read"].to_numpy(dtype=bool)
    cls = df["reread_class"].to_numpy(dtype=object)
    again = read & (cls != "first")
    tokens = df["result_tokens"].to_numpy(dtype="int64")
    induced = again & (cls == "eviction_induced")
    fate = df["evicted_fate"].to_numpy(dtype=object)
    loop = df["loop_id"].to_numpy(dtype="int64")
    looped = read & (loop >= 0)
    # each count a sum of its rows' flags and each token figure a sum of its rows' tokens (0
    # elsewhere), all in one group-by: a group-by of the rows that count for each column
    # (~20 of them) cost ~3 ms each in pandas however few the rows
    flags: dict[str, Any] = {
        "rereads_n_reads": read,
        "rereads_n": again,
        **{f"rereads_n_{c}": again & (cls == c) for c in CLASSES},
        "rereads_tokens": np.where(again, tokens, 0),
        **{f"rereads_tokens_{c}": np.where(again & (cls == c), tokens, 0)
           for c in ("redundant", "eviction_induced")},
        **{f"rereads_n_evicted_{f}": induced & (fate == f) for f in FATES},
        "rereads_loop_reads": looped,
        "rereads_n_identical": df["is_identical_repeat"].to_numpy(dtype=bool),
        "rereads_n_identical_unchanged": df["is_unchanged_repeat"].to_numpy(dtype=bool),
    }
    by = [df[k].to_numpy(dtype=object) for k in g]
    loops = pd.DataFrame({"run_id": by[0][looped], "policy": by[1][looped],
                          "loop_id": loop[looped]})
    per_loop = loops.groupby([*g, "loop_id"]).size()
    base = (keys[g].drop_duplicates() if keys is not None
            else df[g].drop_duplicates()).reset_index(drop=True)
    names = [n for p in METRICS for n in p.names]
    at = pd.MultiIndex.from_frame(base)
    if len(df):
        table = pd.DataFrame(flags).astype("int64").groupby(by).sum()
        table["rereads_n_loops"] = per_loop.groupby(level=[0, 1]).size()
        table["rereads_max_loop_reads"] = per_loop.groupby(level=[0, 1]).max()
        # every count looked up at the keys at once, zero where a pair has none
        table = table.reindex(at).fillna(0).astype("int64")
    else:
        table = pd.DataFrame(0, index=at, columns=names, dtype="int64")
    cols: dict[str, Any] = {k: base[k] for k in g}
    cols.update({n: table[n].to_numpy() for n in names})
    return pd.DataFrame(cols, index=base.index)


def plot_rereads(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Re-reads per class, stacked, one bar per policy (summed over runs).

    Args:
        df: the output of ``rereads``.
        ax: where to draw (default: a new figure).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(6, 4))[1]
    again = df[df["is_read"] & (df["reread_class"] != "first")]
    counts = (again.groupby(["policy", "reread_class"]).size().unstack(fill_value=0)
              .reindex(columns=list(CLASSES), fill_value=0))
    policies = sorted(set(df["policy"]))
    counts = counts.reindex(policies, fill_value=0)
    bottom = [0] * len(policies)
    for cls in CLASSES:
        vals = [int(v) for v in counts[cls]] if len(counts) else [0] * len(policies)
        ax.bar([plot_text(p) for p in policies], vals, bottom=bottom,
               label=cls.replace("_", "-"))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xlabel("policy")
    ax.set_ylabel("re-reads (count)")
    ax.set_title("Re-reads by cause")
    ax.legend()
    return ax


_Eviction = tuple[int, str, str]
"""A block's first eviction: (request it was evicted before, tier, fate)."""
_S, _I, _B = "str", "int64", "bool"
_COLUMNS: dict[str, str] = {
    "run_id": _S, "policy": _S, "request": _I, "msg": _I, "block": _I, "call_id": _S, "tool": _S,
    "op": _S, "path": _S, "is_read": _B, "reread_class": _S, "prev_msg": _I, "prev_request": _I,
    "prev_in_context": _B, "evicted_tier": _S, "evicted_fate": _S, "same_args": _B,
    "result_tokens": _I, "loop_id": _I, "is_identical_repeat": _B, "is_unchanged_repeat": _B}


def _eviction_requests(evictions: pd.DataFrame) -> dict[tuple[str, str, int, int], _Eviction]:
    """(policy, run_id, msg, block) → the block's first eviction."""
    out: dict[tuple[str, str, int, int], _Eviction] = {}
    for pol, rid, m, b, r, tier, fate in zip(*(series_values(evictions[c]) for c in (
            "policy", "run_id", "msg", "block", "request", "tier", "fate"))):
        key = (str(pol), str(rid), int(m), int(b))
        if key not in out or int(r) < out[key][0]:
            out[key] = (int(r), str(tier), str(fate))
    return out


def _classify(call: Call, policy: str,
              evicted: dict[tuple[str, str, int, int], _Eviction]) -> dict[str, Any]:
    """One output row: the call's class under ``policy``."""
    prev, cls = call.prev, ("first" if call.is_read else "")
    in_context, same_args, tier, fate = False, False, "", ""
    if prev is not None:
        same_args = prev.text == call.text
        pres = prev.result
        ev = evicted.get((policy, call.run_id, pres.msg, pres.block)) if pres else None
        if ev is not None and ev[0] <= call.request:
            tier, fate = ev[1], ev[2]
        in_context = pres is not None and not fate and pres.available <= call.request
        if call.refreshed:
            cls = "refresh"
        elif pres is None or pres.is_error:
            cls = "retry"
        else:
            cls = "eviction_induced" if fate else "redundant"
    return {
        "run_id": call.run_id, "policy": policy, "request": call.request, "msg": call.msg,
        "block": call.block, "call_id": call.call_id, "tool": call.tool, "op": call.op,
        "path": call.path, "is_read": call.is_read, "reread_class": cls,
        "prev_msg": prev.msg if prev else -1, "prev_request": prev.request if prev else -1,
        "prev_in_context": in_context, "evicted_tier": tier, "evicted_fate": fate,
        "same_args": same_args, "result_tokens": call.result.tokens if call.result else 0,
        "loop_id": call.loop_id, "is_identical_repeat": call.is_identical_repeat,
        "is_unchanged_repeat": call.is_unchanged_repeat,
    }
