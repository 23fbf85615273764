"""Parsers: one module per recorded log format, each yielding the same run model.

A parser module defines ``NAME``, ``sniff(filename, head) -> bool`` (content-based
detection from the first 64 KiB: read several records, never the first line only) and
``parse(src, issues) -> list[RunDraft]``; it may define ``evidence(filename, head) -> str``,
what of its format the head shows ('' for nothing), which says why a file was taken and,
for a file no parser takes, which formats came closest; and ``iter_runs(src, issues)``, the
same runs made one at a time (each with the session whose runs share text objects, or None),
which ``parse_file`` tokenises and writes one at a time for a big file.  Adding a format means
adding one module and one line to ``PARSERS`` (see "Adding a format" in the README); sniffing
goes in this order, so more specific formats come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from types import ModuleType

from replay.errors import ReplayInputError
from replay.ingest.names import FORMATS
from replay.ingest.parsers import (
    atif,
    chat,
    claude_code,
    codex,
    gemini_cli,
    inspect_ai,
    mini_swe_agent,
    opencode,
    openhands,
    openhands_v1,
    swe_agent,
)

PARSERS_VERSION = "66"
"""Part of every ingest cache key: bump it when a parser's output changes, so stores re-parse."""

PARSERS: dict[str, ModuleType] = {
    m.NAME: m for m in (
        claude_code,
        codex,
        swe_agent,
        mini_swe_agent,
        atif,
        gemini_cli,
        inspect_ai,
        opencode,
        openhands_v1,
        openhands,
        chat,
    )
}
if tuple(PARSERS) != FORMATS:  # the names --help shows, without importing the parsers
    raise ImportError(f"PARSERS {tuple(PARSERS)} differ from replay.ingest.names.FORMATS")


def check_format(fmt: str | None) -> None:
    """Refuse a forced format no parser has (None: detect, always fine).

    Raises:
        ReplayInputError: ``fmt`` is not a ``PARSERS`` name (with the list).
    """
    if fmt is not None and fmt not in PARSERS:
        raise ReplayInputError(f"unknown format {fmt!r}; one of {', '.join(PARSERS)}")


@dataclass(frozen=True, slots=True)
class Detection:
    """Which parser takes a file, and why (or which came closest when none does)."""

    format: str | None
    """The parser's name, or None when no parser recognised the content."""
    reason: str
    """What in the head decided it ('' when the parser says nothing more than yes)."""
    near: tuple[tuple[str, str], ...] = ()
    """For a file no parser takes: (format, what of it the head shows) of every format that
    found something of its own, in registry order."""

    def describe(self) -> str:
        """One line for the user: the format and why, or the closest formats."""
        if self.format is not None:
            return f"{self.format}: {self.reason}" if self.reason else self.format
        if not self.near:
            return "no parser found anything of its format in the first 64 KiB"
        return "closest: " + "; ".join(f"{name} ({why})" for name, why in self.near)


def detect(filename: str, head: bytes) -> Detection:
    """The first parser (in ``PARSERS`` order) that recognises ``head``, with its reason; when
    none does, the formats whose ``evidence`` found something, as ``near``."""
    for name, module in PARSERS.items():
        if module.sniff(filename, head):
            return Detection(name, _evidence(module, filename, head))
    near = tuple((name, why) for name, module in PARSERS.items()
                 if (why := _evidence(module, filename, head)))
    return Detection(None, "", near)


def metadata_only(filename: str, head: bytes) -> Detection | None:
    """The format whose own non-message records are all a head holds (``metadata_only`` of
    the parser: e.g. a Claude Code file of ``summary`` records), for a file no parser
    recognises: that parser reads it to find out whether it holds a conversation at all."""
    for name, module in PARSERS.items():
        hook = getattr(module, "metadata_only", None)
        if hook is not None and (why := hook(filename, head)):
            return Detection(name, f"{why}; no other format matched, so it reads the rest")
    return None


def companion(path: PurePath) -> str:
    """Why a file beside a format's logs is no log itself (a parser's ``companion``: e.g.
    Claude Code's ``agent-*.meta.json``), or ''."""
    for module in PARSERS.values():
        hook = getattr(module, "companion", None)
        if hook is not None and (why := hook(path)):
            return str(why)
    return ""


def detect_format(filename: str, head: bytes) -> str | None:
    """The name of the first parser that recognises this content, or None."""
    for name, module in PARSERS.items():
        if module.sniff(filename, head):
            return name
    return None


def _evidence(module: ModuleType, filename: str, head: bytes) -> str:
    explain = getattr(module, "evidence", None)
    if explain is None:
        return ""
    try:
        return str(explain(filename, head) or "")
    except RecursionError:
        return ""
