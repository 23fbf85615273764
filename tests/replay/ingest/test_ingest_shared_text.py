"""A Claude Code session whose runs repeat a prefix (rewinds: each abandoned branch is a run with
its whole context) holds each shared text once while it is ingested (#24 item 3), and the store
reads back exactly what it read back before: the runs share one string per text
(``claude_code_emit.State.shared``), the messages' text is a dictionary of the distinct texts
(``run_tables.tokenize(shared_text=True)``), and the entry is written plain, a row group of at
most ``entry_file.ROW_GROUP_TEXT_BYTES`` of text at a time."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from replay.ingest import entry_file, run_tables, store
from replay.ingest.batch import ingest
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import claude_code, jsonl_reread
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.run_tables import tokenize

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_code"
N_PREFIX, N_BRANCHES = 6, 3


def _rec(uuid: str, parent: str | None, kind: str, content: Any, mid: str = "") -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=mid, model="claude-x", usage={"input_tokens": 3, "output_tokens": 5})
    return json.dumps({"parentUuid": parent, "sessionId": "s", "type": kind, "uuid": uuid,
                       "message": message, "timestamp": "2026-01-01T00:00:00Z"})


def _branchy(path: Path) -> Path:
    """A prefix of prompts (one text a record: read again from the file when the file is read
    in pieces) and tool calls, then ``N_BRANCHES`` rewinds to its end, then the kept branch."""
    lines, parent = [], None
    for i in range(N_PREFIX):
        lines.append(_rec(f"u{i}", parent, "user", f"prompt {i} " + "x" * 200))
        call = {"type": "tool_use", "id": f"t{i}", "name": "Read",
                "input": {"file_path": f"/src/{i}.py"}}
        lines.append(_rec(f"a{i}", f"u{i}", "assistant", [call], mid=f"m{i}"))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"file {i}"}
        lines.append(_rec(f"r{i}", f"a{i}", "user", [result]))
        parent = f"r{i}"
    for k in range(N_BRANCHES + 1):  # each a prompt and its answer under the prefix's end
        lines.append(_rec(f"b{k}", parent, "user", f"try {k}"))
        lines.append(_rec(f"c{k}", f"b{k}", "assistant", [{"type": "text", "text": f"ok {k}"}],
                          mid=f"n{k}"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _drafts(path: Path) -> list[RunDraft]:
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data,
                 sha256=hashlib.sha256(data).hexdigest(), on_disk=True)
    issues: list[Issue] = []
    drafts = claude_code.parse(src, issues)
    assert issues == []
    return drafts


@pytest.mark.parametrize("pieces", [False, True])
def test_the_runs_of_a_session_share_one_string_per_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces: bool) -> None:
    """Every run of the session holds the prefix's texts — prompts read again from the file and
    calls' arguments written as JSON, both made anew for each run before — as the same
    string objects: the file's texts are held once, however many branches repeat them."""
    if pieces:
        monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    drafts = _drafts(_branchy(tmp_path / "s.jsonl"))
    assert len(drafts) == 1 + N_BRANCHES
    prefix = 3 * N_PREFIX  # rows: each prefix record is one block
    firsts = [d.messages["text"][:prefix] for d in drafts]
    assert all(t == firsts[0] for t in firsts)  # (the same texts, then the same objects)
    for texts in firsts[1:]:
        assert [id(t) for t in texts] == [id(t) for t in firsts[0]]
    kinds = drafts[0].messages["kind"][:prefix]
    assert {"tool_call", "text"} <= set(kinds)  # (both kinds of made text are covered)


def _reference(path: Path) -> Any:
    """The tables of ``path`` as made with every text in one piece, none shared."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_tables, "TEXT_CHUNK_CHARS", 1 << 40)
        return tokenize(_drafts(path), ("o200k_base",))


def _plain(table: pa.Table) -> pa.Table:
    return table.cast(table.schema.set(table.schema.get_field_index("text"),
                                       pa.field("text", pa.string(), nullable=False)))


@pytest.fixture
def small_files_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts shared in files of any size, however little text (these are small), counted a
    few hundred characters at a time."""
    monkeypatch.setattr(run_tables, "SHARED_MIN_CHARS", 0)
    monkeypatch.setattr(run_tables, "TEXT_CHUNK_CHARS", 500)


@pytest.mark.parametrize("name", ["branchy", "dag_compact_after_rewind.jsonl",
                                  "dag_compact_after_rewind_preserved.jsonl"])
