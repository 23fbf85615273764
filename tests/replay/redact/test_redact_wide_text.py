"""``replay redact`` of a log written as UTF-16 or UTF-32 (Windows PowerShell's ``>``): read
as its text, as the ingest reads it, and written as UTF-8.  Before, every line was 'not JSON'
and nothing was written."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.redact import redact
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "claude-code" / "tool_heavy.jsonl"


@pytest.mark.parametrize("codec", ["utf-16", "utf-32"])
def test_a_wide_text_log_redacts_as_its_utf8_copy(codec: str, tmp_path: Path) -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    wide, plain = tmp_path / "wide", tmp_path / "plain"
    wide.mkdir()
    plain.mkdir()
    (wide / SAMPLE.name).write_bytes(text.encode(codec))  # (with its byte order mark)
    (plain / SAMPLE.name).write_bytes(text.encode("utf-8"))
    got = redact([wide], tmp_path / "out-wide", salt="s")
    want = redact([plain], tmp_path / "out-plain", salt="s")
    assert got.ok and want.ok, [str(i) for i in (*got.issues, *want.issues)]
    (a,), (b,) = got.files, want.files
    assert a.archived_as == b.archived_as
    written = (tmp_path / "out-wide" / a.archived_as).read_bytes()
    assert written == (tmp_path / "out-plain" / b.archived_as).read_bytes()
    written.decode("utf-8")
