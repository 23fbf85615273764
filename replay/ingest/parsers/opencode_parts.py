"""OpenCode export: which messages and parts are read, and in what order.

A message (``info.id``) or a part (``id``) whose id an earlier one of the file has is a repeat
(an export concatenated with itself, a part listed twice): the first copy is kept, the repeats
are counted in the coverage (``message/<role> (repeated id)`` with its parts as ``part (of a
repeated message)``, ``part/<type> (repeated id)``) and said in one issue each.

Parts are read in id order (OpenCode's part ids ascend with time; a real export lists them out
of order).  A message with a part without an id has no known order: a message of one step (at
most one ``step-start`` and one ``step-finish``) is read as the step it is, ``step-start``, its
other parts in the order of their start times (``time.start``, a tool's ``state.time.start``;
file order when one has none), ``step-finish`` (in file order a real export's 14 steps read as 32
requests, 18 with no usage); one of several steps in file order.  Both are said in one issue.

Not here: what a part means (``replay.ingest.parsers.opencode``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.source import Issue, Source

_OUT_OF_ORDER = "message/parts out of id order (read in id order)"
SKIPPED_PARTS = ("agent", "snapshot", "patch", "retry")
"""Parts understood and left out of the context (no start time needed to order them)."""
_NO_CONTENT = ("step-start", "step-finish", *SKIPPED_PARTS)


@dataclass(slots=True)
class PartOrder:
    """The ids met so far in one export, and the messages read in a guessed order."""

    messages: set[str] = field(default_factory=set)
    parts: set[str] = field(default_factory=set)
    repeated_messages: list[int] = field(default_factory=list)
    """Index in ``messages[]`` of each repeated message."""
    repeated_parts: list[int] = field(default_factory=list)
    """Index in ``messages[]`` of the message of each repeated part."""
    one_step: list[int] = field(default_factory=list)
    """Index of each message of one step with parts without an id (read as that step)."""
    in_file_order: list[int] = field(default_factory=list)
    """Index of each message of several steps with parts without an id (read in file order)."""

    def repeated(self, i: int, message: Any, cov: Coverage) -> bool:
        """Whether message ``i`` repeats an earlier message's id (then counted, skipped)."""
        if not isinstance(message, dict):
            return False
        info = message.get("info")
        mid = info.get("id") if isinstance(info, dict) else None
        if not isinstance(mid, str) or not mid:
            return False
        if mid not in self.messages:
            self.messages.add(mid)
            return False
        role = info.get("role") if isinstance(info, dict) else None
        cov.skipped(f"message/{role if isinstance(role, str) else '?'} (repeated id)")
        parts = message.get("parts")
        if isinstance(parts, list) and parts:
            cov.skipped("part (of a repeated message)", len(parts))
        self.repeated_messages.append(i)
        return True

    def ordered(self, i: int, parts: list[Any], cov: Coverage) -> list[Any]:
        """Message ``i``'s parts, repeats left out, in the order they were written."""
        kept: list[Any] = []
        ids: list[str] = []
        missing = False
        for p in parts:
            pid = p.get("id") if isinstance(p, dict) else None
            missing |= isinstance(p, dict) and not (isinstance(pid, str) and pid)
            if isinstance(pid, str) and pid:
                if pid in self.parts:
                    kind = p.get("type")
                    cov.skipped(f"part/{kind if isinstance(kind, str) else '?'} (repeated id)")
                    self.repeated_parts.append(i)
                    continue
                self.parts.add(pid)
                if pid.startswith("prt_"):
                    ids.append(pid)
            kept.append(p)
        if not missing:
            if len(ids) == len(kept) and ids != sorted(ids):
                # part ids ascend with time; a real 1.1.34 export lists them out of that order
                cov.modelled(_OUT_OF_ORDER)
                kept = sorted(kept, key=lambda x: x["id"])
            return kept
        if len(kept) < 2:  # (one part: no order to know)
            return kept
        starts = [p for p in kept if _type(p) == "step-start"]
        finishes = [p for p in kept if _type(p) == "step-finish"]
        if len(starts) > 1 or len(finishes) > 1:
            self.in_file_order.append(i)
            return kept
        self.one_step.append(i)
        content = [p for p in kept if _type(p) not in _NO_CONTENT]
        times = [_started(p) for p in content]
        if all(t is not None for t in times):  # (each part's own start time: their order)
            content = [p for _, _, p in sorted(zip(times, range(len(content)), content))]
        return starts + content + [p for p in kept if _type(p) in SKIPPED_PARTS] + finishes

    def report(self, src: Source, issues: list[Issue], line: Callable[[int], int]) -> None:
        """One issue for each kind of problem met (``line``: a message's line in the file)."""
        if self.repeated_messages:
            i = self.repeated_messages[0]
            issues.append(Issue(src.path, line(i), f"{len(self.repeated_messages)} message(s) "
                                f"repeat the id of an earlier message (first messages[{i}]; the "
                                "first copy is kept, the repeats skipped)"))
        if self.repeated_parts:
            i = self.repeated_parts[0]
            issues.append(Issue(src.path, line(i), f"{len(self.repeated_parts)} part(s) repeat "
                                f"the id of an earlier part (first in messages[{i}]; the first "
                                "copy is kept, the repeats skipped)"))
        guessed = sorted(self.one_step + self.in_file_order)
        if guessed:
            i = guessed[0]
            how = []
            if self.one_step:
                how.append(f"{len(self.one_step)} of one step read as step-start, its parts "
                           "in the order of their start times (else of the file), step-finish")
            if self.in_file_order:
                how.append(f"{len(self.in_file_order)} of several steps read in file order")
            issues.append(Issue(src.path, line(i), f"{len(guessed)} message(s) have parts "
                                f"without an id, so their order is not known (first "
                                f"messages[{i}]): {'; '.join(how)}"))


def _type(p: Any) -> Any:
    return p.get("type") if isinstance(p, dict) else None


def _started(p: Any) -> float | None:
    """When part ``p`` started (``time.start``, a tool's ``state.time.start``), or None."""
    if not isinstance(p, dict):
        return None
    state = p.get("state")
    time = p.get("time") if isinstance(p.get("time"), dict) else \
        state.get("time") if isinstance(state, dict) else None
    start = time.get("start") if isinstance(time, dict) else None
    if not isinstance(start, (int, float)) or isinstance(start, bool) or math.isnan(start):
        return None
    return float(start)
