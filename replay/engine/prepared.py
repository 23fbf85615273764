"""A run made ready for replay, from its rows: ``prepare`` turns one run's rows (from the
store) into a ``PreparedRun`` (``replay.engine.prepared_run``) once; a sweep then replays it
under many policies.  Harness summary rows are left out (a replay starts from the raw stream):
their counts and texts are kept per compaction.

Importers take the prepared run's names from here too (``PreparedRun``, ``Calibration``, the
byte categories, ``text_count``, ``token_scale``: re-exported from ``prepared_run``).

Not here: the run's arrays and what is derived from them (``replay.engine.prepared_run``), the
replay loop (``replay.engine.fold``).
"""

from __future__ import annotations

import bisect
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from replay.engine.prepared_run import (
    CAT_ARGS,
    CAT_ARGS_WRITE,
    CAT_OTHER,
    CAT_RESULTS,
    Calibration,
    PreparedRun,
    text_count,
    token_scale,
)
from replay.errors import ReplayInputError
from replay.ingest.names import TOKEN_COLUMN
from replay.ingest.run_checks import check_run_tables
from replay.ingest.timestamps import timestamp_seconds

__all__ = ["CAT_ARGS", "CAT_ARGS_WRITE", "CAT_OTHER", "CAT_RESULTS", "Calibration",
           "PreparedRun", "prepare", "text_count", "token_scale"]


def prepare(messages: pa.Table, requests: pa.Table, run_id: str,
            events: pa.Table | None = None, *, harness: str = "", model: str = "",
            window_tokens: int | None = None,
            compact_limit_tokens: int | None = None) -> PreparedRun:
    """Build a ``PreparedRun`` from one run's message and request rows (already filtered;
    checked first: ``replay.ingest.run_checks``) and, when given, its ``ContextEvent`` rows
    (for each compaction's recorded trigger), its recorded harness and main model (for a
    policy that follows the harness's own arithmetic, ``replay.policy.harness``, with the
    window and limit the log records); the model defaults to the most frequent one its requests
    name."""
    check_run_tables(messages, requests, run_id)
    summary_flags = messages["is_harness_summary"].to_pylist()
    keep = pc.invert(messages["is_harness_summary"]) if any(summary_flags) else None
    summary_tokens: dict[int, dict[str, int]] = {}
    summary_text: dict[int, list[str]] = {}
    summary_encrypted: set[int] = set()
    if keep is not None:
        all_msgs = messages["msg"].to_pylist()
        texts = messages["text"].to_pylist()
        cols = {name: messages[c].to_pylist() for name, c in TOKEN_COLUMN.items()}
        enc = (messages["encrypted_bytes"].to_pylist() if "encrypted_bytes" in messages.column_names
               else [0] * len(texts))
        for i, (m, h) in enumerate(zip(all_msgs, summary_flags)):
            if h:
                summary_text.setdefault(m, []).append(texts[i] or "")
                if enc[i]:
                    summary_encrypted.add(m)
                per = summary_tokens.setdefault(m, {})
                for name, values in cols.items():
                    if values[i] is not None:
                        per[name] = per.get(name, 0) + values[i]
    triggers: dict[int, str] = {}
    bare: set[int] = set()  # compactions with no summary row: keyed by their first message
    if events is not None and events.num_rows:
        names = [name for name, c in TOKEN_COLUMN.items()
                 if messages[c].null_count < messages.num_rows]
        for e in events.select(["kind", "msg", "summary_msg", "trigger",
                                "preserved_msgs"]).to_pylist():
            if e["kind"] != "compaction":
                continue
            if e["summary_msg"] is None:  # (a window, a trim: the harness wrote no summary)
                m = e["msg"]
                if m in summary_tokens or m - 1 in summary_tokens:
                    continue  # (its summary row is there: the compaction is that one)
                bare.add(m)
                summary_tokens[m] = dict.fromkeys(names, 0)
                summary_text[m] = []
                e = {**e, "summary_msg": m}
            if e["summary_msg"] in summary_tokens:
                triggers[e["summary_msg"]] = e["trigger"] or ""
                _reattach(messages, e, summary_tokens, summary_text)
    # the requests after a compaction: those whose output comes after its summary row, or for
    # a bare one from its first message on (its boundary: the first block at or after the
    # summary row's message, or the bare compaction's first message)
    summary_msgs = sorted(summary_tokens, key=lambda m: m if m in bare else m + 1)
    starts = [m if m in bare else m + 1 for m in summary_msgs]
    first_compaction_msg = starts[0] if starts else None
    if keep is not None:
        messages = messages.filter(keep)
    col = {name: messages[name].to_pylist() for name in (
        "msg", "block", "kind", "role", "tool", "op", "path", "text", "call_id", "n_chars",
        "n_bytes", "n_lines", "is_error", "tokens_o200k", "tokens_cl100k", "tokens_estimated")}
    msg = col["msg"]
    ordinal, msg_start = [], []
    for b, m in enumerate(msg):
        if b == 0 or m != msg[b - 1]:
            msg_start.append(b)
        ordinal.append(len(msg_start) - 1)
    msg_start.append(len(msg))
    n_msgs = len(msg_start) - 1
    call_block: dict[str, int] = {}
    call_of = [-1] * len(msg)
    category = [CAT_OTHER] * len(msg)
    min_call_ord = [n_msgs] * (n_msgs + 1)
    for b, kind in enumerate(col["kind"]):
        if kind == "tool_call":
            category[b] = CAT_ARGS_WRITE if col["op"][b] in ("write", "edit") else CAT_ARGS
            if col["call_id"][b]:
                call_block[col["call_id"][b]] = b
        elif kind == "tool_result":
            category[b] = CAT_RESULTS
            c = call_block.get(col["call_id"][b], -1)
            call_of[b] = c
            if c >= 0:
                o = ordinal[b]
                min_call_ord[o] = min(min_call_ord[o], ordinal[c])
    safe = [True] * (n_msgs + 1)
    running = n_msgs
    for o in range(n_msgs, -1, -1):
        running = min(running, min_call_ord[o])
        safe[o] = running >= o
    out_msgs = requests["output_msg"].to_pylist()
    req_blocks = [bisect.bisect_left(msg, m) for m in out_msgs]
    req_out = [(lo, bisect.bisect_left(msg, m + 1)) for lo, m in zip(req_blocks, out_msgs)]
    ts = [t or "" for t in requests["ts"].to_pylist()]
    first_comp = None
    if first_compaction_msg is not None:
        first_comp = next((i for i, m in enumerate(out_msgs) if m >= first_compaction_msg), None)
    rec_summary = [bisect.bisect_right(starts, m) - 1 for m in out_msgs]
    rec_from = [bisect.bisect_left(msg, summary_msgs[s]) if s >= 0 else 0 for s in rec_summary]
    tokens = {name: [t or 0 for t in col[c]] for name, c in TOKEN_COLUMN.items()
              if any(t is not None for t in col[c])}
    if not tokens:
        raise ReplayInputError(f"run {run_id}: no token counts stored; re-ingest with a tokenizer")
    return PreparedRun(
        run_id=run_id, msg=msg, ordinal=ordinal, msg_start=msg_start, block=col["block"],
        kind=col["kind"], role=col["role"], tool=col["tool"], op=col["op"], path=col["path"],
        text=col["text"], call_id=col["call_id"], n_chars=col["n_chars"], n_bytes=col["n_bytes"],
        n_lines=col["n_lines"], is_error=col["is_error"],
        estimated=col["tokens_estimated"], category=category, call_of=call_of,
        safe_split=safe, tokens=tokens, req_blocks=req_blocks, req_output_blocks=req_out,
        recorded_input=requests["input_tokens"].to_pylist(),
        recorded_cache_read=requests["cache_read_tokens"].to_pylist(),
        recorded_output=requests["output_tokens"].to_pylist(), ts=ts,
        ts_s=[timestamp_seconds(t) for t in ts], first_compaction_request=first_comp,
        harness_summary_tokens=[summary_tokens[m] for m in summary_msgs],
        recorded_from=rec_from, recorded_summary=rec_summary,
        harness_summary_text=["\n".join(summary_text[m]) for m in summary_msgs],
        harness_boundary=[bisect.bisect_left(msg, m) for m in summary_msgs],
        harness_first_request=[next((k for k, o in enumerate(out_msgs) if o >= m), None)
                               for m in starts],
        harness_trigger=[triggers.get(m, "") for m in summary_msgs],
        harness_summary_encrypted=[m in summary_encrypted for m in summary_msgs],
        harness=harness, model=model or _main_model(requests["model"].to_pylist()),
        window_tokens=window_tokens, compact_limit_tokens=compact_limit_tokens,
        encrypted_bytes=(messages["encrypted_bytes"].to_pylist()
                         if "encrypted_bytes" in messages.column_names else []),
    )


