"""A Codex rollout whose lines' ``timestamp`` is not a string (a number, an object): each
record is read as it would be with its timestamp missing (the timestamp unknown), and one
issue for the file says so.  It was each record skipped, the whole rollout lost (an issue a
line, no run).  Expected: the same rollout with its timestamps null (read as absent, as
before), parsed alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "codex"
MODERN = FIXTURES / "rollout-2026-03-21T10-05-38-01a7c9e4-6d12-7b3a-9f42-8c6d5e1a0b73.jsonl"
_PER_FILE = ("run_id", "source", "sha256", "first_ts", "last_ts")


def _rewritten(src: Path, dst: Path, value: Any) -> int:
    """``src`` with every line's timestamp set to ``value``; how many lines."""
    lines = []
    for raw in src.read_text().splitlines():
        rec = json.loads(raw)
        rec["timestamp"] = value
        lines.append(json.dumps(rec))
    dst.write_text("\n".join(lines) + "\n")
    return len(lines)


def _tables(parsed: ParsedFile) -> list[Any]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    t = parsed.tables
    runs = [{k: v for k, v in r.items() if k not in _PER_FILE} for r in t.runs.to_pylist()]
    drop = ("run_id",)
    return [runs, [{k: v for k, v in m.items() if k not in drop} for m in t.messages.to_pylist()],
            [{k: v for k, v in q.items() if k not in drop} for q in t.requests.to_pylist()]]


@pytest.mark.parametrize("value", [1774087538.5, 1774087538500, {"s": 1}, [1], True])
def test_a_timestamp_that_is_no_string_is_unknown_and_the_record_kept(
        tmp_path: Path, value: Any) -> None:
    name = MODERN.name
    (tmp_path / "odd").mkdir()
    (tmp_path / "none").mkdir()
    n = _rewritten(MODERN, tmp_path / "odd" / name, value)
    _rewritten(MODERN, tmp_path / "none" / name, None)
    odd = parse_file(tmp_path / "odd" / name, tmp_path / "odd")
    without = parse_file(tmp_path / "none" / name, tmp_path / "none")
    assert _tables(odd) == _tables(without)
    said = [(i.line, i.reason) for i in odd.issues if "timestamp" in i.reason]
    assert said == [(1, ("timestamp is not a string: read as unknown, the record kept (Codex "
                        "writes ISO-8601 text; a number is not read as epoch seconds or "
                        f"milliseconds: that would be a guess) ({n} lines, the first here)"))]
    assert [i for i in odd.issues if "timestamp" not in i.reason] == list(without.issues)
    requests = odd.tables.requests.to_pylist() if odd.tables else []
    assert requests and all(not q["ts"] for q in requests)


def test_a_legacy_first_line_with_a_number_for_timestamp_is_read(tmp_path: Path,
                                                                  samples: Path) -> None:
    legacy = samples / "codex" / "example-legacy-2025-09-10.jsonl"
    lines = legacy.read_text().splitlines()
    first = json.loads(lines[0])
    first["timestamp"] = 1757500000
    odd = tmp_path / legacy.name
    odd.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    parsed = parse_file(odd, tmp_path)
    assert [(i.line, i.reason.split(":")[0]) for i in parsed.issues] == \
        [(1, "timestamp is not a string")]
    assert parsed.coverage["session_meta"] == {"modelled": 1}
