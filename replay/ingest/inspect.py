"""What ``replay inspect FILE`` reports: one log file as the ingest reads it.

``inspect_file`` parses one file (nothing is written) and returns the detected format and
why, every record type with its count and fate (``replay.ingest.parsers.coverage``), the runs made
(a run with no request says why), and per request the context the run model counts next to
the input the log recorded, with the gap.  The counted context of a request is what the model
saw as far as the log spells it out: after a compaction, the summary, the records re-attached
after it and what follows (``replay.ingest.schema.ContextEvent``); a tool result cleared by a
microcompaction counts as its placeholder from then on.  The gap is everything the log does
not contain plus the difference between the o200k tokenizer and the model's own; per request
the parts that can be told apart are given: the counted tokens that are redaction estimates
(``estimated_tokens``) and the hidden reasoning the earlier requests recorded
(``reasoning_before_tokens``), and ``gap_story`` says in one line what the first request's gap
is (instructions and tool schemas the log does not hold) and what the growth goes with.

Not here: printing (``replay.cli.inspect_command``), parsing (``replay.ingest.parsers``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from replay.ingest.input_files import check_max_bytes
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import check_format
from replay.ingest.parsers.source import Issue
from replay.ingest.run_label import run_labels
from replay.ingest.tokens import count_tokens

CLEARED_PLACEHOLDER = "[Old tool result content cleared]"
"""What Claude Code sends in place of a microcompacted tool result."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request's counted context next to its recorded input."""

    request: int
    output_msg: int
    counted_tokens: int
    """o200k tokens of the messages the model saw before this request, as the log shows them."""
    recorded_input_tokens: int | None
    """The prompt size the server recorded (None when the log has no usage)."""
    estimated_tokens: int = 0
    """Of ``counted_tokens``, those of blocks sized from redaction markers (an estimate)."""
    reasoning_before_tokens: int | None = None
    """The hidden reasoning the earlier requests of this context recorded as output (since its
    last compaction; None when no request records reasoning): text the log does not hold,
    which a harness that sends reasoning items back (Codex) adds to every later prompt."""

    @property
    def gap_tokens(self) -> int | None:
        """Recorded minus counted (None when nothing was recorded)."""
        return None if self.recorded_input_tokens is None \
            else self.recorded_input_tokens - self.counted_tokens


