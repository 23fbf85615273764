"""A string that is not valid Unicode (a lone surrogate, as a JSON escape like ``\\udc80``
decodes to) is stored with U+FFFD in its place: that repair was silent, and two ids or names
differing only there were then one.  It is said, one issue a file with the number of strings
repaired (``run_tables.said_repaired``)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.source import Issue
from replay.ingest.run_tables import REPAIRED, said_repaired

SAMPLE = Path(__file__).resolve().parents[3].parent / "shared" / "logs-sample" / "claude-code" \
    / "short.jsonl"


def _fffd_in(table: pa.Table) -> int:
    """Strings of ``table`` holding U+FFFD, counted from the stored values (not the parser's)."""
    return sum(isinstance(v, str) and "\ufffd" in v
               for col in table.columns if pa.types.is_string(col.type)
               for v in col.to_pylist())


def test_surrogates_in_names_and_ids_are_said(tmp_path: Path) -> None:
    planted = 0
    lines = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        message = rec.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    block["name"] = "Re\udc80d"
                    block["id"] = "\udc81" + block["id"]
                    planted += 1
        lines.append(json.dumps(rec))  # (the surrogates written as \\udc80 escapes)
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
    issues = [Issue("a.jsonl", 3, "something else")]
    said_repaired(issues, "a.jsonl", 2)
    said_repaired(issues, "b.jsonl", 1)
    said_repaired(issues, "a.jsonl", 1_500)
    assert [i.reason.split(" ", 1)[0] for i in issues] == ["something", "1,502", "1"]
