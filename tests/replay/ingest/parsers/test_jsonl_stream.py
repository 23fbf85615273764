"""A big JSON Lines file read again from disk a piece at a time (``jsonl_reread``, #24 item 3:
its records are not held beside a copy of the file) reads the same lines, values and issues as
from memory, and a file that changed in between is refused."""

from __future__ import annotations

import gc
import hashlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.input_files import BOM
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import claude_code_records, jsonl, jsonl_reread
from replay.ingest.parsers.source import Issue, Source
from tests.claude_code_chain import write_chain
from tests.conftest import SAMPLES

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude_code"
_LINES = st.sampled_from([
    b'{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}',
    b'{"type":"assistant","uuid":"u2","parentUuid":"u1"}', b"", b"   ", b"\t\r",
    b"{not json", b"[1, 2]", b'"text"', b'{"type": "user", "uuid": "\xff"}',
    b'{"type": "user", "uuid": "' + b"x" * 40 + b'"}',  # over the lowered line limit
    b" " * 45, b'{"type": 7}', b'{"uuid": "caf\xc3\xa9"}',
    b" " * 35 + b'{"type": "user"}',  # over the limit, whitespace first
    b'{"type": "user", "uuid": "u1"}', b'{"type": "user", "uuid": "u12"}'])  # 30, 31 bytes


def _read(path: Path, stream: bool) -> tuple[list[tuple[int, Any]], list[Issue]]:
    raw = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=raw.removeprefix(BOM),
                 sha256=hashlib.sha256(raw).hexdigest(), on_disk=stream)
    issues: list[Issue] = []
    got = list(jsonl.iter_typed(src, issues, claude_code_records.decode,
                                claude_code_records.line_of, stream=stream))
    return got, issues


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(_LINES, max_size=30), last_newline=st.booleans(), bom=st.booleans(),
       piece=st.integers(1, 70))
def test_a_file_read_again_in_pieces_reads_as_from_memory(
        lines: list[bytes], last_newline: bool, bom: bool, piece: int) -> None:
    """Any lines (records, blank and whitespace lines, broken JSON, bad UTF-8, lines over the
    limit, whitespace over it), a last line with or without a newline, a byte order mark,
    pieces of any size (the line limit lowered to 30 bytes): the same records and issues."""
    data = (BOM if bom else b"") + b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    if not data.removeprefix(BOM):
        return  # (an empty file never reaches a parser)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
        mp.setattr(jsonl, "MAX_LINE_BYTES", 30)
        mp.setattr(jsonl_reread, "PIECE_BYTES", piece)
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        assert _read(path, True) == _read(path, False)
        raw = data.removeprefix(BOM)  # every line read, kept, then read again: its own bytes
        src = Source(path=str(path), rel=path.name, data=raw,
                     sha256=hashlib.sha256(data).hexdigest(), on_disk=True)
        index = jsonl_reread.LineIndex()
        kept = []
        for no, _ in jsonl.iter_typed(src, [], claude_code_records.decode,
                                      claude_code_records.line_of, stream=True, index=index):
            index.keep(no)
            kept.append(no)
        assert index.on and len(index) == len(kept)
        assert [index.read(no) for no in reversed(kept)] == \
            [raw.split(b"\n")[no - 1] for no in reversed(kept)]


@pytest.mark.parametrize("change", ["byte", "truncated", "bom", "appended"])
def test_a_file_that_changed_before_it_was_read_again_is_refused(
        change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A byte changed, the file cut short, a byte order mark put first: ``SourceChanged``
    (its records are not the file's that was hashed); lines appended (a session still being
    written): read as far as the file was first read, as from memory."""
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl_reread, "PIECE_BYTES", 64)
    path = tmp_path / "s.jsonl"
    raw = b"".join(b'{"type": "user", "uuid": "u%d"}\n' % i for i in range(50))
    path.write_bytes(raw)
    src = Source(path=str(path), rel=path.name, data=raw,
                 sha256=hashlib.sha256(raw).hexdigest(), on_disk=True)
    edited = {"byte": raw.replace(b"u25", b"u52"), "truncated": raw[:-40],
              "bom": BOM + raw, "appended": raw + b'{"type": "user", "uuid": "u50"}\n'}[change]
    path.write_bytes(edited)
    read = jsonl.iter_typed(src, [], claude_code_records.decode, claude_code_records.line_of,
                            stream=True)
    if change == "appended":
        assert [line.uuid for _, line in read] == [f"u{i}" for i in range(50)]
    else:
        with pytest.raises(jsonl_reread.SourceChanged):
            list(read)


def _claude_code_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.jsonl")) + sorted((SAMPLES / "claude-code").glob("*.jsonl"))


@pytest.mark.parametrize("path", _claude_code_files(), ids=lambda p: p.name)
def test_claude_code_files_read_again_make_the_same_tables(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Claude Code fixture and sample parsed with its file read again in pieces (as a
    file of ``STREAM_MIN_BYTES`` or more is): the same tables, issues and coverage."""
    before = parse_file(path, path.parent)
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl_reread, "PIECE_BYTES", 4096)
    after = parse_file(path, path.parent)
    assert (after.issues, after.coverage, after.format) == \
        (before.issues, before.coverage, before.format)
    assert (after.tables is None) == (before.tables is None)
    if before.tables is not None and after.tables is not None:
        for name in ("runs", "messages", "requests", "events"):
            assert getattr(after.tables, name).equals(getattr(before.tables, name)), name


