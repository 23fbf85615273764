"""The run model's schema: dataclasses and Parquet columns agree, rows round-trip, versions pin.

Also: text that is not valid Unicode (lone surrogates, which ``json.loads`` makes from escapes
such as ``"\\ud800"``) never reaches Arrow from ingest.
"""

from __future__ import annotations

import dataclasses
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.errors import StoreError
from replay.ingest import schema, schema_tables, store
from replay.ingest.batch import ingest
from replay.ingest.parse_file import parse_file
from replay.ingest.schema import MESSAGES, REQUESTS, RUNS, SCHEMA_VERSION, Message, Request, Run
from tests.replay.stamp import forge, restamp

TABLES = {"runs": (Run, RUNS), "messages": (Message, MESSAGES), "requests": (Request, REQUESTS)}
INT64 = st.integers(-(2**63), 2**63 - 1)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_dataclass_fields_are_the_parquet_columns(table: str, tmp_path: Path) -> None:
    cls, arrow = TABLES[table]
    names = [f.name for f in dataclasses.fields(cls)]
    assert arrow.names == names
    assert schema.SCHEMAS[table] is arrow and schema.MODELS[table] is cls
    # and what is written to Parquet reads back with exactly these columns, types and version
    path = tmp_path / f"{table}.parquet"
    pq.write_table(arrow.empty_table(), path)
    back = pq.read_schema(path)
    assert back.names == names
    assert back.equals(arrow, check_metadata=False)
    assert back.metadata[b"schema_version"] == SCHEMA_VERSION.encode()
    assert back.metadata[b"table"] == cls.__name__.encode()


@pytest.mark.parametrize("table", sorted(TABLES))
def test_nullable_exactly_where_the_dataclass_allows_none(table: str) -> None:
    cls, arrow = TABLES[table]
    for f in dataclasses.fields(cls):
        assert arrow.field(f.name).nullable == ("None" in str(f.type)), f.name


def _value(ftype: str) -> st.SearchStrategy[Any]:
    base = ftype.replace(" | None", "")
    strategy: st.SearchStrategy[Any] = {"str": st.text(), "int": INT64, "bool": st.booleans(),
                                        "float": st.floats(allow_nan=False)}[base]
    return st.none() | strategy if "None" in ftype else strategy


def _rows(cls: type) -> st.SearchStrategy[list[Any]]:
    fields = {f.name: _value(str(f.type)) for f in dataclasses.fields(cls)}
    return st.lists(st.builds(cls, **fields), max_size=5)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_round_trip_through_arrow_and_parquet(table: str) -> None:
    cls, _ = TABLES[table]

    @given(_rows(cls))
    def check(rows: list[Any]) -> None:
        tbl = schema.to_table(rows, table)
        assert tbl.schema.equals(schema.SCHEMAS[table], check_metadata=True)
        assert schema.from_table(tbl, table) == rows
        buf = io.BytesIO()
        pq.write_table(tbl, buf, compression="zstd")
        assert schema.from_table(pq.read_table(io.BytesIO(buf.getvalue())), table) == rows

    check()


def test_empty_round_trip() -> None:
    for table in TABLES:
        assert schema.from_table(schema.to_table([], table), table) == []


def _claude_line(content: str, i: int = 0) -> dict[str, Any]:
    return {"parentUuid": None if i == 0 else f"u{i - 1}", "isSidechain": False,
            "sessionId": "s", "type": "user", "uuid": f"u{i}",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": content}}


_UNICODE_TEXT = st.lists(st.sampled_from(["a", " ", "\n", "é", "日本", "😀", "\ud83d", "\ude00",
                                            "\ud800", "REDACTED", "x" * 40]),
                         max_size=12).map("".join)


@given(st.lists(_UNICODE_TEXT, min_size=1, max_size=6))
def test_texts_are_stored_and_counted_repaired_whatever_is_done_first(texts: list[str]) -> None:
    """Tokens are counted before the text column is built (the encoder leaves each text's
    UTF-8 in the string, which the column then copies): a text that is not valid Unicode
    (lone surrogates, or a pair given as two escapes) is stored repaired and counted as
    repaired, its sizes those of the repaired text."""
    from replay.ingest.parsers.builder import RunBuilder
    from replay.ingest.parsers.source import Source
    from replay.ingest.run_tables import tokenize
    from replay.ingest.tokens import count_tokens

    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="test", issues=[])
    b.message("user")
    for text in texts:
        b.text(text)
    messages = tokenize([b.build()], ("o200k_base",)).messages
    repaired = [t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in texts]
    assert messages["text"].to_pylist() == repaired
    assert messages["tokens_o200k"].to_pylist() == count_tokens(repaired)
    assert messages["n_chars"].to_pylist() == [len(t) for t in repaired]
    assert messages["n_bytes"].to_pylist() == [len(t.encode()) for t in repaired]


