"""A run made ready for replay: plain arrays, pairing, safe split points, counts per counter.

A ``PreparedRun`` is made once per run (``replay.engine.prepared.prepare``, from the store's
rows); a sweep then replays it under many policies.  ``counts`` gives per-block token
counts under a ``TokenCounter`` (chars/N, a tokenizer, or a calibrated fit),
memoised per counter so no text is re-tokenised across policies.

Not here: building it from the rows (``replay.engine.prepared``), the replay loop
(``replay.engine.fold``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.tokens import count_one
from replay.policy import TokenCounter

CAT_OTHER, CAT_ARGS, CAT_ARGS_WRITE, CAT_RESULTS = 0, 1, 2, 3
"""Byte categories: other text, call arguments, write/edit arguments, tool results."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """truth = overhead_tokens + scale × tokenizer count, fitted on recorded usage."""

    overhead_tokens: float
    scale: float
    n_points: int
    mean_abs_error_frac: float
    """Mean |fit − recorded| / recorded over the points used."""
    n_points_estimated: int = 0
    """Points whose context holds blocks sized from redaction markers (an estimate, not a
    tokenizer count: the fit is only as good as ``replay.ingest.redaction.CHARS_PER_TOKEN``)."""
    held_out_error_frac: float | None = None
    """Median |fit − recorded| / recorded on the second half of the points, fitted on the first
    half only (None with too few points to split): the error of ``fitted`` truth."""
    held_out_anchored_error_frac: float | None = None
    """The same for ``anchored`` truth: anchored on the last point of the first half, median
    |recorded there + scale × (count − count there) − recorded| / recorded on the second half
    (``replay.engine.calibrate``; None with too few points, and for a corpus fit)."""
    flags: tuple[str, ...] = ()
    """Why the fit should not be trusted (``replay.engine.calibrate``): too few points, a scale far
    from 1, a negative overhead.  Empty: usable."""
    source: str = "run"
    """``run``: fitted on this run; ``corpus``: the corpus-level fit for the run's model."""

    @property
    def usable(self) -> bool:
        """Whether the fit is trusted (no flags)."""
        return not self.flags

    def __hash__(self) -> int:
        """The hash of its fields, as the dataclass would make it, but compiled (a run's memos
        are keyed by it every replay: ``PreparedRun.counts``, ``replay.engine.truth``)."""
        return hash((self.overhead_tokens, self.scale, self.n_points, self.mean_abs_error_frac,
                     self.n_points_estimated, self.held_out_error_frac,
                     self.held_out_anchored_error_frac, self.flags, self.source))


