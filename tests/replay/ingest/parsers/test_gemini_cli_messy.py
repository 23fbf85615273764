"""Gemini CLI sessions made messy on purpose: sessions written one after another in one file,
messages without ids, ``toolCalls`` an object, ``$set.messages`` not a list, a ``$rewindTo``
naming no message.  Expected values come from each file parsed alone or from how the test
made the input (``_independent``: the plain walk of the intact fixture)."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file
from tests.replay.ingest.parsers.test_parse_gemini_cli import _independent

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "gemini_cli"
JSONL = sorted(FIXTURES.glob("session-*.jsonl"))
PLAIN = FIXTURES / "session-2026-08-20T09-14-3f2b9c1e.jsonl"
"""The fixture with no rewind and no checkpoint (nothing in it refers to a message by id)."""
_FACTS = ("n_messages", "n_requests", "n_tool_calls", "n_tool_results", "n_harness_compactions",
          "recorded_input_tokens", "recorded_output_tokens", "agent")


def _facts(parsed: ParsedFile) -> list[dict[str, Any]]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    return [{k: run[k] for k in _FACTS} for run in parsed.tables.runs.to_pylist()]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(tmp: Path, records: list[dict[str, Any]], name: str = PLAIN.name) -> Path:
    out = tmp / name
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def _said(parsed: ParsedFile, start: str) -> list[tuple[int, str]]:
    return [(i.line, i.reason) for i in parsed.issues if i.reason.startswith(start)]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_sessions_one_after_another_are_a_run_each(tmp_path: Path,
                                                   order: tuple[int, int]) -> None:
    a, b = JSONL[order[0]], JSONL[order[1]]
    both = _write(tmp_path, _records(a) + _records(b), "session-2026-09-09T00-00-concat.jsonl")
    parsed = parse_file(both, tmp_path)
    alone = [_facts(parse_file(_write(tmp_path, _records(p), f"alone-{p.name}"), tmp_path))
             for p in (a, b)]
    assert _facts(parsed) == alone[0] + alone[1]
    assert [line for line, _ in _said(parsed, "metadata record of another session")] \
        == [len(_records(a)) + 1]
    assert parsed.coverage["metadata"] == {"skipped": 2}


def test_messages_without_ids_are_read_in_file_order(tmp_path: Path) -> None:
    records = _records(PLAIN)
    messages = [r for r in records if r.get("type") in ("user", "gemini")]
    # what makes the expectation hold: each id is one (type, timestamp) and the other way round
    pairs = {(r["id"], r["type"], r["timestamp"]) for r in messages}
    assert len(pairs) == len({p[0] for p in pairs}) == len({p[1:] for p in pairs})
    for r in records:
        r.pop("id", None)
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    (run,) = parsed.tables.runs.to_pylist() if parsed.tables else []
    expected = _independent(PLAIN)
    assert {k: run[k] for k in expected} == expected
    assert run["n_requests"] > 0  # never "no model call" for a file of model calls
    assert [line for line, _ in _said(parsed, "message with no string 'id'")] \
        == [records.index(messages[0]) + 1]
    assert f"({len(messages)} records, the first here)" in _said(
        parsed, "message with no string 'id'")[0][1]


def test_messages_without_ids_or_timestamps_are_one_message_a_line(tmp_path: Path) -> None:
    records = _records(PLAIN)
    for r in records:
        r.pop("id", None)
        r.pop("timestamp", None)
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    (run,) = _facts(parsed)
    models = [r for r in records if r.get("type") == "gemini" and ("model" in r or "tokens" in r)]
    assert run["n_requests"] == len(models)  # every copy its own call: nothing to merge by


def test_tool_calls_as_an_object_are_one_call(tmp_path: Path) -> None:
    records = _records(PLAIN)
    changed = []
    for no, r in enumerate(records, 1):
        if r.get("type") == "gemini" and r.get("toolCalls"):
            r["toolCalls"] = r["toolCalls"][0]
            changed.append(no)
    last = {r["id"]: r for r in records if r.get("type") == "gemini"}  # the last copy wins
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    (run,) = _facts(parsed)
    assert run["n_tool_calls"] == sum(isinstance(r.get("toolCalls"), dict) for r in last.values())
    assert run["n_requests"] == _independent(PLAIN)["n_requests"]
    assert _said(parsed, "message toolCalls is dict") == [(changed[0], (
        "message toolCalls is dict, not a list (read as one call) "
        f"({len(changed)} records, the first here)"))]


@pytest.mark.parametrize(("line", "said", "fate"), [
    ({"$set": {"messages": "oops"}}, "$set.messages is str, not a list",
     ("$set/messages (not a list)", "unknown")),
    ({"$rewindTo": "no-such-id"}, "$rewindTo names no message of the history",
     ("$rewindTo (names no message of the history)", "skipped"))])
def test_a_bad_history_line_is_said_counted_and_ignored(tmp_path: Path, line: dict[str, Any],
                                                       said: str, fate: tuple[str, str]) -> None:
    records = _records(PLAIN)
    at = next(k for k, r in enumerate(records) if r.get("type") == "info") + 1
    records.insert(at, copy.deepcopy(line))
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    intact = parse_file(PLAIN, FIXTURES)
    assert _facts(parsed) == _facts(intact)  # one run, as if the line were not there
    assert [ln for ln, _ in _said(parsed, said)] == [at + 1]
    assert parsed.coverage[fate[0]] == {fate[1]: 1}
    assert [i.reason for i in parsed.issues if not i.reason.startswith(said)] == []


def test_an_inline_pdf_is_a_document_placeholder_and_an_image_stays_one(
        tmp_path: Path) -> None:
    """Inline data was '[image]' whatever its type: a PDF the user attached read as an image.
    It is now '[document: application/pdf]', as a Claude Code document block is (one rule:
    ``content_text``), and an inline PNG is still '[image]'."""
    lines = [json.loads(x) for x in PLAIN.read_text(encoding="utf-8").splitlines() if x.strip()]
    first = next(r for r in lines if r.get("type") == "user")
    first["content"] = [*first["content"],
                        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x" * 9}},
                        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K" * 9}}]
    path = tmp_path / PLAIN.name
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    texts = parse_file(path, tmp_path).tables.messages.column("text").to_pylist()
    prompt = next(t for t in texts if "[document: application/pdf]" in t)
    assert prompt.endswith("[document: application/pdf]\n[image]")
    assert not any("JVBERi0x" in t or "iVBORw0K" in t for t in texts)


def _kind(rec: dict[str, Any]) -> str:
    """A record's kind as the test reads it (independent of the parser's names' code)."""
    for key in ("$rewindTo", "$set"):
        if key in rec:
            return key
    return f"message/{rec['type']}" if "type" in rec else "metadata"


