"""One input file as parsers see it, what is wrong in it, and the names derived from it.

``Source`` is the file (its bytes, hash and the paths it is known by), ``Issue`` one
problem found in it (``path:line: reason``; ``said_once``: a file's issues each said once),
``run_id_for`` the stable id of a run read from it and ``stored_source`` the name a file beside
it (a session's parent) is stored under.

Not here: assembling runs (``replay.ingest.parsers.builder``), format quirks.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from replay.ingest.parsers.coverage import Coverage

SNIFF_BYTES = 65536
"""How much of a file format detection sees (``replay.ingest.parsers.head``; a parser that
tells its file's shape as its ``sniff`` did reads as much)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """One input file as parsers see it."""

    path: str
    """Path as given on the command line (for messages)."""
    rel: str
    """Path relative to the ingest root (stored as ``Run.source``)."""
    data: bytes
    sha256: str
    coverage: Coverage = field(default_factory=Coverage)
    """What became of each record type the parser met (filled in by the parser)."""
    on_disk: bool = False
    """``data`` is the file at ``path`` as first read and hashed (``sha256``; a byte order
    mark taken off): a parser may read it again from there (``jsonl.iter_typed``)."""

    def release_data(self) -> None:
        """Let the file's bytes go: a parser that has read every record calls it, so they are
        not held while its runs are built.  ``data`` is then a released ``memoryview``: any use
        of it raises (``ValueError``), never an empty file read silently."""
        gone = memoryview(b"")
        gone.release()
        object.__setattr__(self, "data", gone)  # (frozen: the one field that changes, once)


@dataclass(frozen=True, slots=True)
class Issue:
    """Something wrong in an input file: ``path:line: reason``; line 0 means the whole file."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else f"{self.path}: {self.reason}"


def said_once(issues: tuple[Issue, ...]) -> tuple[Issue, ...]:
    """A file's ``issues`` with each one met more than once (the same line and reason) said once,
    where it was first met, with how many times: several runs of a file may hold the same
    record, and each run that holds it meets its problem (a Claude Code session's abandoned
    branches each repeat the prefix they share: an orphaned tool result there was one issue a
    run, 201 for one record).  ``issues`` itself when none repeats."""
    times = Counter(issues)
    if len(times) == len(issues):
        return issues
    return tuple(issue if n == 1 else Issue(issue.path, issue.line,
                                            f"{issue.reason} (met {n} times in this file)")
                 for issue, n in times.items())


def run_id_for(sha256: str, index: int, source: str) -> str:
    """The stable run id of run ``index`` in the file stored as ``source`` with this sha256:
    content and path both, so identical bytes read at two paths (a copy, a hard link, a
    symlink) are two runs, never merged (``replay.ingest.run_label``)."""
    where = hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{sha256[:16]}-{where}-{index}"


def stored_source(path: Path, rel: str, other: Path) -> str:
    """The source name ``other`` (a file beside ``path``: a session's parent) is stored under
    when ``path`` is stored as ``rel``: its path relative to the same folder given (its name
    alone when it is outside it)."""
    parts = Path(rel).parts
    if not parts or Path(path).parts[-len(parts):] != parts:
        return other.name
    root = Path(path).parents[len(parts) - 1]
    try:
        return other.relative_to(root).as_posix()
    except ValueError:
        return other.name
