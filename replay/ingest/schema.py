"""The normalised run model: four tables, one Arrow schema each, declared once.

A *run* is one recorded agent session.  ``Message`` rows are content blocks in
context order; ``Request`` rows are model calls; ``ContextEvent`` rows are what the harness did
to the context besides adding messages (compactions with their recorded facts, cleared and
persisted tool results).  Column names equal dataclass
field names (a test pins this), and every Parquet write passes these schemas.

Not here: how a format maps to these rows (``replay.ingest.parsers``), how tokens are
counted (``replay.ingest.tokens``), where tables live on disk (``replay.ingest.store``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

SCHEMA_VERSION = "6"

Role = Literal["system", "user", "assistant", "tool"]
Kind = Literal["text", "tool_call", "tool_result", "reasoning", "summary", "image"]
Op = Literal["read", "write", "edit", "search", "exec", "list", "todo", "other", ""]

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
KINDS: tuple[str, ...] = ("text", "tool_call", "tool_result", "reasoning", "summary", "image")
OPS: tuple[str, ...] = ("read", "write", "edit", "search", "exec", "list", "todo", "other", "")
TOKENIZERS: tuple[str, ...] = ("o200k_base", "cl100k_base")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One recorded agent session."""

    run_id: str
    """Stable id: first 16 hex of the source sha256, then the run's index in the file."""
    format: str
    """Parser that read it (``claude_code``, ``codex``, …)."""
    source: str
    """Path of the source file relative to the ingest root."""
    model: str
    """Main model name as recorded ('' when the log has none)."""
    harness: str
    """Harness and version as recorded (e.g. ``claude-code 2.1.39``)."""
    parent_run_id: str
    """Run that spawned this one (subagents, compaction requests); '' for top-level runs."""
    agent: str
    """Agent / sidechain id inside the session ('' for the main agent)."""
    title: str = ""
    """Session title as recorded, else the first user prompt, as one short line
    (``replay.ingest.run_label.short_title``); '' when the run has neither."""
    n_messages: int
    n_blocks: int
    n_requests: int
    n_tool_calls: int
    n_tool_results: int
    n_orphan_results: int
    """Tool results whose call is not in the run (reported at ingest, kept as rows)."""
    n_harness_compactions: int
    """Compactions the original harness recorded (summary rows flagged ``is_harness_summary``)."""
    recorded_input_tokens: int | None
    """Sum of recorded prompt sizes over requests (None when the log has no usage)."""
    recorded_output_tokens: int | None
    n_estimated_blocks: int = 0
    """Blocks sized from redaction markers' declared lengths (``Message.tokens_estimated``)."""
    estimated_tokens_o200k: int | None = None
    """o200k tokens of those blocks (None when o200k was not counted): this much of the run's
    token count is an estimate, not a tokenizer count."""
    recorded_window_tokens: int | None = None
    """The context window the harness planned against, as the log records it (Codex
    ``token_count`` ``info.model_context_window``: the model's window × its effective percent);
    None when the log does not say (a harness's arithmetic then takes its model table,
    ``replay.policy.harness``)."""
    recorded_compact_limit_tokens: int | None = None
    """The auto-compact limit as the log records it (Codex ``info.auto_compact_token_limit``);
    None when not recorded."""
    sha256: str
    """sha256 of the whole source file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One content block of one message, in context order."""

    run_id: str
    msg: int
    """Message index in the run (0-based, dense)."""
    block: int
    """Block index inside the message."""
    role: str
    kind: str
    call_id: str
    """Pairs a ``tool_call`` with its ``tool_result`` ('' otherwise)."""
    tool: str
    """Tool name as recorded ('' for non-tool blocks)."""
    op: str
    """Normalised operation of the call: read, write, edit, search, exec, list, todo (writes
    the agent's todo list or plan), other."""
    path: str
    """File a read/write/edit targets ('' when none)."""
    text: str
    """Content as the model saw it; for a tool_call, its arguments as JSON."""
    n_bytes: int
    """UTF-8 bytes of ``text``; for a block holding redaction markers, the characters the
    markers declare in their place (taken as bytes: an estimate, ``tokens_estimated``)."""
    n_chars: int
    """Characters of ``text``; for a block holding redaction markers, the characters the markers
    declare in their place (``replay.ingest.redaction``)."""
    n_lines: int
    tokens_o200k: int | None
    tokens_cl100k: int | None
    tokens_estimated: bool = False
    """The block holds redaction markers (``[REDACTED_OUTPUT len=4045 sha=…]``): its token
    counts and ``n_chars`` size the redacted text by the declared length at
    ``replay.ingest.redaction.CHARS_PER_TOKEN``, an estimate, not a tokenizer count."""
    encrypted_bytes: int = 0
    """Length of the block's encrypted form as recorded (Codex reasoning or a remote compaction's
    ``encrypted_content``; a redaction marker's declared length when a sanitiser replaced it); 0
    when none.  The text the model saw is not in the log: Codex's own trigger estimates it
    from this length (``replay.engine.hidden_reasoning``)."""
    is_error: bool
    is_harness_summary: bool
    """A compaction summary written by the original harness; replays start without it."""
    ts: str
    """ISO-8601 timestamp as recorded ('' when absent)."""
    agent: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """One model call: its context is every message before ``output_msg``."""

    run_id: str
    request: int
    """Request index in the run (0-based, dense)."""
    output_msg: int
    """The assistant message this call produced."""
    input_tokens: int | None
    """Full prompt size the server counted (cached and uncached together); None (or 0, as some
    logs write it) where the log recorded no usage (``unrecorded``)."""
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    model: str
    ts: str
    cache_miss_reason: str = ""
    """Why the server's prompt cache missed, as the log records it (Claude Code
    ``message.diagnostics.cache_miss_reason.type``: ``messages_changed``, ``model_changed``,
    ``previous_message_not_found``, ``system_changed``, ``tools_changed``, ``unavailable``);
    '' when the log says nothing.  Ground truth for the cache model."""
    applied_edits: str = ""
    """Context edits the server applied to this request, as recorded (Claude Code
    ``message.context_management.applied_edits``, kept as its JSON text); '' when none are
    recorded.  Ground truth for the clearing model."""


