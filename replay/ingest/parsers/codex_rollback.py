"""Codex rollbacks: ``event_msg/thread_rolled_back`` (``num_turns``) drops the last turns.

Codex rebuilds a thread from the N-th last user turn start (a user message that is not context
the harness wrote, or an ``agent_message`` item; all turns when N is larger): those messages
and the requests that produced them are left out of the run, and an issue says how many (the
run is the path the model went on with, as for Claude Code rewinds).  The rolled-back turns were
sent and paid for, so they are a run of their own (agent ``abandoned-<k>``, linked to the
session's run): the run as it stood before the rollback, with requests only for the rolled-back
turns (the first ``builder.MAX_BRANCHES`` rollbacks of a rollout; a later one's requests are in
no run, and its issue says so).  A rollback reaching back past a compaction cuts the raw stream, not the replacement
history.

Not here: the walk that meets the event (``replay.ingest.parsers.codex_walk_events``).
"""

from __future__ import annotations

from typing import Any

from replay.ingest.parsers.builder import MAX_BRANCHES, RunBuilder
from replay.ingest.parsers.codex_usage import Pending
from replay.ingest.parsers.counts import json_int
from replay.ingest.parsers.source import Issue

Branch = tuple[RunBuilder, list[Pending]]
"""An abandoned branch: a copy of the run before the rollback, and its requests."""


def roll_back(b: RunBuilder, no: int, num_turns: Any, turns: list[int], runs: list[Pending],
              branches: list[Branch]) -> tuple[list[Pending], list[int]] | None:
    """The run's requests and turn starts after dropping the last ``num_turns`` turns (None:
    nothing rolled back); the abandoned branch is appended to ``branches``, and an issue to
    ``b.issues`` says what was left out (or that ``num_turns`` is no count)."""
    n = json_int(num_turns)
    if n is None or n < 0:
        b.issues.append(Issue(b.source.path, no, f"thread_rolled_back: num_turns "
                              f"{num_turns!r} is not a count (nothing rolled back)"))
        return None
    if n == 0 or not turns:
        return None
    cut = turns[0] if n >= len(turns) else turns[-n]
    live = [r for r in runs if r.msg >= cut and not r.replayed]
    made = bool(live) and len(branches) < MAX_BRANCHES
    if made:  # the rolled-back turns were sent and paid for: a run of their own
        k = len(branches) + 1
        branches.append((b.branch(b.index + k, f"abandoned-{k}"), live))  # (after the
        # session's run: a file may hold several sessions, codex_sessions)
    msgs, _ = b.rewind(cut)
    b.issues.append(Issue(b.source.path, no, f"thread_rolled_back: the last {n} turn(s) "
                          f"rolled back; {msgs} message(s) and {len(live)} request(s) "
                          "left out (the model went on without them)" + (
                              f"; their {len(live)} request(s) are the run "
                              f"abandoned-{len(branches)}" if made else
                              f"; their {len(live)} request(s) are in no run (the rollout has "
                              f"more than {MAX_BRANCHES} rollbacks: {MAX_BRANCHES} are runs)"
                              if live else "")))
    return [r for r in runs if r.msg < cut], [m for m in turns if m < cut]
