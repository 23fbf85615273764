"""A damaged JSON document (cut short, a syntax error inside) is decoded once to fail, then
salvaged: it was decoded a second time by ``json_document.document`` (the rule for bytes after
a document and bytes that are not UTF-8), which could only fail the same way on a text that is
UTF-8 and whose error is no "Extra data".  The issues and tables are as before: the same error,
the same items kept.  A document with bytes after it or bytes that are not UTF-8 still goes
through the rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import jsonl
from tests.replay.ingest.parsers.test_document_bytes import DOCUMENTS, _chat

_FORMATS = [*DOCUMENTS, "chat"]


def _source(name: str, tmp_path: Path) -> Path:
    return _chat(tmp_path) if name == "chat" else DOCUMENTS[name]


@pytest.fixture
def ruled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times ``json_document.document`` (through ``jsonl``) is called."""
    calls: list[int] = []
    rule = jsonl.document

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return rule(*args, **kw)

    monkeypatch.setattr(jsonl, "document", counted)
    return calls


@pytest.mark.parametrize("name", _FORMATS)
def test_a_document_cut_short_is_decoded_once_and_said_as_before(
        tmp_path: Path, name: str, ruled: list[int]) -> None:
    data = _source(name, tmp_path).read_bytes()
    cut = data[:len(data) * 2 // 3]
    path = tmp_path / "cut" / _source(name, tmp_path).name
    path.parent.mkdir()
    path.write_bytes(cut)
    fmt = "mini_swe_agent" if name.startswith("mini_swe_agent") else name
    parsed = parse_file(path, path.parent, fmt=fmt)
    try:
        json.loads(cut.decode("utf-8"))
    except json.JSONDecodeError as exc:
        want = (exc.lineno, f"malformed JSON: {exc}")
    assert want in [(i.line, i.reason) for i in parsed.issues]
    assert ruled == []


@pytest.mark.parametrize(("tail", "said"), [
    (b"\x00\x00 garbage", "after the complete JSON document ignored"),
    (b"\xff", "invalid UTF-8 at byte")])
def test_bytes_after_or_not_utf8_still_go_through_the_rule(
        tmp_path: Path, tail: bytes, said: str, ruled: list[int]) -> None:
    data = DOCUMENTS["atif"].read_bytes()
    path = tmp_path / DOCUMENTS["atif"].name
    i = data.index(b'": "') + 4  # (not UTF-8: inside a string value, the document kept)
    path.write_bytes(data + tail if tail.startswith(b"\x00") else data[:i] + tail + data[i:])
    parsed = parse_file(path, tmp_path, fmt="atif")
    assert [i for i in parsed.issues if said in i.reason]
    assert ruled == [1]
