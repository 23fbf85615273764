"""What counting a file's tokens says of it: the strings repaired (not valid Unicode, stored
with U+FFFD; one issue a file, its count kept as a number over the file's runs) and the texts
counted in parts (their tokens estimated and flagged).  ``replay.ingest.run_tables`` counts and
calls these; the issue texts are made here only.

Not here: counting (``replay.ingest.tokens``, ``replay.ingest.token_parts``).
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.ingest import token_parts
from replay.ingest.parsers.source import Issue

REPAIRED = (" string(s) not valid Unicode (a lone surrogate: a JSON escape like \\udc80 "
            "decodes to one) stored with U+FFFD in its place: names or ids so repaired may no "
            "longer be told apart")
"""How an issue says a file's repaired strings (after their number)."""


@dataclass(slots=True)
class RepairedStrings:
    """A file's strings repaired so far (``REPAIRED``), over its ``tokenize`` calls, and where
    the one issue saying them is in its issues: the figure kept as a number, the issue's text
    made from it (never read back out of it)."""

    n_strings: int = 0
    at: int = -1
    """The issue's index in the file's issues (-1: not said yet)."""


def said_repaired(issues: list[Issue], path: str, n: int, so_far: RepairedStrings) -> None:
    """Say ``n`` more strings of the file at ``path`` repaired (``REPAIRED``): one issue a file,
    its count summed over the file's runs (``so_far``, kept by a caller that tokenizes a file a
    run at a time), where it was first said."""
    so_far.n_strings += n
    issue = Issue(path, 0, f"{so_far.n_strings:,}{REPAIRED}")
    if 0 <= so_far.at < len(issues) and issues[so_far.at].reason.endswith(REPAIRED):
        issues[so_far.at] = issue
    else:
        so_far.at = len(issues)
        issues.append(issue)


def split_issue(path: str, split: dict[int, int], chunked: tuple[str, ...] = ()) -> Issue:
    """What ingest says of the texts it counted in parts cut inside a piece (``split``: index
    → cuts; ``replay.ingest.token_parts.estimated_cuts``; ``chunked``: the encodings counted by
    tiktoken, whose long whitespace runs are counted in chunks too, and any text its regex
    engine panicked on: ``token_parts.PANICKED``)."""
    n = len(split)
    runs = f"an unbroken run of {token_parts.SPLIT_CHARS // 2:,} or more (one word, " \
           "punctuation or whitespace)"
    what = f"longer than {token_parts.SPLIT_CHARS:,} characters with {runs} counted in parts" \
        if not chunked else \
        f"counted in parts (longer than {token_parts.SPLIT_CHARS:,} characters with {runs}, " \
        f"or, under {', '.join(chunked)}, which tiktoken counts, with a run of " \
        f"{token_parts.LONG_WHITESPACE:,} whitespace characters or more, or that its regex " \
        f"engine panicked on: counted in {token_parts.CHUNK_CHARS:,}-character chunks)"
    where = "such a run" if not chunked else "such a run or a chunked text"
    return Issue(path, 0, f"{n:,} text{'' if n == 1 else 's'} {what}, cut "
                          f"{sum(split.values()):,} time(s) inside {where}: "
                          f"{'its' if n == 1 else 'their'} tokens are estimated (a few tokens a "
                          f"cut) and flagged (replay runs: estimated_blocks)")