def _reattach(messages: pa.Table, event: dict[str, Any], summary_tokens: dict[int, dict[str, int]],
              summary_text: dict[int, list[str]]) -> None:
    """What compaction ``event`` re-attached after its summary (``preserved_msgs`` before the
    compaction: a partial compaction's kept records, Gemini CLI's kept turns, what an Inspect
    summary keeps) joins the recorded summary's counts and text: the replay that applies or
    reuses that compaction sends them after the summary, as the harness did (they stay in the
    stream before it, where they were).  Their message overheads are not added (the anchor
    absorbs them).  Preserved messages at or after the compaction are in the stream already."""
    kept = {p for p in event["preserved_msgs"] or () if p < event["msg"]}
    if not kept:
        return
    m, per = event["summary_msg"], summary_tokens[event["summary_msg"]]
    rows = messages.filter(pc.is_in(messages["msg"], pa.array(sorted(kept), pa.int64())))
    texts = rows["text"].to_pylist()
    summary_text[m].extend(t for t in texts if t)
    for name, c in TOKEN_COLUMN.items():
        values = [v for v in rows[c].to_pylist() if v is not None]
        if values and name in per:
            per[name] += sum(values)


def _main_model(models: list[str | None]) -> str:
    """The model most requests name ('' when none does; the first named on a tie)."""
    counts: dict[str, int] = {}
    for m in models:
        if m:
            counts[m] = counts.get(m, 0) + 1
    return max(counts, key=lambda m: counts[m], default="")

