"""A run's tool calls as the re-read analysis sees them, before any policy: each call in context
order with its result, the request that issued it, the previous read of its path (and whether a
write came between), identical repeats, and the loops of reads of one path.

``calls_by_run`` builds them from the store's message columns (``analysis.rereads`` and the run
facts of ``analysis.run_facts`` use them), ``mark_loops`` marks the loops.

Not here: the classes a re-read gets under a replayed policy, the summary and the plot
(``analysis.rereads``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa


@dataclass(slots=True)
class CallResult:
    """A call's result: its block, tokens, error flag, and when it enters the context."""

    msg: int
    block: int
    tokens: int
    is_error: bool
    available: int
    """The first request whose context holds it."""


@dataclass(slots=True)
class Call:
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
    result: CallResult | None
    is_read: bool
    is_identical_repeat: bool = False
    is_unchanged_repeat: bool = False
    prev: Call | None = None
    refreshed: bool = False
    loop_id: int = -1


def series_values(s: pd.Series) -> list[Any]:
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
                 out_msgs: Mapping[str, list[int]]) -> dict[str, list[Call]]:
    """Each run's tool calls in context order, each linked to its previous read: runs in order
    of first appearance, whatever the frame's row order (``rereads``, and the run facts of
    ``analysis.run_facts``).

    Args:
        messages: tool calls and results of one run or several (``REREADS_COLUMNS``).
        out_msgs: each run's recorded output messages, sorted (a run not in it: none).
    """
    col = {c: series_values(messages[c]) for c in _CALL_COLUMNS}
    return {str(rid): _calls_of(col, at, out_msgs.get(str(rid), []))
            for rid, at in _rows_by_run(col["run_id"]).items()}


def _calls_of(col: dict[str, list[Any]], at: list[int], out_msgs: list[int]) -> list[Call]:
    """The tool calls of the rows ``at`` (one run's) of the columns ``col``."""
    msg, block, kind = col["msg"], col["block"], col["kind"]
    at = sorted(at, key=lambda i: (msg[i], block[i]))  # stable: store order within a block
    rid = str(col["run_id"][at[0]])
    call_id, tokens, is_error = col["call_id"], col["tokens_o200k"], col["is_error"]
    results: dict[str, CallResult] = {}
    for i in at:
        if kind[i] != "tool_result":
            continue
        cid, m, t = call_id[i], msg[i], tokens[i]
        if cid and str(cid) not in results:
            results[str(cid)] = CallResult(int(m), int(block[i]), 0 if pd.isna(t) else int(t),
                                        bool(is_error[i]), bisect_right(out_msgs, int(m)))
    tool, ops, paths, texts = col["tool"], col["op"], col["path"], col["text"]
    calls: list[Call] = []
    last_read: dict[str, Call] = {}
    writes: dict[str, list[int]] = {}
    all_writes: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    for pos, i in enumerate(i for i in at if kind[i] == "tool_call"):
        m, cid = msg[i], call_id[i]
        path, op = str(paths[i] or ""), str(ops[i])
        call = Call(rid, pos, int(m), int(block[i]), str(cid), str(tool[i]), op, path,
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


def mark_loops(calls: list[Call], k: int, window: int) -> None:
    """Set ``loop_id`` on reads among ≥ k reads of a path within ``window`` requests."""
    by_path: dict[str, list[Call]] = {}
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
