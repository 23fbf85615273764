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
(``replay.ingest.parsers.source.Issue``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

LINE_NOT_READ = "(line not read)"
"""The type under which a JSON Lines file's line that is no record is counted ``unknown`` (not
JSON, not UTF-8, not an object, too long or too deep: ``jsonl.iter_records`` skips it with an
issue that names its line), so that a file's coverage accounts for every line: ``replay runs``
said "13 records: 13 modelled" of a file whose two broken lines ingest had warned of.  Not a
record type the parser does not know (``unknown_types`` leaves it out: its issues say it)."""
FATES = ("modelled", "skipped", "unknown")
"""What a record became: in the run model, deliberately left out, or not understood."""


@dataclass(slots=True)
class Coverage:
    """Per-record-type counts for one file, by fate (see ``FATES``)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    """(record type, fate) -> records (a plain dict, not a ``Counter``: a parser counts every
    record it meets, and a ``Counter``'s item reads and writes cost twice a dict's)."""
    no_conversation: str = ""
    """Set by a parser that returns no run because the file holds no conversation at all
    (only metadata records): why, for the user; the file is then no failed input."""

    def count(self, record_type: str, fate: str, n: int = 1) -> None:
        """``n`` records of this type met ``fate`` (one of ``FATES``), for a parser that decides
        the fate as it goes."""
        counts, key = self.counts, (record_type, fate)
        counts[key] = counts.get(key, 0) + n

    def modelled(self, record_type: str, n: int = 1) -> None:
        """``n`` records of this type became part of the run model."""
        counts, key = self.counts, (record_type, "modelled")
        counts[key] = counts.get(key, 0) + n

    def skipped(self, record_type: str, n: int = 1) -> None:
        """``n`` records of this type were understood and deliberately left out."""
        counts, key = self.counts, (record_type, "skipped")
        counts[key] = counts.get(key, 0) + n

    def unknown(self, record_type: str, n: int = 1) -> None:
        """``n`` records of a type the parser does not know were left out."""
        counts, key = self.counts, (record_type, "unknown")
        counts[key] = counts.get(key, 0) + n

    def recount(self, record_type: str, fate: str, new_type: str, new_fate: str,
                n: int = 1) -> None:
        """``n`` records counted as ``record_type`` / ``fate`` are ``new_type`` / ``new_fate``
        after all (a later record decided what became of them: a rewind), so each record is
        still counted once."""
        counts, old = self.counts, (record_type, fate)
        n = min(n, counts.get(old, 0))
        if old in counts:
            counts[old] -= n
            if not counts[old]:
                del counts[old]
        if n:
            self.count(new_type, new_fate, n)

    def by_type(self) -> dict[str, dict[str, int]]:
        """``{record type: {fate: count}}``, types sorted."""
        out: dict[str, dict[str, int]] = {}
        for (rtype, fate), n in sorted(self.counts.items()):
            out.setdefault(rtype, {})[fate] = n
        return out

    def total(self, fate: str | None = None) -> int:
        """Records counted (of one fate, or all)."""
        return sum(n for (_, f), n in self.counts.items() if fate is None or f == fate)

    @classmethod
    def from_by_type(cls, by_type: dict[str, dict[str, int]]) -> Coverage:
        """The inverse of ``by_type`` (coverage as stored with an entry)."""
        return cls({(t, f): n for t, fates in by_type.items() for f, n in fates.items()})

    def line(self) -> str:
        """One line for the user: records read, by fate, and the types left out
        (e.g. ``412 records: 380 modelled, 30 skipped (progress x25, …), 2 unknown (foo x2)``)."""
        return summary_line(self.by_type())


def unknown_types(by_type: dict[str, dict[str, int]]) -> dict[str, int]:
    """Record type -> records of a type the parser does not know, of a stored
    ``{type: {fate: count}}`` (empty: every record was understood)."""
    return {t: n for t, fates in sorted(by_type.items())
            if (n := fates.get("unknown", 0)) and t != LINE_NOT_READ}


def summary_line(by_type: dict[str, dict[str, int]], *, types_shown: int = 3) -> str:
    """``Coverage.line`` of a stored ``{type: {fate: count}}`` ('' for no coverage recorded)."""
    if not by_type:
        return ""
    parts = []
    for fate in FATES:
        per = sorted(((n, t) for t, f in by_type.items() if (n := f.get(fate, 0))), reverse=True)
        if not per:
            continue
        total = sum(n for n, _ in per)
        if fate == "modelled":
            parts.append(f"{total:,} modelled")
            continue
        if not types_shown:
            parts.append(f"{total:,} {fate}")
            continue
        shown = ", ".join(f"{t} x{n:,}" for n, t in per[:types_shown])
        more = f", +{len(per) - types_shown} types" if len(per) > types_shown else ""
        parts.append(f"{total:,} {fate} ({shown}{more})")
    read = sum(n for f in by_type.values() for n in f.values())
    return f"{read:,} records: " + ", ".join(parts)
