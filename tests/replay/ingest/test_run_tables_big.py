"""``run_tables.tokenize`` of a big run (``BIG_ROWS`` rows or more, its lists consumed): the
parse's freed heap given back and the call ids made a column first change nothing made: the
same tables, entry bytes and repaired strings said as a small run's path makes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from replay.ingest import entry_file, run_tables
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.source import Issue
from replay.ingest.token_issues import REPAIRED

FIXTURES = Path(__file__).parents[2] / "fixtures"
SAMPLES = Path(__file__).resolve().parents[3].parent / "shared" / "logs-sample"
FILES = [SAMPLES / "openhands" / "basic.json", FIXTURES / "claude_code" / "agent-a7be2f0.jsonl",
         *sorted((FIXTURES / "codex").glob("*.jsonl"))[:2]]


def _tables(path: Path) -> tuple[dict[str, pa.Table], tuple[Issue, ...]]:
    parsed = parse_file(path, path.parent, shared_text=True)
    assert parsed.tables is not None
    return ({name: getattr(parsed.tables, name)
             for name in ("runs", "messages", "requests", "events")}, parsed.issues)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_big_runs_columns_are_made_as_a_small_ones(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, said = _tables(path)
    called: list[bool] = []
    monkeypatch.setattr(run_tables, "BIG_ROWS", 1)
    monkeypatch.setattr(run_tables, "release_freed_memory", lambda: called.append(True))
    big, said_big = _tables(path)
    assert called and said_big == said
    for name, table in small.items():
        assert big[name].equals(table, check_metadata=True), name
    assert entry_file.encode(big) == entry_file.encode(small)


def test_a_call_id_not_valid_unicode_is_repaired_and_said_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call id holding a lone surrogate (a JSON escape): stored with U+FFFD and counted in
    the one issue of repaired strings, whether made early (a big run) or with the others."""
    text = (SAMPLES / "openhands" / "basic.json").read_text(encoding="utf-8")
    assert '"tool_call_id": "toolu_' in text
    path = tmp_path / "bad.json"
    path.write_text(text.replace('"tool_call_id": "toolu_', '"tool_call_id": "\\udc80toolu_', 1),
                    encoding="utf-8")
    small, said = _tables(path)
    monkeypatch.setattr(run_tables, "BIG_ROWS", 1)
    big, said_big = _tables(path)
    assert said_big == said
    assert [i.reason.split(" ", 1)[1][:30] for i in said if REPAIRED in i.reason] \
        == ["string(s) not valid Unicode (a"]
    assert big["messages"].equals(small["messages"])
    assert "\ufffdtoolu_" in str(big["messages"].column("call_id").to_pylist())
