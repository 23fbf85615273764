"""What a store's entries tell a reader who never saw their ingest: the problems their logs had
when they were parsed (``problems_said``), and the stored files that hold the same bytes as
another (``same_bytes``).

Not here: the entries and the manifest (``replay.ingest.store``), the inputs whose last ingest
failed (``replay.ingest.failed_inputs``), saying them on the terminal (``replay.cli.inputs``).
"""

from __future__ import annotations

from collections.abc import Iterable

from replay.ingest.parsers.coverage import unknown_types
from replay.ingest.store import Entry


def problems_said(entries: Iterable[Entry]) -> str | None:
    """One sentence on the problems the entries' logs had when they were parsed (their stored
    issues: records skipped, usage dropped or unknown, results without a call; and records of a
    type the parser does not know), by file, the most first; None when there was none.  For a
    reader of the results who never saw the ingest's warnings (a report)."""
    per = sorted(((len(e.issues), sum(unknown_types(e.coverage).values()), e.source)
                  for e in entries), key=lambda x: (-x[0] - x[1], x[2]))
    per = [p for p in per if p[0] or p[1]]
    if not per:
        return None
    n_issues, n_unknown = sum(p[0] for p in per), sum(p[1] for p in per)
    shown = "; ".join(f"{src}: {i:,} issue(s), {u:,} record(s) of an unknown type"
                      for i, u, src in per[:3]) + ("; …" if len(per) > 3 else "")
    return (f"{n_issues:,} issue(s) and {n_unknown:,} record(s) of a type the parser does not "
            f"know in {len(per)} log file(s) when they were parsed ({shown}); `replay ingest` "
            "of the logs lists each")


def same_bytes(entries: Iterable[Entry]) -> list[list[str]]:
    """The stored files that hold the same bytes as another (a copy of a session in two
    folders, a backup beside it), as groups of sources (each sorted; the groups by their first):
    each file is a run of its own (``replay.ingest.discover``), so every total counts such a
    run once per copy, which every command says (``replay.cli.inputs_said.same_bytes_note``)."""
    by_sha: dict[str, list[str]] = {}
    for e in entries:
        if e.sha256:
            by_sha.setdefault(e.sha256, []).append(e.source)
    return sorted(sorted(group) for group in by_sha.values() if len(group) > 1)
