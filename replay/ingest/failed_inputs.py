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

Not here: the manifest (``replay.ingest.store``), saying them (``replay.cli.inputs``).
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
