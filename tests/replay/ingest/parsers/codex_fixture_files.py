"""What the Codex fixture tests share: the fixture rollouts (``FIXTURES``, ``FILES``) and one of
them parsed (``parse_fixture``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import codex
from replay.ingest.parsers.source import Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "codex"
FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.jsonl"))


def parse_fixture(rel: str) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]], Source]:
    """A fixture parsed with no issue: its run, messages and requests (``parse_file``), and the
    source ``codex.parse`` read (its coverage)."""
    path = FIXTURES / rel
    data = path.read_bytes()
    src = Source(path=str(path), rel=rel, data=data, sha256=hashlib.sha256(data).hexdigest())
    issues: list[Any] = []
    drafts = codex.parse(src, issues)
    assert issues == []
    parsed = parse_file(path, FIXTURES)
    assert parsed.issues == () and parsed.tables is not None
    return (parsed.tables.runs.to_pylist()[0], parsed.tables.messages.to_pylist(),
            parsed.tables.requests.to_pylist(), src) if drafts else pytest.fail("no run")
