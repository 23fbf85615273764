"""What an ingest did, as every command says it: ``IngestReport`` (files parsed, reused from the
cache, failed, without a conversation; every issue; runs and tokens), and ``report_reused``, an
entry used as stored counted in it as when its log was parsed.

Not here: the ingest itself (``replay.ingest.batch``), saying the report on the terminal
(``replay.cli.inputs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.ingest import store
from replay.ingest.parsers.coverage import unknown_types
from replay.ingest.parsers.source import Issue


@dataclass(slots=True)
class IngestReport:
    """What an ingest did: files parsed, reused from cache, failed, and every issue."""

    parsed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    no_conversation: dict[str, str] = field(default_factory=dict)
    """Files that hold no conversation (not failures), and why."""
    repaired: list[str] = field(default_factory=list)
    """Files whose cached entry failed its checksum (truncated, swapped, edited, or written
    before entries had one) and were parsed again (also in ``parsed`` when that worked)."""
    rebuilt_from_schema: str | None = None
    """The schema version of a store an older ctxreplay wrote into this folder, which this
    ingest rebuilt (every given file parsed again; entries of files not given now dropped:
    ``dropped_older``), None when the store was of this version or new."""
    dropped_older: int = 0
    """Entries of that older store that this ingest did not rebuild (their files were not
    given): no longer in the dataset."""
    issues: list[Issue] = field(default_factory=list)
    n_runs: int = 0
    n_tokens: int = 0
    """Tokens of the files parsed by this ingest (first tokenizer; cached files not counted)."""
    n_tokens_cached: int | None = 0
    """Tokens of the files reused from the cache, as stored (first tokenizer;
    ``store_index.stored_tokens``), None when an entry could not be read for them."""
    not_followed: list[str] = field(default_factory=list)
    """Symlinks to a folder inside an input folder, not walked (``discover``; naming one reads
    it)."""
    compressed: list[str] = field(default_factory=list)
    """Compressed logs inside an input folder (``session.jsonl.gz``), not read (``discover``)."""
    repeated: list[tuple[str, str]] = field(default_factory=list)
    """Paths reached again among the inputs (named twice, or a file named and found in a folder
    named), each with the path it was first reached as: read once (``discover``)."""
    unknown: dict[str, dict[str, int]] = field(default_factory=dict)
    """Files stored (parsed now or reused) holding records of types their parser does not know,
    left out of their runs: source -> {record type: records}, so every command can say so
    (a file of two formats concatenated is read as the first, the second's records unknown)."""

    @property
    def n_reused(self) -> int:
        """Files reused from the cache, not failed (``--strict`` fails a reused file for its
        stored issues: it is counted once, failed)."""
        return len(set(self.cached) - set(self.failed))

    @property
    def tokens(self) -> int | None:
        """Tokens of every file stored, parsed now or reused (first tokenizer), None when a
        reused entry's could not be read."""
        return None if self.n_tokens_cached is None else self.n_tokens + self.n_tokens_cached

    @property
    def ok(self) -> bool:
        """True when no file failed and no issue was reported."""
        return not self.failed and not self.issues


def report_reused(report: IngestReport, entry: store.Entry, shown: str, strict: bool) -> None:
    """An entry used as stored (an ingest's cache, a dataset opened as it is): its runs counted,
    the issues (at ``shown``, its log's path) and unknown records stored with it said as when
    its log was parsed; with ``strict``, a stored issue fails it."""
    report.cached.append(entry.source)
    report.n_runs += entry.n_runs
    if unknown := unknown_types(entry.coverage):
        report.unknown[entry.source] = unknown
    report.issues.extend(Issue(shown, line, reason) for line, reason in entry.issues)
    if strict and entry.issues:
        report.failed.append(entry.source)
