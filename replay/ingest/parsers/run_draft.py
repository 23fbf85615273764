"""The shape of a parsed run before tokenisation: what a parser hands over (``RunDraft``) and
its column names, in the order the builder fills them.

``replay.ingest.parsers.builder.RunBuilder`` fills a draft; ``replay.ingest.run_tables`` turns
one into the store's Arrow tables once its tokens are counted.

Not here: how rows are added and checked (``replay.ingest.parsers.builder``), the stored
schema (``replay.ingest.schema``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RunDraft:
    """A parsed run before tokenisation: run fields and message/request columns."""

    run: dict[str, Any]
    messages: dict[str, Any]
    """Column -> values: a list, or an ``array('q')`` for ``INT_MSG_COLS`` (not typed as lists:
    the compiled ingest parts check a list's type where they read one)."""
    requests: dict[str, list[Any]]
    events: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in EVENT_COLS})


MSG_COLS = ("msg", "block", "role", "kind", "call_id", "tool", "op", "path", "text",
            "is_error", "is_harness_summary", "ts", "agent", "encrypted_bytes")
"""The message columns, in the order the builder keeps a row."""
TEXT_COL = MSG_COLS.index("text")
INT_MSG_COLS = frozenset(("msg", "block", "encrypted_bytes"))
"""Message columns kept as ``array('q')`` while a run is built: 8 bytes a row, no int object."""
REQ_COLS = ("request", "output_msg", "input_tokens", "cache_read_tokens", "cache_write_tokens",
            "output_tokens", "reasoning_tokens", "model", "ts", "cache_miss_reason", "applied_edits")
"""The request columns."""
COUNT_COLS = REQ_COLS[2:7]
"""The request columns of token counts (``RunBuilder.request`` checks each)."""
EVENT_COLS: tuple[str, ...] = (
    "event", "kind", "msg", "request", "trigger", "pre_tokens", "post_tokens", "tokens_saved",
    "summary_msg", "preserved_msgs", "call_ids", "full_chars")
"""The event columns (compactions, clears, … a harness recorded)."""


def message_columns() -> tuple[Any, ...]:
    """Empty message columns in ``MSG_COLS`` order: ``array('q')`` for the integer ones, lists
    for the others."""
    return tuple(array("q") if c in INT_MSG_COLS else [] for c in MSG_COLS)