def test_lone_surrogate_escapes_ingest_instead_of_crashing(tmp_path: Path) -> None:
    """``json.loads('"\\ud800"')`` is a str Arrow cannot encode; ingest stores U+FFFD instead and
    counts it as tiktoken would (tiktoken makes the same repair before encoding)."""
    assert json.loads('"\\ud800"') == "\ud800"  # the premise
    rec = _claude_line("start \ud800 middle \udfff end")
    line = json.dumps(rec)  # ensure_ascii: the surrogates are written as \\ud800 escapes
    assert "\\ud800" in line
    assistant = {"parentUuid": "u0", "isSidechain": False, "sessionId": "s", "type": "assistant",
                 "uuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
                 "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                             "content": [{"type": "text", "text": "ok \ud83d"}],
                             "usage": {"input_tokens": 5, "output_tokens": 1,
                                       "cache_read_input_tokens": 0,
                                       "cache_creation_input_tokens": 0}}}
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n" + json.dumps(assistant) + "\n")

    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    texts = parsed.tables.messages["text"].to_pylist()
    assert texts[0] == "start \ufffd middle \ufffd end"
    assert texts[1] == "ok \ufffd"
    from replay.ingest.tokens import encoding

    enc = encoding("o200k_base")
    counts = parsed.tables.messages["tokens_o200k"].to_pylist()
    assert counts == [len(enc.encode_ordinary("start \ud800 middle \udfff end")),
                      len(enc.encode_ordinary("ok \ud83d"))]
    assert parsed.tables.messages["n_bytes"].to_pylist() == [len(t.encode()) for t in texts]

    report = ingest([path], tmp_path / "store", jobs=1)
    assert report.parsed == ["s.jsonl"] and report.failed == []
    stored = store.read_store(tmp_path / "store").messages["text"].to_pylist()
    assert stored == texts


def test_lone_surrogate_in_a_one_row_tables_value_is_stored_repaired(tmp_path: Path) -> None:
    """A one-row table's value (a one-run file's ``runs``, its one request) is converted in
    fewer steps (``arrow_columns.one_value``); a string there that is not valid Unicode is
    stored with U+FFFD all the same."""
    rec = _claude_line("hello")
    assistant = {"parentUuid": "u0", "isSidechain": False, "sessionId": "s", "type": "assistant",
                 "uuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
                 "message": {"id": "m1", "role": "assistant", "model": "claude-\ud800x",
                             "content": [{"type": "text", "text": "ok"}],
                             "usage": {"input_tokens": 5, "output_tokens": 1}}}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(assistant) + "\n")
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    assert parsed.tables.runs.num_rows == parsed.tables.requests.num_rows == 1
    assert parsed.tables.runs["model"].to_pylist() == ["claude-\ufffdx"]
    assert parsed.tables.requests["model"].to_pylist() == ["claude-\ufffdx"]


def _store_with_one_entry(tmp_path: Path) -> Path:
    out = tmp_path / "store"
    line = json.dumps(_claude_line("hello"))
    (tmp_path / "a.jsonl").write_text(line + "\n")
    report = ingest([tmp_path / "a.jsonl"], out, jobs=1)
    assert report.parsed == ["a.jsonl"], [str(i) for i in report.issues]
    return out


def test_schema_version_is_in_every_parquet_file(tmp_path: Path) -> None:
    out = _store_with_one_entry(tmp_path)
    (entry,) = store.read_manifest(out).values()
    assert sorted((out / "data").rglob("*")) == [store.entry_file(out, entry.key)]
    meta = pq.read_schema(store.entry_file(out, entry.key)).metadata
    assert meta[b"schema_version"] == SCHEMA_VERSION.encode() and meta[b"table"] == b"Message"
    for table in store.TABLES:  # the three small tables' own schemas, in the file's footer
        schema = getattr(store.read_entry(out, entry.key), table).schema
        assert schema.metadata[b"schema_version"] == SCHEMA_VERSION.encode()
    assert json.loads((out / "manifest.json").read_text())["schema_version"] == SCHEMA_VERSION