def test_the_file_bytes_are_not_held_while_its_records_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Claude Code file read again in pieces: when its 100th record is made, the bytes first
    read are gone (``Source.data`` released; they were held until every line was read)."""
    from replay.ingest.parsers import claude_code
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    path = tmp_path / "s.jsonl"
    write_chain(path, 200)
    seen: list[bool] = []
    real = claude_code.record

    def spy(no: int, *args: Any) -> Any:
        if no == 100:
            gc.collect()
            seen.extend(isinstance(o.data, memoryview) for o in gc.get_objects()
                        if isinstance(o, Source) and o.path == str(path))
        return real(no, *args)

    monkeypatch.setattr(claude_code, "record", spy)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.messages.num_rows == 200
    assert seen == [True]


def test_a_text_is_read_again_when_its_run_is_built_not_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Claude Code file read again in pieces: when every line is read, none of its 200
    one-text records holds its text (``AGAIN``: read again from the file when the run is
    built); the run's texts are the file's."""
    from replay.ingest.parsers.claude_code_records import Rec
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    path = tmp_path / "s.jsonl"
    write_chain(path, 200, numbered=True)
    held: list[int] = []
    real = Source.release_data

    def spy(self: Source) -> None:
        if not held:  # (the first call lets the bytes go before the lines are read)
            held.append(-1)
        else:
            gc.collect()
            held.append(sum(1 for o in gc.get_objects() if type(o) is Rec
                            and o.uuid.startswith("u") and isinstance(o.blocks, str)))
        real(self)

    monkeypatch.setattr(Source, "release_data", spy)
    parsed = parse_file(path, path.parent)
    assert held == [-1, 0]
    assert parsed.tables is not None
    assert parsed.tables.messages["text"].to_pylist() == [f"hi {i}" for i in range(200)]


@pytest.mark.parametrize("change", ["text", "gone"])
def test_a_file_that_changed_before_its_texts_were_read_again_fails(
        change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file changes once every line is read, before its run is built: a text changed
    (same size) or the file removed.  The file fails with the parser's issue; no run is made
    of texts that are not those hashed."""
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    path = tmp_path / "s.jsonl"
    write_chain(path, 200, numbered=True)
    real = jsonl_reread.LineIndex.read
    edited: list[bool] = []

    def edit_then_read(self: jsonl_reread.LineIndex, no: int) -> bytes:
        if not edited:  # (the first text read again: its run is being built)
            edited.append(True)
            if change == "text":
                path.write_bytes(path.read_bytes().replace(b'"hi 150"', b'"HI 150"'))
            else:
                path.unlink()
        return real(self, no)

    monkeypatch.setattr(jsonl_reread.LineIndex, "read", edit_then_read)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is None
    assert len(parsed.issues) == 1 and "parser failed" in parsed.issues[0].reason
    assert ("changed" in parsed.issues[0].reason) == (change == "text")


def test_the_texts_are_read_again_once_the_records_are_let_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Claude Code file read again in pieces, its one session on one chain: its texts are
    read again once its 200 records are let go (each once emitted), so they are not made in
    the records' heap, which is then given back whole."""
    from replay.ingest.parsers import claude_code
    from replay.ingest.parsers.claude_code_records import Rec
    monkeypatch.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    path = tmp_path / "s.jsonl"
    write_chain(path, 200, numbered=True)
    alive: list[int] = []
    real = claude_code.text_again

    def spy(no: int, raw: bytes) -> str:
        if not alive:
            gc.collect()
            alive.append(sum(1 for o in gc.get_objects() if type(o) is Rec
                             and o.uuid.startswith("u")))
        return real(no, raw)

    monkeypatch.setattr(claude_code, "text_again", spy)
    parsed = parse_file(path, path.parent)
    assert alive == [0]
    assert parsed.tables is not None
    assert parsed.tables.messages["text"].to_pylist() == [f"hi {i}" for i in range(200)]
