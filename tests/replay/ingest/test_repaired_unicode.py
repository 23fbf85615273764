"""A string that is not valid Unicode (a lone surrogate, as a JSON escape like ``\\udc80``
decodes to) is stored with U+FFFD in its place: that repair was silent, and two ids or names
differing only there were then one.  It is said, one issue a file with the number of strings
repaired (``token_issues.said_repaired``), kept as a number beside the issues over a file's runs
(``token_issues.RepairedStrings``), never read back out of the issue's text."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from replay.ingest import parse_file as parse_file_module
from replay.ingest import store
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.source import Issue
from replay.ingest.token_issues import REPAIRED, RepairedStrings, said_repaired

SAMPLE = Path(__file__).resolve().parents[3].parent / "shared" / "logs-sample" / "claude-code" \
    / "short.jsonl"


def _fffd_in(table: pa.Table) -> int:
    """Strings of ``table`` holding U+FFFD, counted from the stored values (not the parser's)."""
    return sum(isinstance(v, str) and "\ufffd" in v
               for col in table.columns if pa.types.is_string(col.type)
               for v in col.to_pylist())


def _with_surrogates(session: str = "") -> tuple[list[str], int]:
    """The sample's lines with a lone surrogate in every tool call's name and id (``session``:
    a session id of their own), and how many calls."""
    planted = 0
    lines = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if session and "sessionId" in rec:
            rec["sessionId"] = session
            for key in ("uuid", "parentUuid"):
                if rec.get(key):
                    rec[key] = f"{session}-{rec[key]}"
        message = rec.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    block["name"] = "Re\udc80d"
                    block["id"] = "\udc81" + block["id"]
                    planted += 1
        lines.append(json.dumps(rec))  # (the surrogates written as \\udc80 escapes)
    return lines, planted


def test_surrogates_in_names_and_ids_are_said(tmp_path: Path) -> None:
    lines, planted = _with_surrogates()
    assert planted
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    got = parse_file(path, tokenizers=("o200k_base",))
    assert got.tables is not None
    stored = sum(_fffd_in(getattr(got.tables, t))
                 for t in ("runs", "messages", "requests", "events"))
    said = [i for i in got.issues if i.reason.endswith(REPAIRED)]
    assert stored >= 2 * planted  # (each call's name and id, and its result's id)
    assert len(said) == 1 and said[0].reason.startswith(f"{stored:,} string(s) not valid")


def test_a_clean_file_says_nothing_of_it() -> None:
    got = parse_file(SAMPLE, tokenizers=("o200k_base",))
    assert not [i for i in got.issues if "Unicode" in i.reason]


def test_a_files_runs_add_up_in_one_issue() -> None:
    """Each file's count is its counter's, said in one issue where it was first said."""
    a, b = RepairedStrings(), RepairedStrings()
    issues = [Issue("a.jsonl", 3, "something else")]
    said_repaired(issues, "a.jsonl", 2, a)
    said_repaired(issues, "b.jsonl", 1, b)
    issues.append(Issue("a.jsonl", 9, "1,000 other things"))
    said_repaired(issues, "a.jsonl", 1_500, a)
    assert (a.n_strings, b.n_strings) == (1_502, 1)
    assert [str(i) for i in issues] == ["a.jsonl:3: something else", f"a.jsonl: 1,502{REPAIRED}",
                                        f"b.jsonl: 1{REPAIRED}", "a.jsonl:9: 1,000 other things"]


class _Kept:
    """A sink that keeps every run's tables it is given."""

    def __init__(self) -> None:
        self.tables: list[store.RunTables] = []

    def add(self, tables: store.RunTables) -> None:
        self.tables.append(tables)

    def restart(self) -> None:
        self.tables.clear()


def test_a_file_tokenized_a_run_at_a_time_says_its_repairs_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big file's runs are tokenized one at a time (``parse_file._streamed``): the strings
    repaired in all its runs are said in one issue, their number the U+FFFD strings of the
    tables given to the sink, counted from the stored values."""
    lines, planted = [], 0
    for session in ("s1", "s2", "s3"):
        more, n = _with_surrogates(session)
        lines += more
        planted += n
    path = tmp_path / "three.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    monkeypatch.setattr(parse_file_module, "STREAMED_MIN_BYTES", 0)
    sink = _Kept()
    got = parse_file(path, tokenizers=("o200k_base",), sink=sink)
    assert len(sink.tables) >= 3  # a run or more a session, each tokenized alone
    stored = sum(_fffd_in(getattr(t, name)) for t in sink.tables
                 for name in ("runs", "messages", "requests", "events"))
    said = [i for i in got.issues if i.reason.endswith(REPAIRED)]
    assert stored >= 2 * planted
    assert [i.reason for i in said] == [f"{stored:,}{REPAIRED}"]
