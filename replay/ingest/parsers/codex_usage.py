"""Codex usage: which request each ``token_count`` measures, and the window it records.

Usage comes from ``event_msg`` ``token_count`` events with ``info`` (``info`` null: skipped),
deduplicated (late-2025+ builds write each twice with the same ``total_token_usage``).  0.5x
builds write a token_count BEFORE the items it measures, 0.10x+ right AFTER them: the file's
order is taken from its first usage-bearing token_count (``codex_file.usage_first``).  When
only totals are recorded, usage is the difference of consecutive totals; totals that go down
(after a compaction or a rollback) make that request's usage unknown.  The token_count of a
compaction's own model call (just before or after the compacted line, with no model output
between) is skipped; any other token_count with no request to attach to is reported and
dropped.

The window: ``info.model_context_window`` (0.9x+; ``task_started`` carries it too) is the
window Codex planned against (the model's ``context_window`` × its
``effective_context_window_percent``), and ``info.auto_compact_token_limit`` (0.14x+) the limit
it compacted at; the run records the most frequent value of each (``Run.recorded_window_tokens``,
``Run.recorded_compact_limit_tokens``), and an issue says when a file holds several.

Not here: the walk over the records (``replay.ingest.parsers.codex_walk``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.content_text import held
from replay.ingest.parsers.counts import json_int
from replay.ingest.parsers.source import Issue

NO_RUN = "token_count with no model output to attach it to (usage dropped)"


@dataclass(slots=True)
class Pending:
    """A request's fields as the walk collects them: [output message, ts, model, usage,
    replayed] (``replayed``: a fork's copy of its parent's request, not this run's)."""

    msg: int
    ts: str
    model: str
    usage: dict[str, Any] | None
    """Request fields (``input_tokens``, … as ``RunBuilder.request`` takes them); None: none."""
    replayed: bool


@dataclass(slots=True)
class UsageTrack:
    """Usage waiting for its request, the last totals, the windows recorded."""

    path: str
    issues: list[Issue]
    usage_first: bool
    pending: dict[str, int | None] | None = None
    pending_line: int = 0
    prev_total: Any = None
    stray: int = 0
    """Line of a token_count with no request to attach to, reported unless a compaction follows."""
    windows: Counter[int] = field(default_factory=Counter)
    limits: Counter[int] = field(default_factory=Counter)
    unread: dict[str, tuple[dict[str, int], int, str]] = field(default_factory=dict)
    """Field → (times by the event that recorded it, first line, what the first held): a window
    or limit recorded that is no positive whole number (not used; said once a field in
    ``finish``, naming the events: ``token_count``, ``task_started``)."""
    started: Counter[str] = field(default_factory=Counter)
    """Field → how many of the values ``windows`` / ``limits`` count came from a
    ``task_started`` (``started_window``; the others from token_counts)."""

    def token_count(self, no: int, info: Any, runs: list[Pending], *, replaying: bool,
                    compacted_since_output: bool) -> str:
        """Attach one usage record to ``runs``: ``modelled``, ``duplicate`` (the same usage
        written twice) or ``skipped`` (a fork's replayed parent request, a compaction's own
        call, or nothing to attach to yet)."""
        if not isinstance(info, dict):
            raise ValueError(f"token_count info is {type(info).__name__}, not an object")  # noqa: TRY004
        self.window(info, no)
        total = info.get("total_token_usage")
        if total is not None and total == self.prev_total:
            return "duplicate"  # the same request's usage written a second time
        usage, bad = it.token_usage(info, self.prev_total)
        for what in bad:
            self.issues.append(Issue(self.path, no, f"token_count: {what} is not a token "
                                                    "count (kept as unknown)"))
        self.prev_total = total
        if replaying or compacted_since_output:  # the parent's request / the compaction's call
            return "skipped"
        if self.usage_first:  # measures the run that follows
            if self.pending is not None:
                self.issues.append(Issue(self.path, self.pending_line, NO_RUN))
            self.pending, self.pending_line = usage, no
        elif runs and runs[-1].usage is None:  # measures the run just written
            runs[-1].usage = usage
        else:  # a compaction's own call when a compaction follows; else reported
            self.stray = no
            return "skipped"
        return "modelled"

    def window(self, info: dict[str, Any], no: int, event: str = "token_count") -> None:
        """Count the window and limit the ``event`` (a token_count's ``info``; a
        ``task_started``: ``started_window``) at line ``no`` records; a value that is no
        positive whole number is noted, with the event (null: not recorded, nothing said)."""
        value = info.get("model_context_window")
        if not _count_positive(self.windows, value) and value is not None:
            self._unread("model_context_window", no, value, event)
        if "auto_compact_token_limit" in info:  # (0.14x+ only)
            value = info["auto_compact_token_limit"]
            if not _count_positive(self.limits, value) and value is not None:
                self._unread("auto_compact_token_limit", no, value, event)

    def started_window(self, info: dict[str, Any], no: int) -> None:
        """``window`` of a ``task_started`` event (it carries ``model_context_window`` too),
        the values it counted counted as the event's (``started``): a token_count's path does
        no more than it did."""
        before = self.windows.total(), self.limits.total()
        self.window(info, no, "task_started")
        self.started["model_context_window"] += self.windows.total() - before[0]
        self.started["auto_compact_token_limit"] += self.limits.total() - before[1]

    def _unread(self, name: str, no: int, value: Any, event: str) -> None:
        if name not in self.unread:  # (the first value: its line and what it held are said)
            self.unread[name] = ({}, no, repr(value)[:40] if value.__class__ in (int, float)
                                 else held(value))
        by_event = self.unread[name][0]
        by_event[event] = by_event.get(event, 0) + 1

    def take_pending(self) -> dict[str, int | None] | None:
        """Usage recorded before the request now starting (usage-first files); cleared."""
        usage, self.pending = self.pending, None
        return usage

    def report_stray(self) -> None:
        if self.stray:
            self.issues.append(Issue(self.path, self.stray, NO_RUN))
            self.stray = 0

    def finish(self) -> tuple[int | None, int | None]:
        """Report what is left unattached; the run's window and limit (most frequent value)."""
        self.report_stray()
        if self.pending is not None:
            self.issues.append(Issue(self.path, self.pending_line, NO_RUN))
        for name, (by_event, line, shown) in self.unread.items():
            times = sum(by_event.values())
            each = "" if len(by_event) < 2 else ": " + ", ".join(
                f"{e} {n:,}" for e, n in by_event.items())
            self.issues.append(Issue(self.path, line, f"{'/'.join(by_event)} {name} is {shown}, "
                                     f"not a positive token count ({times:,} time(s) in the "
                                     f"file{each}): not used (the run's is what the others "
                                     "record, else unknown)"))
        for name, counts in (("model_context_window", self.windows),
                             ("auto_compact_token_limit", self.limits)):
            if len(counts) > 1:
                from_started = self.started[name]
                events = "/".join(e for e, n in (("token_count", counts.total() - from_started),
                                                 ("task_started", from_started)) if n)
                self.issues.append(Issue(self.path, 0, f"{events} {name} takes "
                                         f"{len(counts)} values ("
                                         + ", ".join(f"{v:,} x{n}" for v, n in counts.most_common())
                                         + "): the run records the most frequent"))
        return (self.windows.most_common(1)[0][0] if self.windows else None,
                self.limits.most_common(1)[0][0] if self.limits else None)


def _count_positive(counts: Counter[int], value: Any) -> bool:
    """Count ``value`` in ``counts`` when it is a positive whole number (``json_int``); whether
    it was one."""
    n = value if value.__class__ is int else json_int(value)  # (nearly always an int or None)
    if n is not None and n > 0:
        counts[n] += 1
        return True
    return False
