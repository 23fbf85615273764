"""The input files whose last ingest failed, as the store's manifest records them.

A file that fails at ingest gets no entry (or keeps the entry of its version ingested before:
``replay.ingest.batch``), so a dataset opened as it is said nothing of it afterwards: its
totals lacked the file without a word.  The manifest keeps ``failed``, each such file's
source (as its entry would be named) and why (``failed_reason``), written only when there is
one, so the store of inputs that all ingest is what it was byte for byte.  Every ingest updates
it for the files it is given: one that fails is recorded, one read (parsed, reused from the
cache, or found to hold no conversation) is forgotten; files not given keep their record as
they keep their entries.  An ingest killed outright loses its failures (the journal keeps
entries only): the next ingest of those files records them again.

``failed_said`` is the sentence that says them (a command's warning, a report's overview).

Not here: the manifest (``replay.ingest.store``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replay.ingest.parsers.source import Issue

MAX_REASON_CHARS = 300
"""The longest reason recorded (a parser's message can quote a long record)."""


def failed_reason(issues: Sequence[Issue], strict: bool) -> str:
    """Why a file failed, as recorded: its first issue (``line N: reason``, or the reason of
    the whole file) and how many more it had; under ``strict`` (a file with any issue is not
    stored) said so."""
    if issues:
        first = issues[0]
        why = (f"line {first.line}: " if first.line else "") + first.reason
    else:
        why = "no reason given"
    if len(why) > MAX_REASON_CHARS:
        why = why[:MAX_REASON_CHARS - 1] + "…"
    more = f" (and {len(issues) - 1} more issue{'' if len(issues) == 2 else 's'})" \
        if len(issues) > 1 else ""
    return ("under --strict, " if strict else "") + why + more


def checked_failed(value: Any) -> dict[str, str]:
    """A manifest's ``failed``, checked: ``{source: reason}`` of non-empty text.

    Raises:
        TypeError: it is not (``store.read_manifest`` calls the manifest corrupt).
    """
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()):
        raise TypeError("failed is not {source: reason}")
    return value


FAILED_SHOWN = 3
"""Files that failed at ingest ``failed_said`` names at most, with why; the rest are counted."""


def failed_said(failed: dict[str, str], stored: set[str]) -> str | None:
    """One sentence counting the input files whose last ingest into a dataset ``failed``, the
    first few named with why, and those of them the dataset holds as ingested before
    (``stored``: the sources it has an entry for); None when there is none.  Every command
    that opens the dataset as it is warns of it (``replay.cli.inputs.stored_problems``,
    ``replay runs``), and a report says it in its overview; the names and reasons are the
    file's text, escaped where printed."""
    if not failed:
        return None
    items = sorted(failed.items())
    shown = "; ".join(f"{src}: {why}" for src, why in items[:FAILED_SHOWN])
    more = f"; and {len(items) - FAILED_SHOWN} more" if len(items) > FAILED_SHOWN else ""
    n, kept = len(items), sorted(set(failed) & stored)
    held = (f" (of {', '.join(kept[:FAILED_SHOWN])}{', …' if len(kept) > FAILED_SHOWN else ''} "
            f"it holds the version ingested before)") if kept else ""
    return (f"{n} input file{'' if n == 1 else 's'} failed at ingest ({shown}{more}): the "
            f"dataset lacks {'its' if n == 1 else 'their'} runs{held}; `replay ingest` of the "
            f"log{'' if n == 1 else 's'} once fixed adds them")
