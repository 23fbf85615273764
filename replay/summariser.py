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
from dataclasses import dataclass, field

from replay.prepared import PreparedRun

_FIGURES = re.compile(r"\b\d+ (?:passed|failed|errors?|warnings?|skipped|tests?|files? changed)\b")
CHARS_PER_TOKEN = 4
"""How the stub sizes its text: the configured tokens × this many characters."""


@dataclass(slots=True)
class Facts:
    """What the summaries so far have recorded."""

    edited: dict[str, None] = field(default_factory=dict)
    read: dict[str, None] = field(default_factory=dict)
    n_commands: int = 0
    n_errors: int = 0
    figures: list[str] = field(default_factory=list)
    upto: int = 0
    """Blocks before this index are already in the facts."""
    first_msg: int = 0


def gather(facts: Facts, run: PreparedRun, lo: int, hi: int) -> None:
    """Add the facts of blocks ``[max(lo, upto), hi)``."""
    ops, kinds, paths, memo = run.op, run.kind, run.path, run.memo("figures")
    for b in range(max(lo, facts.upto), hi):
        op, kind = ops[b], kinds[b]
        if kind == "tool_call":
            if op in ("write", "edit") and paths[b]:
                facts.edited[paths[b]] = None
            elif op == "read" and paths[b]:
                facts.read[paths[b]] = None
            elif op == "exec":
                facts.n_commands += 1
        elif kind == "tool_result":
            facts.n_errors += run.is_error[b]
            if op == "exec":
                found = memo.get(b)
                if found is None:
                    found = memo[b] = _FIGURES.findall(run.text[b][-2000:])
                if found:
                    facts.figures.extend(found)
                    del facts.figures[:-12]
    facts.upto = max(facts.upto, hi)


def summarise(facts: Facts, run: PreparedRun, lo: int, hi: int, size_tokens: int) -> str:
    """The stub summary of everything up to block ``hi`` (new facts from ``[lo, hi)``)."""
    gather(facts, run, lo, hi)
    last_msg = run.msg[hi - 1] if hi > 0 else 0
    lines = [f"Summary of the conversation so far (messages {facts.first_msg}–{last_msg}).",
             _record(facts)]
    budget = size_tokens * CHARS_PER_TOKEN
    used = sum(len(x) + 1 for x in lines)
    b = hi - 1
    while used < budget and b >= lo:
        if run.kind[b] in ("text", "tool_call", "tool_result"):
            first_line = run.text[b].strip().split("\n", 1)[0][:160]
            line = f"- msg {run.msg[b]} ({run.role[b]}, {run.kind[b]}): {first_line}"
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
        parts.append("Files edited: " + ", ".join(list(facts.edited)[-30:]) + ".")
    if facts.read:
        parts.append("Files read: " + ", ".join(list(facts.read)[-30:]) + ".")
    parts.append(f"Commands run: {facts.n_commands}. Tool errors seen: {facts.n_errors}.")
    if facts.figures:
        parts.append("Figures reported: " + "; ".join(facts.figures) + ".")
    return "\n".join(parts)
