"""Coverage: what became of every record a parser met in one file.

Each parser counts, per record type (``"assistant"``, ``"event_msg/token_count"``,
``"attachment/hook_context"``, …), how many records it *modelled* (turned into
messages, blocks or requests), *skipped* (met, understood, and deliberately not
context, e.g. a title record) or *unknown* (a type it does not know: kept out of
the run and said).  Counts are per type, never one issue per line, so a file of
10,000 unknown records is one line in the coverage report, not 10,000 warnings.

A parser reaches its file's ``Coverage`` as ``src.coverage`` (one per ``Source``);
ingest stores it with the file's entry, and ``replay runs`` / ``replay inspect``
show it.

Not here: the records themselves (the parsers), issues about broken lines
(``replay.parsers.builder.Issue``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

FATES = ("modelled", "skipped", "unknown")
"""What a record became: in the run model, deliberately left out, or not understood."""


@dataclass(slots=True)
class Coverage:
    """Per-record-type counts for one file, by fate (see ``FATES``)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(record type, fate) -> records."""

    def modelled(self, record_type: str, n: int = 1) -> None:
        """``n`` records of this type became part of the run model."""
        self.counts[(record_type, "modelled")] += n

    def skipped(self, record_type: str, n: int = 1) -> None:
        """``n`` records of this type were understood and deliberately left out."""
        self.counts[(record_type, "skipped")] += n

    def unknown(self, record_type: str, n: int = 1) -> None:
        """``n`` records of a type the parser does not know were left out."""
        self.counts[(record_type, "unknown")] += n

    def by_type(self) -> dict[str, dict[str, int]]:
        """``{record type: {fate: count}}``, types sorted."""
        out: dict[str, dict[str, int]] = {}
        for (rtype, fate), n in sorted(self.counts.items()):
            out.setdefault(rtype, {})[fate] = n
        return out

    def total(self, fate: str | None = None) -> int:
        """Records counted (of one fate, or all)."""
        return sum(n for (_, f), n in self.counts.items() if fate is None or f == fate)