def unrecorded(inputs: Iterable[int | None]) -> int:
    """How many of ``inputs`` (requests' ``input_tokens``) recorded no usage: None, or 0 (no
    model call has an empty prompt: a log that wrote 0 where it recorded nothing), as the
    engine's ``truth.has_usage`` reads a request.  One definition for every count of requests
    without usage (``replay runs``, the commands' truth notes)."""
    return sum(1 for v in inputs if v is None or v <= 0)


EVENT_KINDS: tuple[str, ...] = ("compaction", "microcompaction", "persisted_output")
"""What a ``ContextEvent`` records (see there)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextEvent:
    """Something the original harness did to the context that the message rows alone do not
    show: a compaction (the facts around its summary), a microcompaction (tool results the
    model saw as a placeholder from then on) or a persisted output (a result the model saw
    only as a preview).

    For a ``compaction``: the messages before ``msg`` were the context before it; the model
    then saw the summary (``summary_msg``, a ``summary`` row flagged ``is_harness_summary``;
    None when the log has no summary), the messages ``preserved_msgs`` re-attached after it
    (a partial compaction keeps them; empty for a full one), and everything from ``msg`` on.
    ``request`` is the first request after it (None when the run ends first).  A replay that
    reuses recorded summaries takes ``summary_msg``'s text at ``msg`` with the recorded
    ``trigger`` and ``pre_tokens``.

    For a ``microcompaction``: from request ``request`` on, the results of ``call_ids`` were
    sent as ``[Old tool result content cleared]``; their rows keep the full text (what the
    model saw before).  For a ``persisted_output``: the result of ``call_ids[0]`` is the
    preview the model saw; ``full_chars`` is the size of the output saved beside the log.
    """

    run_id: str
    event: int
    """Index in the run (0-based, in context order)."""
    kind: str
    """One of ``EVENT_KINDS``."""
    msg: int
    """Message index where it took effect (the first message after it)."""
    request: int | None
    """First request made after it (None when none is)."""
    trigger: str
    """``auto`` or ``manual`` as recorded ('' when not recorded)."""
    pre_tokens: int | None
    """Context tokens before it, as the harness recorded them."""
    post_tokens: int | None
    """Context tokens after it, as recorded (None when not)."""
    tokens_saved: int | None
    """Tokens it freed, as recorded (microcompactions; None when not)."""
    summary_msg: int | None
    """Message index of the summary (compactions; None when there is none)."""
    preserved_msgs: list[int]
    """Messages re-attached after the summary (a partial compaction's preserved segment)."""
    call_ids: list[str]
    """Tool calls whose results it cleared (microcompaction) or persisted (persisted output)."""
    full_chars: int | None
    """Persisted output: characters of the whole output (None when not stated)."""


_ARROW: dict[Any, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "int | None": pa.int64(),
    "bool": pa.bool_(),
    "float": pa.float64(),
    "float | None": pa.float64(),
    "list[int]": pa.list_(pa.int64()),
    "list[str]": pa.list_(pa.string()),
}


def arrow_schema(cls: type) -> pa.Schema:
    """The Arrow schema of a model dataclass, versioned in its metadata."""
    fields = []
    for f in dataclasses.fields(cls):
        nullable = "None" in str(f.type)
        fields.append(pa.field(f.name, _ARROW[str(f.type)], nullable=nullable))
    return pa.schema(fields, metadata={"schema_version": SCHEMA_VERSION, "table": cls.__name__})


RUNS = arrow_schema(Run)
MESSAGES = arrow_schema(Message)
REQUESTS = arrow_schema(Request)
EVENTS = arrow_schema(ContextEvent)
SCHEMAS: dict[str, pa.Schema] = {"runs": RUNS, "messages": MESSAGES, "requests": REQUESTS,
                                 "events": EVENTS}
RUN_INDEX = pa.schema([*RUNS, pa.field("tokens_o200k", pa.int64(), nullable=True),
                       pa.field("tokens_cl100k", pa.int64(), nullable=True),
                       pa.field("n_requests_unrecorded", pa.int64(), nullable=False),
                       pa.field("entry_key", pa.string(), nullable=False)],
                      metadata={"schema_version": SCHEMA_VERSION, "table": "RunIndex"})
"""The store's run index: every entry's ``runs`` rows, each run's token total (over its
messages) by each tokenizer (``tokens_o200k``, ``tokens_cl100k``: null, unknown, where the
entry was not counted with it: ``replay ingest --tokenizers``), its requests that recorded no
usage (``unrecorded``) and the key of the entry holding it.  A cache of the entries' own files: an index of another schema (one written before
a column was added) is not read, and the next ingest rewrites it
(``replay.ingest.store_index``)."""
MODELS: dict[str, type] = {"runs": Run, "messages": Message, "requests": Request,
                           "events": ContextEvent}


def to_table(rows: list[Any], table: str) -> pa.Table:
    """Rows of one model dataclass → an Arrow table with the declared schema."""
    schema = SCHEMAS[table]
    columns = {name: [getattr(r, name) for r in rows] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def from_table(tbl: pa.Table, table: str) -> list[Any]:
    """An Arrow table → model dataclasses (the inverse of ``to_table``)."""
    cls = MODELS[table]
    return [cls(**row) for row in tbl.to_pylist()]
