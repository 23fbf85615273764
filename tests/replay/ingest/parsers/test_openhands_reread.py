"""An OpenHands event document read again from disk a piece at a time
(``replay.ingest.parsers.json_items_reread``): the same runs, issues and coverage as from
memory, the file's bytes not held while the run is built, and a file changed in between
failed in one line."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from replay.ingest.input_files import read_input
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import json_items_reread, jsonl, openhands
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source

SAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample" / "openhands"


def _same(after: ParsedFile, before: ParsedFile) -> None:
    assert (after.issues, after.coverage, after.format) == \
        (before.issues, before.coverage, before.format)
    assert before.tables is not None and after.tables is not None
    for name in ("runs", "messages", "requests", "events"):
        assert getattr(after.tables, name).equals(getattr(before.tables, name)), name


def read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every document read lazily and its events read again from disk, 300 bytes a piece, one
    piece kept (a response's later actions read back out of order)."""
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(json_items_reread, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(json_items_reread, "PIECE_BYTES", 300)
    monkeypatch.setattr(json_items_reread, "KEPT_PIECES", 1)


def _wrapped(tmp_path: Path, name: str) -> Path:
    """A sample's events under a wrapper's ``history`` key, beside other keys."""
    events = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    path = tmp_path / f"wrapped-{name}"
    path.write_text(json.dumps({"instance_id": "x", "history": events, "metrics": {"a": 1}}),
                    encoding="utf-8")
    return path


def _spy_on_disk(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each document the OpenHands parser asked to read again from disk was (True) or
    was read from memory instead (False), in the order asked."""
    used: list[bool] = []
    real = json_items_reread.on_disk

    def spy(src: Source, items: Any) -> Any:
        found = real(src, items)
        used.append(found is not None)
        return found

    monkeypatch.setattr(openhands, "on_disk", spy)
    return used


@pytest.mark.parametrize("name", ["basic.json", "basic_interactions.json"])
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_document_read_again_makes_the_same_run(
        name: str, wrapped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _wrapped(tmp_path, name) if wrapped else SAMPLES / name
    before = parse_file(path, path.parent)
    assert before.tables is not None and before.tables.messages.num_rows > 5
    used = _spy_on_disk(monkeypatch)
    read_again(monkeypatch)
    _same(parse_file(path, path.parent), before)
    assert used == [True]


def _tiny_events(path: Path, n: int) -> None:
    events = []
    for i in range(n):
        events.append({"id": 2 * i, "source": "agent", "action": "run",
                       "args": {"command": "ls"}, "message": "x"})
        events.append({"id": 2 * i + 1, "source": "agent", "observation": "run",
                       "content": "y", "extras": {"exit_code": 0}, "cause": 2 * i})
    path.write_text(json.dumps(events), encoding="utf-8")


def _peak_of_parse(path: Path) -> int:
    """The most Python memory ``openhands.parse`` of ``path`` held by the time every event was
    read (when the run is built), its file's bytes among it."""
    peaks: list[int] = []
    real = RunBuilder.build

    def build(self: RunBuilder) -> Any:
        peaks.append(tracemalloc.get_traced_memory()[1])
        return real(self)

    tracemalloc.start()
    try:
        data = read_input(path)
        src = Source(path=str(path), rel=path.name, data=data, sha256="0" * 64, on_disk=True)
        del data
        tracemalloc.reset_peak()
        with patch.object(RunBuilder, "build", build):
            runs = openhands.parse(src, [])
    finally:
        tracemalloc.stop()
    assert len(runs) == 1 and len(peaks) == 1
    return peaks[0]


def test_the_file_bytes_are_not_held_while_the_run_is_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4 MB document of tiny events: read from memory, its bytes stay until the last event
    is read (each event a slice of them), where the run is largest; read again from disk (64
    KiB a piece), they go before the first: the peak until the run is built is lower by about
    the file."""
    path = tmp_path / "events.json"
    _tiny_events(path, 20_000)
    monkeypatch.setattr(json_items_reread, "PIECE_BYTES", 1 << 16)
    size = path.stat().st_size
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(json_items_reread, "STREAM_MIN_BYTES", size + 1)  # (in memory)
    held = _peak_of_parse(path)
    monkeypatch.setattr(json_items_reread, "STREAM_MIN_BYTES", 0)
    again = _peak_of_parse(path)
    assert held - again > 0.8 * size, (held, again, size)


def test_a_file_changed_before_it_is_read_again_fails_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The events noted, then the file rewritten (the same size, other bytes): the parse
    fails with one issue naming the change, not a traceback and not other events."""
    path = tmp_path / "events.json"
    _tiny_events(path, 200)
    read_again(monkeypatch)
    real = json_items_reread.on_disk

    def then_changed(src: Source, items: Any) -> Any:
        found = real(src, items)
        path.write_bytes(path.read_bytes().replace(b'"ls"', b'"pw"'))
        return found

    monkeypatch.setattr(openhands, "on_disk", then_changed)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is None
    assert [i.reason.split(":")[:2] for i in parsed.issues] == \
        [["openhands parser failed", " SourceChanged"]]
    assert "changed while it was read" in parsed.issues[0].reason


def test_items_that_are_not_slices_of_the_file_stay_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document with bytes after it is decoded from a copy without them: its events are not
    slices of the file's bytes and are read from memory (the same run as the document alone,
    the trailing bytes said)."""
    path = tmp_path / "events.json"
    _tiny_events(path, 50)
    before = parse_file(path, path.parent)
    padded = tmp_path / "padded.json"
    padded.write_bytes(path.read_bytes() + b"\x00" * 64)
    read_again(monkeypatch)
    used = _spy_on_disk(monkeypatch)
    after = parse_file(padded, padded.parent)
    assert used == [False]
    assert after.tables is not None and before.tables is not None
    assert after.tables.messages.drop(["run_id"]).equals(
        before.tables.messages.drop(["run_id"]))
    assert any("64 bytes after the complete JSON document" in i.reason for i in after.issues)


def test_items_read_again_one_at_a_time_and_out_of_order(tmp_path: Path) -> None:
    """``ItemsOnDisk``: each item as first read, in any order, across pieces."""
    path = tmp_path / "events.json"
    _tiny_events(path, 100)
    data = read_input(path)
    items = jsonl._decode_items(data)
    src = Source(path=str(path), rel=path.name, data=data, sha256="0" * 64, on_disk=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(json_items_reread, "STREAM_MIN_BYTES", 0)
        mp.setattr(json_items_reread, "PIECE_BYTES", 500)
        found = json_items_reread.on_disk(src, items)
    assert found is not None and len(found) == len(items) == 200
    for i in [0, 199, 5, 150, 150, 1, 100, 57]:
        assert bytes(found[i]) == bytes(items[i])
    assert [bytes(r) for r in found] == [bytes(r) for r in items]
    with pytest.raises(IndexError):
        found[200]
