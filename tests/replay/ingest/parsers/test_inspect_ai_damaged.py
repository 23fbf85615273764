"""Inspect AI: a truncated ``.json`` keeps its complete samples, a ``.eval`` cut before (or in)
its central directory keeps the entries whole before the cut, each counted in the test from
where the cut was made, within the zip bounds."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
from pathlib import Path

import pytest

from replay.ingest.parsers import inspect_ai
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inspect_ai"
JSON_LOG = FIXTURES / "2025-05-12T20-28-26-04-00_security-guide.json"
EVAL_LOG = FIXTURES / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"


def _source(name: str, data: bytes) -> Source:
    return Source(path=name, rel=name, data=data, sha256=hashlib.sha256(data).hexdigest())


def _agents(drafts: list) -> list[str]:
    return [d.run["agent"] for d in drafts]


def _requests(drafts: list) -> list[list[int | None]]:
    return [d.requests["input_tokens"] for d in drafts]


def test_truncated_json_keeps_the_complete_samples() -> None:
    doc = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    whole = inspect_ai.parse(_source("whole.json", JSON_LOG.read_bytes()), [])
    text = json.dumps(doc)  # one line: each sample's end is where its own dump ends
    start = text.index('"samples": [') + len('"samples": [')
    ends, at = [], start
    for s in doc["samples"]:
        at += len(json.dumps(s))
        ends.append(at)
        at += 2  # ", "
    for cut in (ends[1] - 10, ends[1] + 1, ends[2] - 1, len(text) - 30):
        kept = sum(1 for e in ends if e <= cut)
        issues: list[Issue] = []
        src = _source("cut.json", text[:cut].encode())
        drafts = inspect_ai.parse(src, issues)
        assert _agents(drafts) == _agents(whole)[:kept]
        assert _requests(drafts) == _requests(whole)[:kept]
        assert drafts[0].run["model"] == whole[0].run["model"]  # the header before them read
        said = [i.reason for i in issues if i.reason.startswith("damaged file")]
        assert said == [f"damaged file: kept the {kept} readable samples ("
                        + ("the samples array is cut at line 1: the samples from there lost)"
                           if kept < 3 else "every sample complete; what followed the samples "
                                            "array lost)")]
        assert src.coverage.by_type()["sample"] == {"modelled": kept}


def test_json_cut_before_any_sample_says_only_the_parse_error() -> None:
    text = JSON_LOG.read_bytes()
    issues: list[Issue] = []
    assert inspect_ai.parse(_source("cut.json", text[:text.index(b'"samples": [') + 20]),
                            issues) == []
    assert [i.reason.split(":")[0] for i in issues] == ["malformed JSON"]


def _entry_ends(data: bytes) -> list[tuple[str, int]]:
    """Each entry's name and the offset just past its data, from the zip's own index."""
    out = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            n_name, n_extra = struct.unpack_from("<HH", data, info.header_offset + 26)
            out.append((info.filename, info.header_offset + 30 + n_name + n_extra
                        + info.compress_size))
    return out


@pytest.mark.parametrize("cut", ["central", "mid-entry", "headers-only"])
def test_eval_without_central_directory_keeps_whole_entries(cut: str) -> None:
    data = EVAL_LOG.read_bytes()
    whole = inspect_ai.parse(_source("whole.eval", data), [])
    ends = _entry_ends(data)
    samples = [(n, e) for n, e in ends if n.startswith("samples/")]
    size = {"central": len(data) - 50, "mid-entry": samples[5][1] - 100,
            "headers-only": ends[0][1] + 10}[cut]
    kept_names = {n for n, e in samples if e <= size}
    issues: list[Issue] = []
    src = _source("cut.eval", data[:size])
    drafts = inspect_ai.parse(src, issues)
    expected = [a for a in _agents(whole)
                if f"samples/{a.split()[1]}_epoch_{a.split()[3]}.json" in kept_names]
    assert _agents(drafts) == expected
    assert len(drafts) == {"central": 10, "mid-entry": 5, "headers-only": 0}[cut]
    by_agent = dict(zip(_agents(whole), _requests(whole)))
    assert _requests(drafts) == [by_agent[a] for a in expected]
    damaged = [i.reason for i in issues if "damaged .eval zip" in i.reason]
    assert len(damaged) == 1
    n_whole = sum(1 for _, e in ends if e <= size)
    assert f"read {n_whole} whole entries from their local headers" in damaged[0]
    if cut == "mid-entry":
        assert damaged[0].endswith(f"entry '{samples[5][0]}' is cut (lost)")
        assert src.coverage.by_type()["zip/samples"] == {"modelled": 5}
    if cut == "headers-only":
        assert issues[-1].reason == "no whole sample left in the damaged file"
    assert not any("log_samples off" in i.reason for i in issues)


def test_rebuilt_zip_keeps_the_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = EVAL_LOG.read_bytes()[:-50]
    monkeypatch.setenv("CTXREPLAY_MAX_DOCUMENT_BYTES", "7800")  # under some samples' size
    sizes = {}
    with zipfile.ZipFile(EVAL_LOG) as z:
        sizes = {i.filename: i.file_size for i in z.infolist() if i.filename.startswith("samples/")}
    issues: list[Issue] = []
    src = _source("cut.eval", data)
    drafts = inspect_ai.parse(src, issues)
    cov = src.coverage.by_type()
    over = sum(1 for n in sizes.values() if n > 7800)
    assert cov["zip/samples (too large)"] == {"unknown": over}
    read = 10 - over - cov.get("zip/samples (over the file's total)", {}).get("unknown", 0)
    assert len(drafts) == read


def test_a_lying_local_size_is_not_trusted() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"eval": {"model": "m"}}))
        z.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}))
        z.writestr("samples/2_epoch_1.json", json.dumps({"id": 2, "epoch": 1}))
    data = bytearray(buf.getvalue())
    cd = data.index(b"PK\x01\x02")
    second = data.index(b"PK\x03\x04", data.index(b"samples/2_epoch_1.json") - 40)
    struct.pack_into("<L", data, second + 18, 10**6)  # compressed size past the end of file
    issues: list[Issue] = []
    drafts = inspect_ai.parse(_source("lie.eval", bytes(data[:cd])), issues)
    assert _agents(drafts) == ["sample 1 epoch 1"]
    assert any(i.reason.endswith("entry 'samples/2_epoch_1.json' is cut (lost)") for i in issues)
    # a wrong CRC in the local header: zipfile's own check refuses the entry
    data = bytearray(buf.getvalue())
    first = data.index(b"PK\x03\x04", data.index(b"samples/1_epoch_1.json") - 40)
    struct.pack_into("<L", data, first + 14, 1)
    issues = []
    drafts = inspect_ai.parse(_source("crc.eval", bytes(data[:cd])), issues)
    assert _agents(drafts) == ["sample 2 epoch 1"]
    assert any("samples/1_epoch_1.json" in i.reason and "CRC" in i.reason for i in issues)


def test_data_descriptor_entries_are_measured() -> None:
    data = _streamed_zip({f"samples/{k}_epoch_1.json": {"id": k, "epoch": 1, "messages": [
        {"role": "user", "content": "x" * 500}]} for k in (1, 2)})
    assert zipfile.ZipFile(io.BytesIO(data)).infolist()[1].flag_bits & 0x8
    issues: list[Issue] = []
    drafts = inspect_ai.parse(_source("dd.eval", data[:data.index(b"PK\x01\x02") + 10]), issues)
    assert _agents(drafts) == ["sample 1 epoch 1", "sample 2 epoch 1"]
    assert [i.reason for i in issues] == [(
        "damaged .eval zip (File is not a zip file): read 3 whole entries from their local "
        "headers")]


def test_the_walk_decompresses_no_more_than_the_files_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries with their sizes after their data are measured by decompressing them: the walk
    over a cut zip decompresses at most the file's bound in all (read_eval_zip's bound for
    every entry together), not the bound once an entry: 40 entries of 5,000 zeros each, under a
    bound of 60,000 bytes, are measured until the bound is spent, the rest said lost."""
    data = _streamed_zip({f"samples/{k}_epoch_1.json": {"id": k, "epoch": 1, "pad": "0" * 5_000}
                          for k in range(1, 41)})
    size = len(json.dumps({"id": 10, "epoch": 1, "pad": "0" * 5_000}))
    monkeypatch.setenv("CTXREPLAY_MAX_DOCUMENT_BYTES", "60000")
    issues: list[Issue] = []
    src = _source("many.eval", data[:data.index(b"PK\x01\x02") + 10])
    inspect_ai.parse(src, issues)
    said = next(i.reason for i in issues if "damaged .eval zip" in i.reason)
    read = int(said.split("read ")[1].split(" whole")[0])
    assert read - 1 <= 60_000 // size  # (the header, then samples until the bound is spent)
    assert "past the file's decompressed bound" in said


def _streamed_zip(samples: dict[str, object]) -> bytes:
    """A .eval zip written as to a stream (no seeking back: each entry's sizes follow its data,
    in a data descriptor) with a header and ``samples`` (entry name -> JSON value)."""
    raw = io.BytesIO()

    class Unseekable(io.RawIOBase):  # zipfile writes sizes after the data for an unseekable file
        def writable(self) -> bool:
            return True

        def write(self, b) -> int:  # type: ignore[no-untyped-def,override]
            return raw.write(b)

    with zipfile.ZipFile(Unseekable(), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"eval": {"model": "m"}}))
        for name, value in samples.items():
            z.writestr(name, json.dumps(value))
    return raw.getvalue()
