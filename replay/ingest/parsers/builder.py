"""Assembling one run's rows: the one way every parser emits the run model.

A parser walks its format and calls ``message`` / ``text`` / ``tool_call`` /
``tool_result`` / ``summary`` / ``request`` in context order; the builder numbers
messages and blocks, classifies calls (``replay.ingest.ops``), pairs results with their
calls, reports orphans, and produces column lists for the schema (tokens are
filled in later, once, by ``replay.ingest.batch``).

Not here: token counting, writing Parquet, format quirks, the input file and its issues
(``replay.ingest.parsers.source``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from replay.ingest.names import MAX_COUNT
from replay.ingest.ops import classify
from replay.ingest.parsers.call_pairs import call_issues
from replay.ingest.parsers.counts import (
    INT64_MAX,
    count_or_issue,
    json_int,
    not_a_count,
    shown,
)
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.run_draft import (
    COUNT_COLS,
    EVENT_COLS,
    MSG_COLS,
    REQ_COLS,
    TEXT_COL,
    RunDraft,
    message_columns,
)
from replay.ingest.parsers.source import Issue, Source, run_id_for
from replay.ingest.run_label import first_prompt, short_title
from replay.ingest.timestamps import implausible_said

MAX_BRANCHES = 200
"""Abandoned branches (a Claude Code rewind's, a Codex rollback's) made into runs of their own
per session at the most: each is a copy of the run up to where it branched, so a log of
thousands of them would be thousands of copies (a crafted 10 MB rollout of 4,000 rollbacks:
2.8 GB and 33 s).  The rest are counted in the parser's issues, not made runs."""
_CHUNK_ROWS = 4096
"""Rows kept as tuples before they are moved into the message columns (``RunBuilder._m``)."""