@pytest.mark.parametrize("path", JSONL, ids=lambda p: p.name)
def test_every_line_doubled_is_the_session_with_each_copy_a_repeat(tmp_path: Path,
                                                                    path: Path) -> None:
    """Before: the fixture with a rewind and a checkpoint had coverage 17 for its 14 lines
    (the rewound messages counted twice, the checkpoint's $set under two keys) and 32 for the
    28 of it doubled (the second $rewindTo counted as naming no message)."""
    records = _records(path)
    alone = parse_file(_write(tmp_path, records, f"alone-{path.name}"), tmp_path)
    doubled = parse_file(_write(tmp_path, [r for r in records for _ in (0, 1)], path.name),
                         tmp_path)
    assert _facts(doubled) == _facts(alone)
    assert sum(n for f in alone.coverage.values() for n in f.values()) == len(records)
    repeats = {t: f for t, f in doubled.coverage.items() if t.endswith(" (repeat)")}
    want = Counter(f"{_kind(r)} (repeat)" for r in records)
    assert {t: f["skipped"] for t, f in repeats.items()} == want
    assert {t: f for t, f in doubled.coverage.items() if t not in repeats} == alone.coverage
    assert _said(doubled, "record the same as the record before it") == [(
        2, ("record the same as the record before it (written twice: skipped as a repeat) "
            f"({len(records)} records, the first here)"))]


def test_rewound_messages_are_counted_once_as_rewound(tmp_path: Path) -> None:
    """The records of the messages a rewind drops (independent: the lines from its target's
    first line to the rewind, of the ids it drops) count as rewound, not also as messages."""
    path = next(p for p in JSONL if '"$rewindTo"' in p.read_text())
    records = _records(path)
    at = next(i for i, r in enumerate(records) if "$rewindTo" in r)
    ids = [r["id"] for r in records[:at] if "id" in r]
    dropped = set(ids[ids.index(records[at]["$rewindTo"]):])
    rewound = sum(1 for r in records[:at] if r.get("id") in dropped)
    parsed = parse_file(_write(tmp_path, records, path.name), tmp_path)
    cov = parsed.coverage
    assert cov["message (rewound: in the abandoned branch's run)"] == {"modelled": rewound}
    messages = sum(1 for r in records if "type" in r and r["type"] in ("user", "gemini"))
    assert cov["message/user"]["modelled"] + cov["message/gemini"]["modelled"] \
        == messages - rewound


def test_a_message_written_again_unchanged_later_is_a_repeat(tmp_path: Path) -> None:
    records = _records(PLAIN)
    first = next(r for r in records if r.get("type") == "user")
    parsed = parse_file(_write(tmp_path, [*records, copy.deepcopy(first)]), tmp_path)
    alone = parse_file(_write(tmp_path, records, "alone.jsonl"), tmp_path)
    assert _facts(parsed) == _facts(alone)
    assert parsed.coverage["message/user (repeat)"] == {"skipped": 1}
    assert _said(parsed, "message the same as its copy before") == [(len(records) + 1, (
        "message the same as its copy before (written again unchanged: skipped as a repeat)"))]