@pytest.mark.usefixtures("small_files_shared")
def test_shared_text_tables_are_the_plain_tables(tmp_path: Path, name: str) -> None:
    """``shared_text`` keeps the text column as a dictionary of the distinct texts (fewer
    values than rows when runs share a prefix) and changes nothing else: every table equals
    the plain one once the text is cast back to strings."""
    path = _branchy(tmp_path / "s.jsonl") if name == "branchy" else FIXTURES / name
    plain = _reference(path)
    shared = tokenize(_drafts(path), ("o200k_base",), consume=True, shared_text=True)
    text = shared.messages.column("text").combine_chunks()
    assert isinstance(text, pa.DictionaryArray)
    assert len(text.dictionary) < len(text)
    assert _plain(shared.messages).equals(plain.messages)
    for table in ("runs", "requests", "events"):
        assert getattr(shared, table).equals(getattr(plain, table))


@pytest.mark.usefixtures("small_files_shared")
def test_an_entry_is_written_a_row_group_at_a_time(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``ROW_GROUP_TEXT_BYTES`` of text an entry's rows are cut into row groups of at most
    that much text (a longer text: a row group of its own), each made plain only when written;
    the file reads back the tables as they were, and an entry of less text is the one row
    group it was, byte for byte."""
    path = _branchy(tmp_path / "s.jsonl")
    plain = _reference(path)
    tables = {name: getattr(plain, name) for name in store.TABLES}
    whole = entry_file.encode(tables)
    assert pq.ParquetFile(io.BytesIO(whole)).metadata.num_row_groups == 1
    limit = 300
    monkeypatch.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", limit)
    for source in (plain, tokenize(_drafts(path), ("o200k_base",), shared_text=True)):
        out = io.BytesIO()
        digest = entry_file.write({name: getattr(source, name) for name in store.TABLES}, out)
        data = out.getvalue()
        assert digest == hashlib.sha256(data).hexdigest()
        file = pq.ParquetFile(io.BytesIO(data))
        sizes = [sum(len(t.encode()) for t in file.read_row_group(g).column("text").to_pylist())
                 for g in range(file.metadata.num_row_groups)]
        assert len(sizes) > 2 and all(s <= limit or file.read_row_group(g).num_rows == 1
                                      for g, s in enumerate(sizes))
        back = entry_file.decode(data, "test")
        for name in store.TABLES:
            assert back[name].equals(getattr(plain, name)), name


@pytest.mark.usefixtures("small_files_shared")
def test_ingested_branchy_store_reads_back_the_plain_tables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store an ingest writes (shared texts, several row groups) reads back the tables
    ``tokenize`` makes without sharing, file read in pieces or whole."""
    path = _branchy(tmp_path / "logs" / "s.jsonl")
    plain = _reference(path)
    monkeypatch.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 300)
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    report = ingest([path.parent], tmp_path / "ds", jobs=1)
    assert report.ok and report.n_runs == 1 + N_BRANCHES
    back = store.read_store(tmp_path / "ds")
    for name in store.TABLES:
        assert getattr(back, name).combine_chunks().equals(getattr(plain, name)), name


def test_texts_counted_a_chunk_at_a_time_give_the_same_tables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's texts counted, sized, checked for redaction markers, repaired (a lone
    surrogate) and converted a few dozen characters at a time (``TEXT_CHUNK_CHARS``) make the
    tables made in one piece, the blocks sized from markers included."""
    texts = ["plain " * 20, "before [REDACTED len=120] after", "é ü " * 15,
             "[REDACTED_CTXREPLAY chars=50 bytes=52 lines=3 o200k_base=14]", "bad \ud800 text",
             "[26 chars redacted]", "x" * 90]
    lines = [_rec(f"u{i}", f"u{i - 1}" if i else None, "user", t) for i, t in enumerate(texts)]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    whole = parse_file(path, tmp_path).tables
    monkeypatch.setattr(run_tables, "TEXT_CHUNK_CHARS", 64)
    chunked = parse_file(path, tmp_path).tables
    assert whole is not None and chunked is not None
    assert pc.sum(whole.messages["tokens_estimated"]).as_py() == 2  # (the two estimated)
    assert "\ufffd" in whole.messages["text"][4].as_py()
    for name in store.TABLES:
        assert getattr(chunked, name).equals(getattr(whole, name)), name
