"""``replay ingest`` of a file that changes on disk while it is read again in pieces.

A Claude Code file of ``STREAM_MIN_BYTES`` or more is read twice: whole (hashed), then again
from disk a piece at a time (``replay.ingest.parsers.jsonl_reread``). Here the file changes in
between: the command says which file and why, exits 1, stores nothing of it, and still ingests
the other file. (The threshold is lowered so that a real sample is read so.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import BinaryIO

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store
from replay.ingest.parsers import jsonl_reread
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "claude-code" / "short.jsonl"
OTHER = SAMPLES / "claude-code" / "tool_heavy.jsonl"


def test_a_file_changed_between_its_two_reads_fails_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    changing = logs / "changing.jsonl"
    shutil.copyfile(SAMPLE, changing)
    shutil.copyfile(OTHER, logs / "steady.jsonl")
    opened = jsonl_reread.open_input

    def edit_then_open(path: str | Path) -> BinaryIO:
        if Path(path).name == changing.name:  # another process rewrites a byte
            data = bytearray(changing.read_bytes())
            data[len(data) // 2] ^= 0x01
            changing.write_bytes(bytes(data))
        return opened(path)

    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl_reread, "open_input", edit_then_open)
    out = tmp_path / "ds"
    done = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(out), "--jobs", "1",
                                    "--json"])
    assert done.exit_code == 1, done.output
    doc = json.loads(done.stdout)
    text = json.dumps(doc)
    assert "changing.jsonl" in text and "changed while it was read" in text
    sources = {e.source for e in store.read_manifest(out).values()}
    assert not any(s.endswith("changing.jsonl") for s in sources)
    assert any(s.endswith("steady.jsonl") for s in sources)