@dataclass(frozen=True, slots=True)
class EventNote:
    """One ``ContextEvent`` of the run, said in words."""

    kind: str
    msg: int
    request: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run of the file."""

    run_id: str
    n_messages: int
    n_requests: int
    n_tool_calls: int
    n_harness_compactions: int
    n_events: int
    """Context events (compactions, cleared or persisted tool results)."""
    no_requests_reason: str
    """Why the run has no request ('' when it has some)."""
    requests: tuple[RequestContext, ...]
    label: str = ""
    """How the run is named to people (``replay.ingest.run_label``: the file, ``#N``, ``↳``,
    its title), as ``replay runs`` names it."""
    events: tuple[EventNote, ...] = ()
    """What the harness did to the context besides adding messages (compactions with their
    recorded facts, cleared and persisted tool results)."""


@dataclass(frozen=True, slots=True)
class Inspection:
    """Everything ``replay inspect`` shows for one file."""

    path: str
    format: str
    """The parser used ('' when none took the file)."""
    detection: str
    """Why that format (or which came closest)."""
    coverage: dict[str, dict[str, int]]
    """Record type -> {fate: count}."""
    runs: tuple[RunReport, ...]
    issues: tuple[Issue, ...]
    no_conversation: str = ""
    """Why the file holds no run though nothing is wrong with it (only metadata records, a
    companion file); '' otherwise."""


def inspect_file(path: Path, *, fmt: str | None = None) -> Inspection:
    """Parse ``path`` and report its detection, coverage, runs and per-request context.

    Args:
        path: one log file.
        fmt: force a parser instead of detecting the format.

    Raises:
        ReplayInputError: ``fmt`` names no parser.
    """
    check_format(fmt)
    check_max_bytes()
    parsed = parse_file(path, path.parent, fmt=fmt, explain=True)
    runs: list[RunReport] = []
    if parsed.tables is not None:
        t = parsed.tables
        labels = run_labels(t.runs)
        for run in t.runs.to_pylist():
            rid = run["run_id"]
            msgs = t.messages.filter(pc.equal(t.messages["run_id"], rid))
            reqs = t.requests.filter(pc.equal(t.requests["run_id"], rid)).to_pylist()
            events = [] if t.events is None else \
                t.events.filter(pc.equal(t.events["run_id"], rid)).to_pylist()
            summarised = _summarised(events)
            runs.append(RunReport(
                run_id=rid, n_messages=run["n_messages"], n_requests=run["n_requests"],
                n_tool_calls=run["n_tool_calls"],
                n_harness_compactions=run["n_harness_compactions"], n_events=len(events),
                no_requests_reason=_no_requests(msgs) if not reqs else "",
                requests=tuple(_contexts(msgs, reqs, events)), label=labels[rid],
                events=tuple(EventNote(e["kind"], e["msg"], e["request"],
                                       _detail(e, summarised.get(e["event"])))
                             for e in events)))
    return Inspection(str(path), parsed.format, parsed.detection, parsed.coverage, tuple(runs),
                      parsed.issues, parsed.no_conversation)


def gap_story(requests: tuple[RequestContext, ...]) -> str:
    """The counted-vs-recorded gap of one run in one line: where it starts (what the log does
    not hold at the first request: instructions, tool schemas), how it grows, and beside the
    growth the earlier requests' hidden reasoning, the counted growth (a tokenizer difference
    scales with it) and the redaction estimates; '' when no request has recorded usage."""
    known = [c for c in requests if c.gap_tokens is not None]
    if not known:
        return ""
    first, last = known[0], known[-1]
    assert first.gap_tokens is not None and last.gap_tokens is not None
    grew = last.gap_tokens - first.gap_tokens
    counted = last.counted_tokens - first.counted_tokens
    parts = [(f"gap {first.gap_tokens:,} at request {first.request} (what the log does not hold "
             f"there: instructions, tool schemas) → {last.gap_tokens:,} at request "
             f"{last.request} ({grew:+,})")]
    if counted > 0:
        parts.append(f"counted context grew {counted:,} (the gap grew {grew / counted:.1%} of "
                     "that: a tokenizer difference grows with the context)")
    if last.reasoning_before_tokens:
        parts.append(f"the earlier requests recorded {last.reasoning_before_tokens:,} hidden "
                     "reasoning tokens (not in the log; sent back by harnesses that keep "
                     "reasoning items)")
    if last.estimated_tokens:
        parts.append(f"{last.estimated_tokens:,} of the {last.counted_tokens:,} counted tokens "
                     "are redaction size estimates (from the markers' declared lengths)")
    return "; ".join(parts)


def _summarised(events: list[dict[str, Any]]) -> dict[int, int]:
    """Per compaction event: the messages its summary replaced — those since the previous
    compaction's summary (or the run's start) up to it, less those it re-attached."""
    out: dict[int, int] = {}
    start = 0
    for e in sorted((e for e in events if e["kind"] == "compaction"), key=lambda e: e["msg"]):
        kept = {p for p in e["preserved_msgs"] if start <= p < e["msg"]}
        out[e["event"]] = max(0, e["msg"] - start - len(kept))
        start = e["summary_msg"] + 1 if e["summary_msg"] is not None else e["msg"]
    return out


def _detail(e: dict[str, Any], summarised: int | None = None) -> str:
    """An event's recorded facts in a few words (``summarised``: the messages a compaction's
    summary replaced, ``_summarised``)."""
    parts = [e["trigger"]] if e["trigger"] else []
    if e["pre_tokens"] is not None:
        parts.append(f"{e['pre_tokens']:,} tokens before")
    if e["post_tokens"] is not None:
        parts.append(f"{e['post_tokens']:,} after")
    if e["tokens_saved"] is not None:
        parts.append(f"{e['tokens_saved']:,} saved")
    if e["kind"] == "compaction":
        parts.append("no summary recorded" if e["summary_msg"] is None
                     else f"summary at message {e['summary_msg']}")
        if summarised is not None:
            parts.append(f"{summarised} message(s) summarised")
        if e["preserved_msgs"]:
            parts.append(f"{len(e['preserved_msgs'])} message(s) re-attached after it")
    if e["call_ids"]:
        what = "cleared" if e["kind"] == "microcompaction" else "preview of"
        parts.append(f"{what} {len(e['call_ids'])} tool result(s)")
    if e["full_chars"] is not None:
        parts.append(f"full output {e['full_chars']:,} chars")
    return ", ".join(parts)


def _no_requests(msgs: pa.Table) -> str:
    roles = set(msgs["role"].to_pylist())
    if "assistant" not in roles:
        return "no assistant message: the log records no model call"
    return ("assistant messages but no recorded model call (harness-written responses, e.g. "
            "Claude Code <synthetic> records)")


def _contexts(msgs: pa.Table, reqs: list[dict[str, Any]], events: list[dict[str, Any]]
              ) -> list[RequestContext]:
    """Counted context per request (see the module docstring)."""
    m = msgs.select(["msg", "kind", "call_id", "tokens_o200k", "is_harness_summary",
                     "tokens_estimated"]).to_pylist()
    n_msgs = (m[-1]["msg"] + 1) if m else 0
    per_msg = [0] * n_msgs
    est_msg = [0] * n_msgs
    result_tokens: dict[str, list[tuple[int, int, bool]]] = {}
    summaries: list[int] = []
    for row in m:
        tok = row["tokens_o200k"] or 0
        per_msg[row["msg"]] += tok
        if row["tokens_estimated"]:
            est_msg[row["msg"]] += tok
        if row["kind"] == "tool_result" and row["call_id"]:
            result_tokens.setdefault(row["call_id"], []).append(
                (row["msg"], tok, bool(row["tokens_estimated"])))
        if row["is_harness_summary"] and (not summaries or summaries[-1] != row["msg"]):
            summaries.append(row["msg"])
    prefix, est_prefix = [0], [0]
    for tok, est in zip(per_msg, est_msg):
        prefix.append(prefix[-1] + tok)
        est_prefix.append(est_prefix[-1] + est)
    any_reasoning = any(q["reasoning_tokens"] is not None for q in reqs)
    reasoning: list[tuple[int, int]] = []  # (output msg, recorded reasoning) of earlier requests
    placeholder = count_tokens([CLEARED_PLACEHOLDER], "o200k_base")[0]
    compactions = [e for e in events if e["kind"] == "compaction"]
    micros = [e for e in events if e["kind"] == "microcompaction"]
    out = []
    for q in reqs:
        o = q["output_msg"]
        start, extra, est_extra = 0, 0, 0
        k = bisect.bisect_right(summaries, o - 1)
        if k:
            start = summaries[k - 1]
        last = next((e for e in reversed(compactions) if e["msg"] <= o), None)
        if last is not None and last["msg"] >= start:
            start = last["summary_msg"] if last["summary_msg"] is not None else last["msg"]
            extra = sum(per_msg[p] for p in last["preserved_msgs"] if p < start)
            est_extra = sum(est_msg[p] for p in last["preserved_msgs"] if p < start)
        counted = prefix[o] - prefix[min(start, o)] + extra
        estimated = est_prefix[o] - est_prefix[min(start, o)] + est_extra
        for e in micros:
            if e["msg"] > o:
                continue
            for cid in e["call_ids"]:
                for at, tok, est in result_tokens.get(cid, ()):
                    if start <= at < o:
                        counted -= max(0, tok - placeholder)
                        estimated -= tok if est else 0
        before = sum(r for at, r in reasoning if at >= start) if any_reasoning else None
        out.append(RequestContext(q["request"], o, counted, q["input_tokens"], estimated,
                                  before))
        reasoning.append((o, q["reasoning_tokens"] or 0))
    return out
