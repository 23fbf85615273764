"""Parsers: one module per recorded log format, each yielding the same run model.

A parser module defines ``NAME``, ``sniff(filename, head) -> bool`` (content-based
detection from the first 64 KiB) and ``parse(src, issues) -> list[RunDraft]``.
Adding a format means adding one module and one line to ``PARSERS``; sniffing
goes in this order, so more specific formats come first.
"""

from __future__ import annotations

from types import ModuleType

from replay.parsers import (
    atif,
    chat,
    claude_code,
    codex,
    mini_swe_agent,
    openhands,
    swe_agent,
)

PARSERS_VERSION = "2"
"""Part of every ingest cache key: bump it when a parser's output changes, so stores re-parse."""

PARSERS: dict[str, ModuleType] = {
    m.NAME: m for m in (
        claude_code,
        codex,
        swe_agent,
        mini_swe_agent,
        atif,
        openhands,
        chat,
    )
}


def detect_format(filename: str, head: bytes) -> str | None:
    """The name of the first parser that recognises this content, or None."""
    for name, module in PARSERS.items():
        if module.sniff(filename, head):
            return name
    return None