def test_store_of_another_version_is_rejected(tmp_path: Path) -> None:
    out = _store_with_one_entry(tmp_path)
    manifest = out / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["schema_version"] = "0"
    manifest.write_text(json.dumps(doc))
    with pytest.raises(StoreError) as err:
        store.read_store(out)
    msg = str(err.value)
    assert "'0'" in msg and repr(SCHEMA_VERSION) in msg and "re-ingest" in msg
    # ingesting into a store of a newer ctxreplay is refused too, and leaves it as it was (an
    # older one is rebuilt: tests/replay/ingest/test_store_older.py)
    doc["schema_version"] = str(int(SCHEMA_VERSION) + 1)
    manifest.write_text(json.dumps(doc))
    with pytest.raises(StoreError):
        ingest([tmp_path / "a.jsonl"], out, jobs=1)
    assert json.loads(manifest.read_text()) == doc


def test_parquet_file_of_another_version_is_rejected(tmp_path: Path) -> None:
    out = _store_with_one_entry(tmp_path)
    path = next((out / "data").rglob("*.parquet"))
    forge(path, "messages", lambda tbl: tbl.replace_schema_metadata(
        {**tbl.schema.metadata, b"schema_version": b"0"}))
    restamp(out)  # past the entry's checksum: the schema version is checked next
    with pytest.raises(StoreError) as err:
        store.read_store(out)
    assert str(path) in str(err.value) and "schema version" in str(err.value)


def test_parquet_file_with_other_columns_is_rejected(tmp_path: Path) -> None:
    out = _store_with_one_entry(tmp_path)
    path = next((out / "data").rglob("*.parquet"))
    forge(path, "requests", lambda tbl: tbl.drop_columns(["model"]).replace_schema_metadata(
        tbl.schema.metadata))
    restamp(out)  # past the entry's checksum: the columns are checked next
    with pytest.raises(StoreError, match="requests table not of schema version"):
        store.read_store(out)


def test_corrupt_manifest_and_missing_store_are_store_errors(tmp_path: Path) -> None:
    out = _store_with_one_entry(tmp_path)
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(StoreError, match="corrupt manifest"):
        store.read_store(out)
    with pytest.raises(StoreError, match="not a ctxreplay dataset"):
        store.read_store(tmp_path / "nowhere")


def test_to_table_rejects_wrong_types() -> None:
    row = Request(run_id="r", request=0, output_msg=1, input_tokens=None, cache_read_tokens=None,
                  cache_write_tokens=None, output_tokens=None, reasoning_tokens=None, model="m",
                  ts="", cache_miss_reason="", applied_edits="")
    bad = dataclasses.replace(row, request="zero")  # type: ignore[arg-type]
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        schema.to_table([bad], "requests")


def test_a_tables_lists_are_let_go_as_each_is_converted() -> None:
    """``schema_table``: each column's list is let go once its array is made, not all held to
    the end beside every array (a big file's message columns: ~20 MB more at the peak of a
    65 MB document of tiny events).  Measured, not spied on (the module may be compiled): the
    most memory the call adds stays well under its table's arrays."""
    n = 50_000
    tracemalloc.start()
    try:
        columns: dict[str, Any] = {"run_id": ["r"] * n, "request": list(range(n)),
                                   "output_msg": list(range(n))}
        for col in ("input_tokens", "cache_read_tokens", "cache_write_tokens",
                    "output_tokens", "reasoning_tokens"):
            columns[col] = [1_000 + i for i in range(n)]
        for col in ("model", "ts", "cache_miss_reason", "applied_edits"):
            columns[col] = [f"{col}-{i:08d}" for i in range(n)]  # (unique: ~3.6 MB a column)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        table = schema_tables.schema_table(columns, "requests")
        added = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert table.num_rows == n and table.column("ts")[7].as_py() == "ts-00000007"
    assert table.nbytes > 6_000_000
    assert added < 0.3 * table.nbytes, (added, table.nbytes)  # (all held: above 1x)
