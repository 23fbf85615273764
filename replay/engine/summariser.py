"""The stub summariser: a deterministic, past-tense, mechanical record of what happened.

It never calls a model.  From the blocks being summarised it lists the files
edited and read, the commands run, the errors seen and figures found in tool
output ("12 passed", "3 failed"), in the past tense and with no next steps,
then pads with one line per summarised message (newest first) up to the
configured size.  Facts accumulate across summaries, since a later summary
replaces the earlier one.  A failed summariser yields a short mechanical
fallback, marked as such.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import islice, repeat

from replay.engine.prepared import PreparedRun

_FIGURES = re.compile(r"\b\d+ (?:passed|failed|errors?|warnings?|skipped|tests?|files? changed)\b")
CHARS_PER_TOKEN = 4
"""How the stub sizes its text: the configured tokens × this many characters."""


@dataclass(slots=True, init=False)
class Facts:
    """What the summaries so far have recorded.  (Made empty by its own ``__init__``:
    compiled, a dataclass's generated one runs as Python; tests/replay/engine/test_own_inits.py
    checks the defaults agree.)"""

    edited: dict[str, None] = field(default_factory=dict)
    read: dict[str, None] = field(default_factory=dict)
    n_commands: int = 0
    n_errors: int = 0
    figures: list[str] = field(default_factory=list)
    upto: int = 0
    """Blocks before this index are already in the facts."""
    first_msg: int = 0

    def __init__(self) -> None:
        self.edited, self.read, self.figures = {}, {}, []
        self.n_commands = self.n_errors = self.upto = self.first_msg = 0


@dataclass(frozen=True, slots=True)
class _Events:
    """Where a run's facts are, block by block (sorted block lists, paths beside them): built once
    per run, so gathering a range costs its events, not its blocks."""

    edited: list[int]
    edited_paths: list[str]
    read: list[int]
    read_paths: list[str]
    commands: list[int]
    errors: list[int]
    exec_results: list[int]


def _events(run: PreparedRun) -> _Events:
    memo = run.memo("fact_events")
    got = memo.get(None)
    if got is None:
        calls = [b for b, kind in enumerate(run.kind) if kind == "tool_call"]
        results = [b for b, kind in enumerate(run.kind) if kind == "tool_result"]
        ops, paths = run.op, run.path
        edited = [b for b in calls if ops[b] in ("write", "edit") and paths[b]]
        read = [b for b in calls if ops[b] == "read" and paths[b]]
        got = memo[None] = _Events(
            edited=edited, edited_paths=[paths[b] for b in edited],
            read=read, read_paths=[paths[b] for b in read],
            commands=[b for b in calls if ops[b] == "exec"],
            errors=[b for b in results if run.is_error[b]],
            exec_results=[b for b in results if ops[b] == "exec"])
    return got


def gather(facts: Facts, run: PreparedRun, lo: int, hi: int) -> None:
    """Add the facts of blocks ``[max(lo, upto), hi)``."""
    lo = max(lo, facts.upto)
    if lo < hi:
        ev = _events(run)
        for blocks, paths, seen in ((ev.edited, ev.edited_paths, facts.edited),
                                    (ev.read, ev.read_paths, facts.read)):
            seen.update(zip(paths[bisect_left(blocks, lo):bisect_left(blocks, hi)],
                            repeat(None)))
        facts.n_commands += bisect_left(ev.commands, hi) - bisect_left(ev.commands, lo)
        facts.n_errors += bisect_left(ev.errors, hi) - bisect_left(ev.errors, lo)
        memo, texts, figures = run.memo("figures"), run.text, facts.figures
        for b in ev.exec_results[bisect_left(ev.exec_results, lo):
                                 bisect_left(ev.exec_results, hi)]:
            found = memo.get(b)
            if found is None:
                found = memo[b] = _FIGURES.findall(texts[b][-2000:])
            if found:
                figures.extend(found)
                del figures[:-12]
    facts.upto = max(facts.upto, hi)


def summarise(facts: Facts, run: PreparedRun, lo: int, hi: int, size_tokens: int) -> str:
    """The stub summary of everything up to block ``hi`` (new facts from ``[lo, hi)``)."""
    gather(facts, run, lo, hi)
    last_msg = run.msg[hi - 1] if hi > 0 else 0
    lines = [f"Summary of the conversation so far (messages {facts.first_msg}–{last_msg}).",
             _record(facts)]
    budget = size_tokens * CHARS_PER_TOKEN
    used = sum(len(x) + 1 for x in lines)
    b, kinds, memo = hi - 1, run.kind, run.memo("summary_line")
    while used < budget and b >= lo:
        if kinds[b] in ("text", "tool_call", "tool_result"):
            line = memo.get(b)
            if line is None:
                first_line = run.text[b].strip().split("\n", 1)[0][:160]
                line = memo[b] = f"- msg {run.msg[b]} ({run.role[b]}, {kinds[b]}): {first_line}"
            lines.append(line)
            used += len(line) + 1
        b -= 1
    return "\n".join(lines)[:budget]


def fallback(facts: Facts, run: PreparedRun, lo: int, hi: int, size_tokens: int) -> str:
    """The marked mechanical version used when the summariser fails."""
    gather(facts, run, lo, hi)
    text = "[mechanical summary: the summariser failed]\n" + _record(facts)
    return text[: size_tokens * CHARS_PER_TOKEN]


def _record(facts: Facts) -> str:
    parts = []
    if facts.edited:
        parts.append("Files edited: " + ", ".join(_newest(facts.edited, 30)) + ".")
    if facts.read:
        parts.append("Files read: " + ", ".join(_newest(facts.read, 30)) + ".")
    parts.append(f"Commands run: {facts.n_commands}. Tool errors seen: {facts.n_errors}.")
    if facts.figures:
        parts.append("Figures reported: " + "; ".join(facts.figures) + ".")
    return "\n".join(parts)


def _newest(seen: dict[str, None], n: int) -> list[str]:
    """The last ``n`` keys in insertion order (without listing them all)."""
    return list(islice(reversed(seen), n))[::-1]
