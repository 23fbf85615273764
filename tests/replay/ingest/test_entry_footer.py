"""An entry's footer tables (``entry_file``, their streams ``ipc_stream``): the stream of a table with no rows is written once
a process and given again only for that very table object, never for another table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from replay.ingest import entry_file
from replay.ingest.ipc_stream import ipc_stream
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


def _written_by_a_stream_writer(table: pa.Table, schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions()) as writer:
        writer.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def test_ipc_stream_is_the_stream_writers_bytes() -> None:
    tables = parse_file(FIXTURE, tokenizers=()).tables
    assert tables is not None
    runs, requests = tables.runs, tables.requests
    assert runs.num_rows and requests.num_rows > 1
    cases = [(runs, "runs"), (requests, "requests"),
             (pa.concat_tables([requests, requests.slice(1)]), "requests"),  # two batches
             (requests.slice(1, 1), "requests"),  # one row of a bigger table's buffers
             (pa.Table.from_batches([], schema=SCHEMAS["events"]), "events"),  # no batch
             (SCHEMAS["events"].empty_table(), "events")]
    for table, name in cases:
        stream = ipc_stream(table, SCHEMAS[name])
        assert stream == _written_by_a_stream_writer(table, SCHEMAS[name])
        assert pa.ipc.open_stream(stream).read_all().equals(table)
    assert ipc_stream(runs, SCHEMAS["runs"]) == ipc_stream(
        runs, SCHEMAS["runs"])  # (the schema's message made once, the same bytes again)


def test_ipc_stream_refuses_a_dictionary_field_and_a_table_of_another_schema() -> None:
    schema = pa.schema([pa.field("text", pa.dictionary(pa.int32(), pa.string()))])
    with pytest.raises(ValueError, match="dictionary"):
        ipc_stream(pa.Table.from_batches([], schema=schema), schema)
    with pytest.raises(ValueError, match="another schema"):
        ipc_stream(pa.Table.from_batches([], schema=SCHEMAS["runs"]),
                              SCHEMAS["requests"])


def _written_storing_the_schema(tables: dict[str, pa.Table]) -> bytes:
    """An entry file as the Parquet writer makes it when it stores the Arrow schema itself and
    merges the footer's keys with its own (how entries were written before ``_key_values``)."""
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    messages = tables["messages"]
    with pq.ParquetWriter(sink, SCHEMAS["messages"], **entry_file.PARQUET_OPTIONS) as writer:
        for start, stop in entry_file.row_groups(messages.column("text")):
            writer.write_table(messages.slice(start, stop - start))
        writer.add_key_value_metadata(entry_file._footer(tables))
    data: bytes = sink.getvalue().to_pybytes()
    return data


def test_an_entry_file_is_the_bytes_of_a_writer_storing_the_schema(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``_write`` gives the writer the schema's keys and ``ARROW:schema`` (``_key_values``,
    read once a process) instead of letting it serialize the schema for each file: the entry
    file is the same bytes, of one row group, of several, and of no messages; without the
    keys' order (``_key_values`` None) the writer stores the schema itself, as before."""
    tables = vars_of(parse_file(FIXTURE, tokenizers=()).tables)
    assert tables["messages"].num_rows > 2
    empty = {**tables, "messages": SCHEMAS["messages"].empty_table()}
    assert entry_file._key_values() is not None
    for case in (tables, empty):
        assert entry_file.encode(case) == _written_storing_the_schema(case)
    monkeypatch.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 1)  # about a row group a row
    assert len(entry_file.row_groups(tables["messages"].column("text"))) > 2
    assert entry_file.encode(tables) == _written_storing_the_schema(tables)
    monkeypatch.setattr(entry_file, "_key_values", lambda: None)
    assert entry_file.encode(tables) == _written_storing_the_schema(tables)
