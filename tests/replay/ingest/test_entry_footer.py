"""An entry's footer tables (``entry_file``): the stream of a table with no rows is written once
a process and given again only for that very table object, never for another table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from replay.ingest import entry_file
from replay.ingest.parse_file import parse_file
from replay.ingest.schema import SCHEMAS

FIXTURE = Path(__file__).parents[2] / "fixtures" / "claude_code" / "agent-a7be2f0.jsonl"


def test_an_empty_tables_stream_is_given_again_only_for_it() -> None:
    tables = parse_file(FIXTURE, tokenizers=()).tables
    assert tables is not None and tables.requests.num_rows and tables.runs.num_rows
    empty = pa.Table.from_batches([], schema=SCHEMAS["requests"])
    for requests in (empty, empty, tables.requests, empty, SCHEMAS["requests"].empty_table()):
        decoded = entry_file.decode(entry_file.encode({**vars_of(tables), "requests": requests}),
                                    "test")
        assert decoded["requests"].equals(requests.replace_schema_metadata(
            SCHEMAS["requests"].metadata))
        assert decoded["runs"].equals(tables.runs)


def vars_of(tables: object) -> dict[str, pa.Table]:
    return {name: getattr(tables, name) for name in ("runs", "messages", "requests", "events")}
