"""Placeholder: being written."""

from __future__ import annotations

from typing import Any

NAME = "swe_agent"


def sniff(filename: str, head: bytes) -> bool:
    return False


def parse(src: Any, issues: list[Any]) -> list[Any]:
    return []
