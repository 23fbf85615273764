"""The state of the walk over one Codex rollout, and the moves that open messages.

What the walk holds between records (the run being built, the open assistant run, the usage
waiting for its run, the turns, branches and compaction pairs, what was said) and the three
moves every kind of record makes with it: start a message that is not the model's, continue
or start the model's output, and write the code-mode commands run since the last message.

Not here: what each record becomes (``codex_walk`` reads a line, ``codex_walk_items`` a
response item, ``codex_walk_events`` an event, ``codex_walk_compaction`` a compaction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.codex_compaction import CompactionPairs
from replay.ingest.parsers.codex_rollback import Branch
from replay.ingest.parsers.codex_said import Said
from replay.ingest.parsers.codex_usage import Pending, UsageTrack
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import said

ORDINAL = "line ordinal"
"""Coverage name of the lines carrying an ``ordinal`` (0.14x+): modelled when it is above the
previous line's, skipped when not (one issue for the file) — lines are read in file order."""


@dataclass(slots=True)
class Walk:
    """The walk over one rollout: open assistant run, usage waiting for its run, metadata."""

    b: RunBuilder
    src: Source
    issues: list[Issue]
    records: list[tuple[int, dict[str, Any]]]
    usage: UsageTrack
    model: str = ""
    cli: str = ""
    originator: str = ""
    seen_meta: bool = False
    open_run: bool = False
    runs: list[Pending] = field(default_factory=list)
    compacted_since_output: bool = False
    fork_ts: str = ""
    """When this fork or subagent began ('' for a session of its own)."""
    replaying: bool = False
    """Inside the parent's lines a fork replays (from the parent's session_meta on, timestamps
    before ``fork_ts``): context, but the parent's requests, not this run's."""
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    call_ids: set[str] = field(default_factory=set)
    pairs: CompactionPairs = field(default_factory=CompactionPairs)
    nested: list[tuple[str, Any, str, bool]] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Message index of each user turn's start (what a rollback counts back over)."""
    branches: list[Branch] = field(default_factory=list)
    """Each rollback's abandoned branch (a copy of the run before it) and its requests."""
    said: Said = field(default_factory=Said)
    """The message items said so far (what a replacement history's copies are found in)."""
    ordinal: int | None = None
    """The last line's ``ordinal``."""
    out_of_order: int = 0
    """The first line whose ordinal is not above the previous line's (0: none)."""
    remote_last: tuple[int, Any] | None = None
    """(summary message, encrypted content) of the last remote compaction item counted."""
    odd: dict[str, list[int]] = field(default_factory=dict)
    """Problem -> [first line, lines]: said once for the file (``codex_walk.finish``)."""
    bad: list[str] = field(default_factory=list)
    """What the item being read held where text belongs that was no string (``said``, emptied)."""
    cov: Coverage = field(init=False)
    """``src.coverage`` (an attribute: read for every record)."""
    modelled: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    """Records of the common types modelled / skipped since ``count_records`` last moved them
    into ``cov`` (a dict update in the loop, not a ``Coverage`` call a record)."""

    def __post_init__(self) -> None:
        self.cov = self.src.coverage

    def count_records(self) -> None:
        """Move the counts of ``modelled`` and ``skipped`` into the file's coverage (the caller
        does, whatever ends the walk: the coverage of a failed parse is stored too)."""
        for name, n in self.modelled.items():
            self.cov.modelled(name, n)
        for name, n in self.skipped.items():
            self.cov.skipped(name, n)
        self.modelled.clear()
        self.skipped.clear()

    def said_bad(self, no: int) -> None:
        """Say ``bad`` (about the message being written, at line ``no``) and empty it."""
        said(self.b, self.bad, line=no)
        self.bad.clear()

    def note(self, no: int, why: str) -> None:
        """A problem met on line ``no``: said once for the file, with its lines
        (``codex_walk.finish``)."""
        self.odd.setdefault(why, [no, 0])[1] += 1

    def start(self, role: str, ts: str) -> int:
        """Start a non-assistant message (after the code-mode commands run so far); its index."""
        if self.nested:  # (``flush_nested`` returns at once without: no call)
            self.flush_nested(ts)
        self.open_run = False
        return self.b.message(role, ts=ts)

    def flush_nested(self, ts: str) -> None:
        """Code-mode commands seen since the last message, as nested calls in a tool message."""
        if not self.nested:
            return
        self.b.message("tool", ts=ts)
        for k, (ident, args, _out, failed) in enumerate(self.nested):
            call_id = ident or f"command-{self.b.n_blocks}-{k}"
            self.b.tool_call(call_id, "exec_command", args, text="", nested=True)
            self.b.tool_result(call_id, "", is_error=failed, nested=True)
        self.nested.clear()

    def output(self, ts: str) -> None:
        """Continue the open assistant run, or start one (taking usage recorded before it)."""
        if self.open_run:
            return
        if self.nested:
            self.flush_nested(ts)
        self.usage.report_stray()
        self.open_run = True
        self.compacted_since_output = False
        msg = self.b.message("assistant", ts=ts)
        self.runs.append(Pending(msg, ts, self.model, self.usage.take_pending(), self.replaying))