@dataclass(slots=True, kw_only=True)
class PreparedRun:
    """One run's blocks and requests as plain lists, ready for any policy."""

    run_id: str
    msg: list[int]
    """Original message index of each block (harness summaries removed)."""
    ordinal: list[int]
    """Dense message ordinal of each block (0..n_messages-1)."""
    msg_start: list[int]
    """First block of each message ordinal (length n_messages + 1, last = n_blocks)."""
    block: list[int]
    kind: list[str]
    role: list[str]
    tool: list[str]
    op: list[str]
    path: list[str]
    text: list[str]
    call_id: list[str]
    n_chars: list[int]
    n_bytes: list[int]
    n_lines: list[int]
    is_error: list[bool]
    estimated: list[bool]
    """Per block: its token counts are estimated from redaction markers (``replay.ingest.redaction``)."""
    category: list[int]
    call_of: list[int]
    """For a tool_result block, the block index of its call (-1 when orphaned or not a result)."""
    safe_split: list[bool]
    """Per message ordinal: cutting everything before it orphans no tool result."""
    tokens: dict[str, list[int]]
    """Tokenizer name → per-block counts from ingest."""
    req_blocks: list[int]
    """Per request: blocks in its context (all blocks of messages before its output)."""
    req_output_blocks: list[tuple[int, int]]
    """Per request: block range of the message it produced."""
    recorded_input: list[int | None]
    recorded_cache_read: list[int | None]
    recorded_output: list[int | None]
    ts: list[str]
    ts_s: list[float | None]
    first_compaction_request: int | None
    """The first request after a harness compaction (None when the harness never compacted)."""
    harness_summary_tokens: list[dict[str, int]] = field(default_factory=list)
    """Per harness compaction (in order): its summary's tokens per tokenizer (rows left out),
    with those of the messages it re-attached after the summary (``ContextEvent.preserved_msgs``
    before it; when prepared with the run's events)."""
    recorded_from: list[int] = field(default_factory=list)
    """Per request: first block of the context the harness really sent (0, or the first block
    after the latest harness summary before it: the harness dropped everything before)."""
    recorded_summary: list[int] = field(default_factory=list)
    """Per request: index of the harness summary heading its recorded context (-1: none)."""
    harness_summary_text: list[str] = field(default_factory=list)
    """Per harness compaction: the recorded summary's text (its blocks joined by newlines), then
    the texts of the messages it re-attached."""
    harness_boundary: list[int] = field(default_factory=list)
    """Per harness compaction: the first block after its summary (what the harness kept)."""
    harness_first_request: list[int | None] = field(default_factory=list)
    """Per harness compaction: the first request after it (None: the run ended first)."""
    harness_trigger: list[str] = field(default_factory=list)
    """Per harness compaction: ``auto`` or ``manual`` as recorded ('' when not recorded, or
    prepared without the run's events)."""
    harness_summary_encrypted: list[bool] = field(default_factory=list)
    """Per harness compaction: its summary was encrypted in the log (a Codex remote compaction):
    its text is a size marker, its size an estimate (``codex_compaction.encrypted_summary``)."""
    harness: str = ""
    """The harness and version as the log records them (``Run.harness``; '' when not given)."""
    model: str = ""
    """The run's main model as recorded (``Run.model``; '' when not given)."""
    window_tokens: int | None = None
    """The window the harness planned against as the log records it
    (``Run.recorded_window_tokens``; None when not recorded or not given)."""
    compact_limit_tokens: int | None = None
    """The auto-compact limit as the log records it (``Run.recorded_compact_limit_tokens``)."""
    encrypted_bytes: list[int] = field(default_factory=list)
    """Per block: the length of its encrypted form as recorded (``Message.encrypted_bytes``;
    empty when the rows have no such column: none)."""
    _counts: dict[Any, Any] = field(default_factory=dict)
    """Memo of derived per-run values: counts per counter, sized prefixes, placeholders."""

    @property
    def n_blocks(self) -> int:
        """Blocks in the raw stream."""
        return len(self.msg)

    @property
    def n_requests(self) -> int:
        """Model calls in the run."""
        return len(self.req_blocks)

    def sized(self, values: list[int], overhead: int) -> tuple[list[int], list[int]]:
        """Per-block sizes with the message overhead on each message's first block, and their
        prefix sums (length n_blocks + 1); memoised per (values, overhead)."""
        key = ("sized", id(values), overhead)
        got = self._counts.get(key)
        if got is None:
            base = list(values)
            if overhead:
                for start in self.msg_start[:-1]:
                    base[start] += overhead
            got = self._counts[key] = (values, base, [0, *itertools.accumulate(base)])
        _, base, prefix = got
        return base, prefix

    def memo(self, key: Any) -> dict[Any, Any]:
        """A per-run memo table for pure derived values (placeholders, facts)."""
        table = self._counts.get(key)
        if table is None:
            table = self._counts[key] = {}
        return table

    def bytes_prefix(self) -> list[list[int]]:
        """Prefix sums of block bytes per category (other, args, write args, results)."""
        if "bytes" not in self._counts:
            sums = []
            for cat in range(4):
                sums.append([0, *itertools.accumulate(
                    n if c == cat else 0 for n, c in zip(self.n_bytes, self.category))])
            self._counts["bytes"] = sums
        prefix: list[list[int]] = self._counts["bytes"]
        return prefix

    def outputs(self, counter: TokenCounter, calibration: Calibration | None = None) -> list[int]:
        """Per request: output tokens as recorded, else the produced message's count under
        ``counter`` (memoised)."""
        key = ("outputs", counter, calibration if counter.method == "calibrated" else None)
        got = self._counts.get(key)
        if got is None:
            of = self.counts(counter, calibration)
            got = self._counts[key] = [rec if rec is not None else sum(of[lo:hi]) for rec, (lo, hi)
                                       in zip(self.recorded_output, self.req_output_blocks)]
        return got

    def expired(self, ttl_s: float) -> list[bool]:
        """Per request: whether more than ``ttl_s`` passed since the previous timestamped
        request (a cache entry would have expired); memoised."""
        key = ("expired", ttl_s)
        got = self._counts.get(key)
        if got is None:
            got, prev = [], None
            for ts in self.ts_s:
                got.append(prev is not None and ts is not None and ts - prev > ttl_s)
                if ts is not None:
                    prev = ts
            self._counts[key] = got
        return got

    def event_prefix(self) -> list[int]:
        """Prefix sums of events over blocks (length n_blocks + 1; memoised): a tool call and a
        tool result are one event each, a message with neither is one event (on its first
        block) — the unit of OpenHands' condensers (``Trigger.after_events``)."""
        got: list[int] | None = self._counts.get("event_prefix")
        if got is None:
            kind, ordinal, start = self.kind, self.ordinal, self.msg_start
            has_tool = [False] * (len(start) - 1)
            for b, k in enumerate(kind):
                if k == "tool_call" or k == "tool_result":
                    has_tool[ordinal[b]] = True
            ones = [1 if k == "tool_call" or k == "tool_result"
                    or (not has_tool[ordinal[b]] and start[ordinal[b]] == b) else 0
                    for b, k in enumerate(kind)]
            got = self._counts["event_prefix"] = [0, *itertools.accumulate(ones)]
        return got

    def gaps_s(self) -> list[float | None]:
        """Per request: seconds since the previous timestamped request (None for the first
        one and for a request without a timestamp); memoised (``Trigger.idle_minutes``)."""
        got: list[float | None] | None = self._counts.get("gaps_s")
        if got is None:
            got, prev = [], None
            for ts in self.ts_s:
                got.append(None if ts is None or prev is None else ts - prev)
                if ts is not None:
                    prev = ts
            self._counts["gaps_s"] = got
        return got

    def counts(self, counter: TokenCounter, calibration: Calibration | None = None) -> list[int]:
        """Per-block token counts under ``counter`` (memoised)."""
        key = (counter, calibration if counter.method == "calibrated" else None)
        got: list[int] | None = self._counts.get(key)
        if got is None:
            got = self._counts[key] = _apply(self, counter, calibration)
        return got


def text_count(text: str, counter: TokenCounter, calibration: Calibration | None = None) -> int:
    """Tokens of a text the replay creates (placeholder, summary) under ``counter``."""
    if counter.method == "chars":
        return math.ceil(len(text) / counter.chars_per_token * counter.scale)
    n = count_one(text, counter.tokenizer)
    return round(n * token_scale(counter, calibration))


def token_scale(counter: TokenCounter, calibration: Calibration | None) -> float:
    """The factor on tokenizer counts under ``counter``: the run's calibration scale for a
    calibrated or anchored estimator when there is a fit, else the counter's own ``scale``."""
    if counter.method in ("calibrated", "anchored") and calibration is not None:
        return calibration.scale
    return counter.scale


def _apply(run: PreparedRun, counter: TokenCounter, calibration: Calibration | None) -> list[int]:
    if counter.method == "chars":
        f = counter.scale / counter.chars_per_token
        return [math.ceil(c * f) for c in run.n_chars]
    base = run.tokens.get(counter.tokenizer) or next(iter(run.tokens.values()))
    scale = token_scale(counter, calibration)
    if scale == 1.0:
        return list(base)
    return [round(t * scale) for t in base]
