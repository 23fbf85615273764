"""What the OpenHands V1 parser tests share: the fixture conversations (``FIXTURES``, ``REAL``),
a copy of one to change, and an event's file in a conversation folder."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openhands_v1"
REAL = "cd94562403b9487ebdd4018e3f531dfd"  # a real gpt-4o-mini run with every call's usage


def copy_fixture(tmp_path: Path, name: str = REAL) -> Path:
    """A copy of a fixture conversation under ``tmp_path`` (to change without touching it)."""
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    return folder


def event_file(folder: Path, idx: int) -> Path:
    """The file of a conversation's event number ``idx``."""
    return next((folder / "events").glob(f"event-{idx:05d}-*.json"))
