"""``schema_tables``: a small messages table's string columns made arrays together
(``arrow_columns.string_columns``) are the table, and the entry file, made a column at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.ingest import entry_file, schema_tables
from replay.ingest.parse_file import parse_file

FIXTURES = Path(__file__).parents[2] / "fixtures"
FILES = [FIXTURES / "claude_code" / "agent-a7be2f0.jsonl",
         FIXTURES / "claude_code" / "dag_compact_after_rewind.jsonl",
         *sorted((FIXTURES / "codex").glob("*.jsonl"))[:3]]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_joined_string_columns_make_the_same_table_and_entry(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = parse_file(path, tokenizers=("o200k_base",)).tables
    most = schema_tables.JOINED_MAX_ROWS
    monkeypatch.setattr(schema_tables, "JOINED_MAX_ROWS", 0)  # each column alone, as before
    alone = parse_file(path, tokenizers=("o200k_base",)).tables
    assert joined is not None and alone is not None
    rows = joined.messages.num_rows
    assert 2 <= rows <= most  # (joined: its arrays are slices of one)
    assert {joined.messages.column(i).chunk(0).offset for i in schema_tables.string_fields(
        "messages")} != {0}
    for name in ("runs", "messages", "requests", "events"):
        assert getattr(joined, name).equals(getattr(alone, name), check_metadata=True), name
    tables = [{name: getattr(t, name) for name in ("runs", "messages", "requests", "events")}
              for t in (joined, alone)]
    assert entry_file.encode(tables[0]) == entry_file.encode(tables[1])
