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
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis.figure_text import plot_text
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.per_run.rereads import METRICS
from analysis.placeholders import lint_placeholders
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
    for rid, m in zip(_values(recorded_requests["run_id"]),
                      _values(recorded_requests["output_msg"])):
        out_msgs.setdefault(rid, []).append(int(m))
    for msgs in out_msgs.values():
        msgs.sort()
    rows: list[dict[str, Any]] = []
    for calls in calls_by_run(messages, out_msgs).values():
        _mark_loops(calls, loop_k, loop_window_requests)
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


@dataclass(slots=True)
class _Result:
    msg: int
    block: int
    tokens: int
    is_error: bool
    available: int
    """The first request whose context holds it."""


@dataclass(slots=True)
class _Call:
    """One tool call of one run, with everything that does not depend on the policy."""

    run_id: str
    pos: int
    msg: int
    block: int
    call_id: str
    tool: str
    op: str
    path: str
    text: str
    request: int
    result: _Result | None
    is_read: bool
    is_identical_repeat: bool = False
    is_unchanged_repeat: bool = False
    prev: _Call | None = None
    refreshed: bool = False
    loop_id: int = -1


def _eviction_requests(evictions: pd.DataFrame) -> dict[tuple[str, str, int, int], _Eviction]:
    """(policy, run_id, msg, block) → the block's first eviction."""
    out: dict[tuple[str, str, int, int], _Eviction] = {}
    for pol, rid, m, b, r, tier, fate in zip(*(_values(evictions[c]) for c in (
            "policy", "run_id", "msg", "block", "request", "tier", "fate"))):
        key = (str(pol), str(rid), int(m), int(b))
        if key not in out or int(r) < out[key][0]:
            out[key] = (int(r), str(tier), str(fate))
    return out


def _values(s: pd.Series) -> list[Any]:
    """``s.tolist()``: the values a loop over ``s`` sees, read through Arrow when ``s`` is
    Arrow-backed and holds no missing value (pandas hands such a column out value by value,
    ~10x slower; with a missing value, its ``<NA>`` is kept as pandas gives it)."""
    to_arrow = getattr(s.array, "__arrow_array__", None)
    if to_arrow is None or s.hasnans:
        return list(s.tolist())
    arrow: pa.Array | pa.ChunkedArray = to_arrow()
    return list(arrow.to_pylist())


_CALL_COLUMNS = ("run_id", "msg", "block", "kind", "call_id", "tool", "op", "path", "text",
                 "tokens_o200k", "is_error")
"""The message columns ``_calls_of`` reads (as lists: no pandas indexing per run)."""


def _rows_by_run(run_ids: list[Any]) -> dict[Any, list[int]]:
    """Each run's row positions, runs in order of first appearance (``groupby(sort=False)``'s
    groups: a missing run id in none)."""
    out: dict[Any, list[int]] = {}
    for i, rid in enumerate(run_ids):
        at = out.get(rid)
        if at is None:  # a run met first (or a missing id, never kept: NaN is no key)
            if pd.isna(rid):
                continue
            at = out[rid] = []
        at.append(i)
    return out


def calls_by_run(messages: pd.DataFrame,
                 out_msgs: Mapping[str, list[int]]) -> dict[str, list[_Call]]:
    """Each run's tool calls in context order, each linked to its previous read: runs in order
    of first appearance, whatever the frame's row order (``rereads``, and the run facts of
    ``analysis.run_facts``).

    Args:
        messages: tool calls and results of one run or several (``REREADS_COLUMNS``).
        out_msgs: each run's recorded output messages, sorted (a run not in it: none).
    """
    col = {c: _values(messages[c]) for c in _CALL_COLUMNS}
    return {str(rid): _calls_of(col, at, out_msgs.get(str(rid), []))
            for rid, at in _rows_by_run(col["run_id"]).items()}


def _calls_of(col: dict[str, list[Any]], at: list[int], out_msgs: list[int]) -> list[_Call]:
    """The tool calls of the rows ``at`` (one run's) of the columns ``col``."""
    msg, block, kind = col["msg"], col["block"], col["kind"]
    at = sorted(at, key=lambda i: (msg[i], block[i]))  # stable: store order within a block
    rid = str(col["run_id"][at[0]])
    call_id, tokens, is_error = col["call_id"], col["tokens_o200k"], col["is_error"]
    results: dict[str, _Result] = {}
    for i in at:
        if kind[i] != "tool_result":
            continue
        cid, m, t = call_id[i], msg[i], tokens[i]
        if cid and str(cid) not in results:
            results[str(cid)] = _Result(int(m), int(block[i]), 0 if pd.isna(t) else int(t),
                                        bool(is_error[i]), bisect_right(out_msgs, int(m)))
    tool, ops, paths, texts = col["tool"], col["op"], col["path"], col["text"]
    calls: list[_Call] = []
    last_read: dict[str, _Call] = {}
    writes: dict[str, list[int]] = {}
    all_writes: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    for pos, i in enumerate(i for i in at if kind[i] == "tool_call"):
        m, cid = msg[i], call_id[i]
        path, op = str(paths[i] or ""), str(ops[i])
        call = _Call(rid, pos, int(m), int(block[i]), str(cid), str(tool[i]), op, path,
                     str(texts[i] or ""), bisect_left(out_msgs, int(m)),
                     results.get(str(cid)) if cid else None, op == "read" and path != "")
        key = (call.tool, call.text)
        if key in seen:
            call.is_identical_repeat = True
            call.is_unchanged_repeat = bisect_right(all_writes, seen[key]) == len(all_writes)
        seen[key] = pos
        if call.is_read:
            call.prev = last_read.get(path)
            if call.prev is not None:
                w = writes.get(path, [])
                call.refreshed = bisect_right(w, call.prev.pos) < len(w)
            last_read[path] = call
        if op in ("write", "edit"):
            all_writes.append(pos)
            writes.setdefault(path, []).append(pos)
        calls.append(call)
    return calls


def _mark_loops(calls: list[_Call], k: int, window: int) -> None:
    """Set ``loop_id`` on reads among ≥ k reads of a path within ``window`` requests."""
    by_path: dict[str, list[_Call]] = {}
    for call in calls:
        if call.is_read:
            by_path.setdefault(call.path, []).append(call)
    next_id = 0
    for path in sorted(by_path):
        reads = by_path[path]
        reqs = [r.request for r in reads]
        spans: list[list[int]] = []
        for i, r in enumerate(reqs):
            lo = bisect_left(reqs, r - window + 1)
            if i - lo + 1 >= max(k, 1):
                if spans and lo <= spans[-1][1]:
                    spans[-1][1] = i
                else:
                    spans.append([lo, i])
        for lo, hi in spans:
            for read in reads[lo:hi + 1]:
                read.loop_id = next_id
            next_id += 1


def _classify(call: _Call, policy: str,
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