@dataclass(slots=True)
class RunBuilder:
    """Collects one run's messages and requests in order."""

    source: Source
    index: int
    format: str
    issues: list[Issue]
    model: str = ""
    harness: str = ""
    parent_run_id: str = ""
    agent: str = ""
    title: str = ""
    """The session title the log records (set by the parser; else the first user prompt)."""
    window_tokens: int | None = None
    """``Run.recorded_window_tokens`` (set by a parser whose log records it)."""
    compact_limit_tokens: int | None = None
    """``Run.recorded_compact_limit_tokens`` (set by a parser whose log records it)."""
    line: int = 0
    """The input line being read, for issues (set by parsers that know it; 0: not known)."""
    _m: tuple[Any, ...] = field(default_factory=lambda: message_columns())
    """The message rows so far, a column each in ``MSG_COLS`` order (``message_columns``),
    but for the newest ones in ``_rows``: rows are added as tuples (one append a block) and
    moved into the columns ``_CHUNK_ROWS`` at a time, so a big run is never held as a tuple
    per row (a tuple's header a row, then rows and columns both at once when built: ~1.3x
    the rows' memory more at the peak)."""
    _rows: list[tuple[Any, ...]] = field(default_factory=list)
    """The newest message rows, as tuples in ``MSG_COLS`` order (``_flush`` moves them)."""
    _r: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in REQ_COLS})
    _msg: int = -1
    _block: int = 0
    _role: str = ""
    _ts: str = ""
    _msg_agent: str = ""
    _calls: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    _kinds: dict[tuple[str, str, str], tuple[str, str, str]] = field(default_factory=dict)
    """Each (tool, op, path) of a call once: ``_calls`` and the rows share it and its strings
    (a run of many calls holds a handful of tools, not a tuple and a tool name per call)."""
    _orphans: int = 0
    _compactions: list[int] = field(default_factory=list)
    """The message index at which each counted harness compaction took effect."""
    _events: list[dict[str, Any]] = field(default_factory=list)
    _nested: list[int] = field(default_factory=list)
    """Message index of each nested call (not counted in ``n_tool_calls``)."""
    _nested_results: list[int] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """Stable id from the source bytes and the run's index in the file."""
        return run_id_for(self.source.sha256, self.index, self.source.rel)

    def message(self, role: str, *, ts: str = "", agent: str = "") -> int:
        """Start a new message; returns its index.  (The previous one, if it got no block,
        gets an empty text block: message indices stay dense and every message has a row.)"""
        self._close()
        self._msg += 1
        self._block, self._role, self._ts, self._msg_agent = 0, role, ts, agent or self.agent
        return self._msg

    def text(self, text: str, *, kind: str = "text", encrypted_bytes: int = 0) -> None:
        """Add a text-like block (text, reasoning, image placeholder) to the current message;
        ``encrypted_bytes``: the length of its encrypted form as recorded (``Message``)."""
        self._add(kind, text, "", "", "", "", False, False, encrypted_bytes)

    def tool_call(self, call_id: str, tool: str, args: Any, *, text: str | None = None,
                  nested: bool = False) -> None:
        """Add a call; ``args`` is a dict (stored as JSON) or a raw string (a command, a patch).

        ``text`` (default: ``args`` as stored) is what the model saw of the call; ``nested``
        marks a call made inside another call (a code-mode program's commands): a row for the
        analyses, not counted in ``n_tool_calls``."""
        try:
            op, path = classify(tool, args)
        except Exception as exc:  # noqa: BLE001 - a classifier bug must not cost the file: keep the call
            self.issues.append(Issue(self.source.path, 0, f"tool call {call_id!r} ({tool}) not "
                                     f"classified ({type(exc).__name__}: {exc}); op 'other'"))
            op, path = "other", ""
        if text is None:
            text = args if isinstance(args, str) else json_text(args)
        if nested:
            self._nested.append(self._msg)
        kinds = (tool, op, path)
        try:
            kinds = self._kinds.setdefault(kinds, kinds)
        except TypeError:  # a value that cannot be a key (no parser gives one): kept as given
            pass
        tool, op, path = kinds
        if call_id:
            self._calls[call_id] = kinds
        self._add("tool_call", text, call_id, tool, op, path, False, False, 0)

    def tool_result(self, call_id: str, text: str, *, is_error: bool = False,
                    line: int | Callable[[], int] = 0, nested: bool = False) -> None:
        """Add a result; it inherits the call's tool, op and path.  Orphans are reported (at
        ``line``, or the line a function given as ``line`` returns, called only then);
        ``nested``: the result of a nested call (see ``tool_call``), not counted."""
        if nested:
            self._nested_results.append(self._msg)
        call = self._calls.get(call_id)
        if call is None:
            self._orphans += 1
            self.issues.append(Issue(self.source.path, line if isinstance(line, int) else line(),
                                     f"tool result {call_id!r} has no earlier call (kept, orphaned)"))
            call = ("", "other", "")
        tool, op, path = call
        self._add("tool_result", text, call_id, tool, op, path, is_error, False, 0)

    def summary(self, text: str, *, harness: bool = True, counted: bool = True,
                encrypted_bytes: int = 0) -> None:
        """Add a compaction summary; ``harness`` marks one the original harness wrote.
        ``counted=False``: its compaction is already counted (``event(harness_compaction=)``);
        ``encrypted_bytes``: the length of an encrypted summary as recorded (``Message``)."""
        if harness and counted:
            self._compactions.append(max(self._msg, 0))
        self._add("summary", text, "", "", "", "", False, harness, encrypted_bytes)

    def count(self, value: Any, name: str) -> int | None:
        """A token count recorded in the log for the next request (``counts``), or None.

        A value that is present but not a count (a string, a boolean, NaN, a fraction, an
        object, a negative or out-of-range number) is one issue naming the log's own field and
        the value, and unknown (None): never 0, never dropped without a word, and never hidden
        in a sum of parts (``request`` checks only what it records)."""
        if value is None or type(value) is int and 0 <= value <= MAX_COUNT:
            return value  # (nearly every value: no call, no issue's wording made)
        return count_or_issue(value, f"request {len(self._r['request'])}: {name}", self.issues,
                              self.source.path, self.line)

    def request(self, *, output_msg: int | None = None, input_tokens: int | None = None,
                cache_read_tokens: int | None = None, cache_write_tokens: int | None = None,
                output_tokens: int | None = None, reasoning_tokens: int | None = None,
                model: str = "", ts: str = "", cache_miss_reason: str = "",
                applied_edits: str = "") -> None:
        """Record one model call producing ``output_msg`` (default: the current message)."""
        r = self._r
        r["cache_miss_reason"].append(cache_miss_reason)
        r["applied_edits"].append(applied_edits)
        r["request"].append(len(r["request"]))
        r["output_msg"].append(self._msg if output_msg is None else output_msg)
        for name, value in zip(COUNT_COLS, (input_tokens, cache_read_tokens, cache_write_tokens,
                                             output_tokens, reasoning_tokens)):
            if value is not None and (type(value) is not int or not 0 <= value <= MAX_COUNT):
                value = count_or_issue(value, f"request {len(r['request']) - 1}: {name}",
                                       self.issues, self.source.path, self.line)
            r[name].append(value)
        full = r["input_tokens"][-1]
        if full is not None:  # the cache parts within the prompt (inline: every request)
            read, write = r["cache_read_tokens"][-1], r["cache_write_tokens"][-1]
            if (read or write) and (read or 0) + (write or 0) > full:
                self._parts_exceed_prompt(full, read, write)
        r["model"].append(model or self.model)
        r["ts"].append(ts or self._ts)

    def _run_count(self, name: str, value: Any) -> int | None:
        """A run-level token count a parser set (the recorded window, the compaction limit):
        one that is not a count or out of range (a window of 10^30 tokens) is one issue and
        unknown, as a request's count is; it lost the whole file before (the schema's int64
        cannot hold it)."""
        return count_or_issue(value, name, self.issues, self.source.path, 0)

    def _parts_exceed_prompt(self, full: int, read: int | None, write: int | None) -> None:
        """The request just recorded: its cache read and write are parts of ``input_tokens``,
        the full prompt (``schema.Request``), so together they never exceed it; ``request``
        found they do (a cached count larger than the prompt it is part of).  Which figure is
        wrong is not known: one issue, and both parts unknown, never a cached share over 100 %
        clamped to it or a cost priced from the impossible split."""
        r = self._r
        said = " + ".join(f"{c} {v:,}" for c, v in (("cache_read_tokens", read),
                                                     ("cache_write_tokens", write)) if v)
        self.issues.append(Issue(self.source.path, self.line,
                                 f"request {len(r['request']) - 1}: {said} exceed "
                                 f"input_tokens {full:,}, the full prompt they are part of "
                                 "(the cache parts kept as unknown)"))
        r["cache_read_tokens"][-1] = r["cache_write_tokens"][-1] = None

    def event(self, kind: str, *, msg: int | None = None, trigger: str = "",
              pre_tokens: Any = None, post_tokens: Any = None, tokens_saved: Any = None,
              summary_msg: int | None = None, preserved_msgs: list[int] | None = None,
              call_ids: list[str] | None = None, full_chars: Any = None,
              harness_compaction: bool = False) -> None:
        """Record a ``ContextEvent`` taking effect at message ``msg`` (default: the next
        message); its ``request`` is the first request made from then on (filled in by
        ``build``).  ``harness_compaction`` counts it in ``n_harness_compactions`` (a
        compaction whose summary is not added with ``summary``).  The counts are the values
        as recorded: one that is not a count, negative or out of range is one issue and
        unknown."""
        if harness_compaction:
            self._compactions.append(self._msg + 1 if msg is None else msg)
        row: dict[str, Any] = {}
        for name, value in (("pre_tokens", pre_tokens), ("post_tokens", post_tokens),
                            ("tokens_saved", tokens_saved), ("full_chars", full_chars)):
            if value is not None and not_a_count(value) is not None:
                self.issues.append(Issue(self.source.path, self.line,
                                         f"{kind} event: {name} {shown(value)} is not a count "
                                         "(kept as unknown)"))
                value = None
            row[name] = None if value is None else json_int(value)
        row.update(kind=kind, msg=self._msg + 1 if msg is None else msg, trigger=trigger,
                   summary_msg=summary_msg, preserved_msgs=list(preserved_msgs or ()),
                   call_ids=list(call_ids or ()))
        self._events.append(row)

    def set_event(self, index: int, **fields: Any) -> None:
        """Change fields of event ``index`` (e.g. a summary found after its boundary)."""
        self._events[index].update(fields)

    def branch(self, index: int, agent: str) -> RunBuilder:
        """A copy of the run so far as a run of its own (index ``index`` in the file, linked to
        this one, named ``agent``): the branch a rollback is about to abandon.  Requests added
        to this run before the copy are not copied (they are this run's; context there)."""
        return replace(self, index=index, agent=agent, parent_run_id=self.run_id,
                       _m=tuple(c[:] for c in self._flushed()), _rows=[],
                       _r={c: [] for c in REQ_COLS},
                       _calls=dict(self._calls), _compactions=list(self._compactions),
                       _events=[dict(e) for e in self._events], _nested=list(self._nested),
                       _nested_results=list(self._nested_results))

    def rewind(self, msg: int) -> tuple[int, int]:
        """Drop message ``msg`` and everything after it (blocks, requests producing them,
        events taking effect there): the harness rolled the conversation back and the model
        never saw them again.  Returns (messages dropped, requests dropped)."""
        if msg > self._msg:
            return 0, 0
        msg = max(msg, 0)
        dropped = self._msg - msg + 1
        msgs = self._flushed()[0]
        cut = bisect.bisect_left(msgs, msg)  # (rows are in message order)
        for c in self._m:
            del c[cut:]
        keep = [i for i, out in enumerate(self._r["output_msg"]) if out < msg]
        n_requests = len(self._r["request"]) - len(keep)
        for c, values in self._r.items():
            self._r[c] = [values[i] for i in keep]
        self._r["request"] = list(range(len(keep)))
        self._events = [e for e in self._events if e["msg"] < msg]
        self._compactions = [m for m in self._compactions if m < msg]
        self._nested = [m for m in self._nested if m < msg]
        self._nested_results = [m for m in self._nested_results if m < msg]
        self._msg = msg - 1
        self._block = cut - bisect.bisect_left(msgs, self._msg)
        return dropped, n_requests

    def set_text(self, block: int, text: str) -> None:
        """Put ``text`` in block ``block`` (index among the run's blocks), added before with a
        stand-in (a parser reading the text later, once what it was made of is let go)."""
        self._flush()
        self._m[TEXT_COL][block] = text

    def has_call(self, call_id: str) -> bool:
        """Whether a call with id ``call_id`` was added (a call without an id is not kept)."""
        return call_id in self._calls

    @property
    def msg_index(self) -> int:
        """The message being written (-1 before the first)."""
        return self._msg

    @property
    def n_events(self) -> int:
        """Events recorded so far."""
        return len(self._events)

    @property
    def n_blocks(self) -> int:
        """Blocks added so far."""
        return len(self._m[0]) + len(self._rows)

    def build(self) -> RunDraft:
        """The finished run: run fields (without token sums) and the columns.  The message
        columns are handed over, not copied: call it once, when the run is complete (a block
        added after it fails)."""
        self._close()
        m = dict(zip(MSG_COLS, self._flushed()))
        self._m = ()
        r = self._r
        kinds = m["kind"]
        recorded = [v for v in r["input_tokens"] if v is not None]
        outputs = [v for v in r["output_tokens"] if v is not None]
        run = {
            "run_id": self.run_id, "format": self.format, "source": self.source.rel,
            "model": self.model, "harness": self.harness, "parent_run_id": self.parent_run_id,
            "agent": self.agent,
            "title": self.title and short_title(self.title) or first_prompt(
                zip(m["role"], kinds, m["text"])),  # (no title: none to shorten)
            "n_messages": self._msg + 1, "n_blocks": len(kinds),
            "n_requests": len(r["request"]),
            "n_tool_calls": kinds.count("tool_call") - len(self._nested),
            "n_tool_results": kinds.count("tool_result") - len(self._nested_results),
            "n_orphan_results": self._orphans,
            "n_harness_compactions": len(self._compactions),
            "recorded_input_tokens": self._total("recorded input tokens", recorded),
            "recorded_output_tokens": self._total("recorded output tokens", outputs),
            "recorded_window_tokens": self._run_count("recorded_window_tokens",
                                                      self.window_tokens),
            "recorded_compact_limit_tokens": self._run_count("recorded_compact_limit_tokens",
                                                             self.compact_limit_tokens),
            "sha256": self.source.sha256,
        }
        outs = r["output_msg"]
        self.issues.extend(call_issues(self.source.path, m["kind"], m["call_id"], m["msg"], outs))
        if (clock := implausible_said(r["ts"])) is not None:
            self.issues.append(Issue(self.source.path, 0, clock))
        events: dict[str, list[Any]] = {c: [] for c in EVENT_COLS}
        k = 0  # each event's request: the first whose output is at or after its message (the
        # events by message: where the last one's was found, or later; not a scan from 0 each)
        for i, e in enumerate(sorted(self._events, key=lambda e: e["msg"])):
            while k < len(outs) and outs[k] < e["msg"]:
                k += 1
            e = {**e, "event": i, "request": k if k < len(outs) else None}
            for c in EVENT_COLS:
                events[c].append(e[c])
        return RunDraft(run=run, messages=dict(m), requests=dict(r), events=events)

    def _total(self, what: str, values: list[int]) -> int | None:
        """The sum of a run's recorded counts, or None (with an issue) when it cannot be stored."""
        if not values:
            return None
        total = sum(values)
        if total > INT64_MAX:
            self.issues.append(Issue(self.source.path, 0, f"the run's {what} add up to more "
                                     "than a 64-bit count (run total kept as unknown)"))
            return None
        return total

    def _flushed(self) -> tuple[Any, ...]:
        """The message columns, with every row added so far moved into them."""
        self._flush()
        return self._m

    def _flush(self) -> None:
        """Move the rows of ``_rows`` into the columns (one C-level transposition)."""
        if self._rows:
            for col, values in zip(self._m, zip(*self._rows)):
                col.extend(values)
            self._rows.clear()

    def _close(self) -> None:
        """Give the current message an empty text block if it has none (an assistant turn
        with no content is still a message, and a request may have produced it)."""
        if self._msg >= 0 and self._block == 0:
            self._add("text", "", "", "", "", "", False, False, 0)

    def _add(self, kind: str, text: str, call_id: str, tool: str, op: str, path: str,
             is_error: bool, is_harness_summary: bool, encrypted_bytes: int) -> None:
        """Add one block to the current message, each field given by position (every block is
        one call: with keywords and defaults it cost about twice as much)."""
        if self._msg < 0:
            self.message("user")
        rows = self._rows
        rows.append((self._msg, self._block, self._role, kind, call_id, tool, op, path, text,
                     bool(is_error), is_harness_summary, self._ts, self._msg_agent,
                     encrypted_bytes))
        if len(rows) == _CHUNK_ROWS:
            self._flush()
        self._block += 1
