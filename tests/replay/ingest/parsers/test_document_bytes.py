"""Real JSON documents of every document format with bytes after them (the NULs a crashed
writer leaves, whitespace, garbage) or with bytes that are not UTF-8 inside: all read by one
rule (``json_document``).  Bytes after a complete document are ignored and said (how many, of
what kind), the tables those of the document alone; a byte sequence that is not UTF-8 is read
as U+FFFD and said, the tables those of the same file with U+FFFD written in UTF-8.  It was
the file salvaged item by item ("damaged file: kept N steps (history and info lost)"), or
failed whole (chat)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file
from tests.conftest import SAMPLES

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DOCUMENTS = {
    "swe_agent": SAMPLES / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj",
    "mini_swe_agent": SAMPLES / "mini-swe-agent" / "django__django-11163.traj.json",
    "mini_swe_agent_v0": SAMPLES / "mini-swe-agent" / "minirepo_test_github_issue.traj.json",
    "openhands": SAMPLES / "openhands" / "basic_interactions.json",
    "atif": FIXTURES / "atif" / "terminus2-timeout.trajectory.json",
    "opencode": FIXTURES / "opencode" / "rebuild-errors.export.json",
    "inspect_ai": FIXTURES / "inspect_ai" / "hand-made-compaction.json",
}
_PER_FILE = {"run_id", "source", "sha256", "parent_run_id"}


def _chat(tmp: Path) -> Path:
    path = tmp / "chat.json"
    path.write_text(json.dumps({"messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "done", "usage": {"prompt_tokens": 9}}]}, indent=1))
    return path


def _source(name: str, tmp: Path) -> Path:
    if name == "chat":
        return _chat(tmp)
    return DOCUMENTS[name]


NAMES = [*DOCUMENTS, "chat"]


def _tables(parsed: ParsedFile) -> list[Any]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    t = parsed.tables
    return [[{k: v for k, v in r.items() if k not in _PER_FILE} for r in table.to_pylist()]
            for table in (t.runs, t.messages, t.requests)]


def _parsed(tmp: Path, name: str, data: bytes) -> ParsedFile:
    folder = tmp / str(len(list(tmp.iterdir())))
    folder.mkdir()
    path = folder / name
    path.write_bytes(data)
    return parse_file(path, folder)


@pytest.mark.parametrize(("tail", "kinds"), [
    (b"\0", "1 NUL"), (b"\0" * 4096, "4,096 NUL"), (b"\n\0\0 \n\0", "3 NUL, 2 whitespace"),
    (b"\x00garbage\xff", "1 NUL, 8 other")], ids=["NUL", "4096 NULs", "NULs and lines", "garbage"])
@pytest.mark.parametrize("name", NAMES)
def test_bytes_after_a_complete_document_are_ignored_and_said(
        tmp_path: Path, name: str, tail: bytes, kinds: str) -> None:
    src = _source(name, tmp_path)
    data = src.read_bytes()
    whole = _parsed(tmp_path, src.name, data)
    padded = _parsed(tmp_path, src.name, data + tail)
    assert _tables(padded) == _tables(whole)
    stop = len(data) + tail.startswith(b"\n")  # (the whitespace right after it is JSON's)
    first, n = (data + tail).count(b"\n", 0, stop) + 1, len(data) + len(tail) - stop
    more = [(i.line, i.reason) for i in padded.issues if i not in whole.issues]
    assert more == [(first, (f"{n:,} byte{'s' if n != 1 else ''} after the complete JSON "
                            f"document ignored ({kinds}: a writer's padding or garbage); the "
                            "document read"))]
    assert padded.coverage == whole.coverage


@pytest.mark.parametrize("bad", [b"\xff", b"\xe2\x82", b"\xed\xa0\x80"],
                         ids=["xff", "cut-off", "surrogate"])
@pytest.mark.parametrize("name", NAMES)
def test_bytes_that_are_not_utf8_read_as_replacement_characters_and_said(
        tmp_path: Path, name: str, bad: bytes) -> None:
    src = _source(name, tmp_path)
    data = src.read_bytes()
    key = data.rfind(b'"content"')  # (a message's text: what the tables show)
    at = data.find(b'"', data.find(b":", key) + 1) + 1
    odd = _parsed(tmp_path, src.name, data[:at] + bad + data[at:])
    n = len(bad.decode("utf-8", "replace"))
    written = _parsed(tmp_path, src.name, data[:at] + "\ufffd".encode() * n + data[at:])
    assert _tables(odd) == _tables(written)
    more = f"; {n} such sequences in all" if n > 1 else ""
    assert [(i.line, i.reason) for i in odd.issues if i not in written.issues] == \
        [(data.count(b"\n", 0, at) + 1,
          f"invalid UTF-8 at byte {at:,}, read as U+FFFD (the document kept{more})")]
    assert odd.coverage == written.coverage
