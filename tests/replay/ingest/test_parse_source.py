"""``parse_file.parse_source``'s second parse, made when the first meets ``RecursionError``,
for a file on disk whose parser had let its bytes go (``Source.release_data``): the bytes are
read again from the file, and only if they are the ones first read (``sha256``)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_source
from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.source import Issue, Source


def _first_parse_fails(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Claude Code's parser, whose first call lets the bytes go and then meets
    ``RecursionError`` (as on a value nested too deep for the caller's stack)."""
    real, calls = PARSERS["claude_code"].parse, []

    def parse(src: Source, issues: list[Issue]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            issues.append(Issue(src.path, 3, "from the first parse"))
            src.release_data()
            raise RecursionError("maximum recursion depth exceeded")
        return real(src, issues)

    monkeypatch.setattr(PARSERS["claude_code"], "parse", parse)
    return calls


def _source(path: Path) -> Source:
    data = path.read_bytes()
    return Source(path=str(path), rel=path.name, data=data,
                  sha256=hashlib.sha256(data).hexdigest(), on_disk=True)


def test_the_second_parse_reads_the_file_again(samples: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "short.jsonl"
    shutil.copy(samples / "claude-code" / "short.jsonl", path)
    want = PARSERS["claude_code"].parse(_source(path), [])
    calls = _first_parse_fails(monkeypatch)
    issues: list[Issue] = []
    drafts, src = parse_source("claude_code", _source(path), issues)
    assert len(calls) == 2 and issues == []  # the first parse's issue dropped
    assert [d.run for d in drafts] == [d.run for d in want] and len(want) > 0
    assert src.coverage.by_type()  # the second parse's coverage, not the first's


def test_a_file_changed_on_disk_is_not_read_again(samples: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "short.jsonl"
    shutil.copy(samples / "claude-code" / "short.jsonl", path)
    src = _source(path)
    path.write_bytes(src.data + b"\n")
    calls = _first_parse_fails(monkeypatch)
    with pytest.raises(ValueError, match="changed on disk"):
        parse_source("claude_code", src, [])
    assert len(calls) == 1
