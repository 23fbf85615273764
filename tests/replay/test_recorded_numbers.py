"""Recorded token counts that cannot be counts (#13 item 13): kept as unknown, said, file kept."""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest import parse_file
from tests.conftest import SAMPLES

SHORT = SAMPLES / "claude-code" / "tool_heavy.jsonl"


def _rewrite(tmp_path: Path, change) -> Path:
    lines = []
    for line in SHORT.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant" and isinstance(rec["message"].get("usage"), dict):
            change(rec["message"]["usage"])
        lines.append(json.dumps(rec))
    out = tmp_path / "short.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_negative_count_is_unknown_and_said(tmp_path: Path) -> None:
    path = _rewrite(tmp_path, lambda u: u.update(input_tokens=-799_982_304_000))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None  # the rest of the file is kept
    inputs = parsed.tables.requests.column("input_tokens").to_pylist()
    assert inputs and all(v is None for v in inputs)
    assert parsed.tables.runs.column("recorded_input_tokens").to_pylist() == [None]
    assert any("not a token count" in str(i) and "input_tokens" in str(i) for i in parsed.issues)


def test_a_run_total_beyond_int64_keeps_the_file(tmp_path: Path) -> None:
    path = _rewrite(tmp_path, lambda u: u.update(output_tokens=2**62))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    outputs = parsed.tables.requests.column("output_tokens").to_pylist()
    assert len(outputs) > 1 and all(v == 2**62 for v in outputs)  # each request's own count stays
    assert parsed.tables.runs.column("recorded_output_tokens").to_pylist() == [None]
    assert any("64-bit" in str(i) for i in parsed.issues)
