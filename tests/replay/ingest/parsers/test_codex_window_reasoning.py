"""Codex facts the harness's own arithmetic needs (#26 items 6, 8): the window and limit the
rollout records, each reasoning item's encrypted length, a remote compaction's encrypted summary
sized by estimate, the replacement history's repeated messages, lines carrying ``ordinal``.
Expected figures come from a plain JSON walk of the same lines, not from the parser."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import codex
from replay.ingest.parsers.source import Source
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "codex"
SHARED = REPO.parent / "shared" / "logs-sample" / "codex"
REAL = [FIXTURES / "rollout-2026-03-21T10-05-38-01a7c9e4-6d12-7b3a-9f42-8c6d5e1a0b73.jsonl",
        SHARED / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        SHARED / "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"]


def _encoded_len(value: str) -> int:
    """A plain reading of an encrypted_content's length: a sanitiser's ``len=N``, else len."""
    m = re.fullmatch(r"\[REDACTED_ENCRYPTED_CONTENT len=(\d+)[^\]]*\]", value)
    return int(m.group(1)) if m else len(value)


def _source(path: Path, rel: str) -> Source:
    data = path.read_bytes()
    return Source(path=str(path), rel=rel, data=data, sha256=hashlib.sha256(data).hexdigest())


def _tables(path: Path, root: Path) -> Any:
    tables = parse_file(path, root, tokenizers=("o200k_base",)).tables
    assert tables is not None
    return tables


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:30])
def test_window_and_reasoning_lengths_as_recorded(path: Path) -> None:
    if not path.exists():
        pytest.skip("shared sample not present")
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    windows = Counter(r["payload"]["info"]["model_context_window"] for r in recs
                      if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count"
                      and r["payload"].get("info"))
    encoded = [_encoded_len(r["payload"]["encrypted_content"]) for r in recs
               if r.get("type") == "response_item" and r["payload"].get("type") == "reasoning"
               and r["payload"].get("encrypted_content")]
    tables = _tables(path, path.parent)
    run = tables.runs.to_pylist()[0]
    assert run["recorded_window_tokens"] == windows.most_common(1)[0][0] == 258_400
    assert run["recorded_compact_limit_tokens"] is None
    got = [m["encrypted_bytes"] for m in tables.messages.to_pylist() if m["kind"] == "reasoning"]
    assert [n for n in got if n] == encoded and encoded


def _line(kind: str, payload: dict[str, Any], ordinal: int | None = None) -> str:
    rec: dict[str, Any] = {"timestamp": "2026-09-10T10:00:00.000Z"}
    if ordinal is not None:
        rec["ordinal"] = ordinal
    rec.update(type=kind, payload=payload)
    return json.dumps(rec)


def _msg(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _usage(n: int, window: int = 258_400, limit: int | None = None) -> dict[str, Any]:
    last = {"input_tokens": n, "cached_input_tokens": 0, "output_tokens": 10,
            "reasoning_output_tokens": 0, "total_tokens": n + 10}
    info: dict[str, Any] = {"last_token_usage": last, "total_token_usage": dict(last),
                            "model_context_window": window}
    if limit is not None:
        info["auto_compact_token_limit"] = limit
    return {"type": "token_count", "info": info}


def _remote_rollout(tmp_path: Path) -> tuple[Path, list[str]]:
    """A 0.104-shaped remote compaction: the replacement history repeats user messages and an
    answer, and ends with the encrypted compaction item (sanitised to a length marker)."""
    lines = [
        _line("session_meta", {"id": "s1", "cli_version": "0.149.0", "originator": "codex_cli_rs",
                               "base_instructions": {"text": "You are Codex."}}, 0),
        _line("turn_context", {"model": "gpt-5.5"}, 1),
        _line("response_item", _msg("user", "first task"), 2),
        _line("response_item", {"type": "reasoning", "summary": [],
                                "encrypted_content": "[REDACTED_ENCRYPTED_CONTENT len=9000 "
                                                     "sha=ab12]"}, 3),
        _line("response_item", _msg("assistant", "done with the first"), 4),
        _line("event_msg", _usage(1000, limit=200_000), 5),
        _line("response_item", _msg("user", "second task"), 6),
        _line("response_item", _msg("assistant", "working"), 7),
        _line("event_msg", _usage(2000, limit=200_000), 8),
        _line("compacted", {"message": "[REDACTED_MESSAGE len=0 sha=e3b0c442]",
                            "replacement_history": [
                                _msg("user", "first task"), _msg("assistant", "done with the first"),
                                _msg("user", "second task"),
                                {"type": "compaction",
                                 "encrypted_content": "[REDACTED_ENCRYPTED_CONTENT len=13412 "
                                                      "sha=cd34]"}]}, 9),
        _line("response_item", _msg("assistant", "after"), 10),
        _line("event_msg", _usage(1500, window=121_600, limit=200_000), 11),
    ]
    path = tmp_path / "rollout-2026-09-10T10-00-00-0199a000-0000-7000-8000-000000000001.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def test_remote_compaction_summary_is_sized_from_its_encrypted_bytes(tmp_path: Path) -> None:
    path, lines = _remote_rollout(tmp_path)
    parsed = parse_file(path, tmp_path, tokenizers=("o200k_base",))
    assert parsed.tables is not None
    msgs = parsed.tables.messages.to_pylist()
    summary = [m for m in msgs if m["kind"] == "summary"]
    # Codex's estimate of an encrypted item: encoded x 3/4 - 650 bytes (13,412 -> 9,409)
    assert len(summary) == 1 and summary[0]["encrypted_bytes"] == 13_412
    assert summary[0]["tokens_estimated"] and summary[0]["n_chars"] == 13_412 * 3 // 4 - 650
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_estimated_blocks"] >= 1
    # the history's three repeated messages are the event's preserved messages
    repeated = {"first task", "done with the first", "second task"}
    want = sorted({m["msg"] for m in msgs if m["text"] in repeated and not m["is_harness_summary"]})
    event = parsed.tables.events.to_pylist()[0]
    assert event["preserved_msgs"] == want and len(want) == 3
    assert event["trigger"] == "auto"  # after a model call, no user turn since
    # the window the token_counts record most often; the other value said once
    assert run["recorded_window_tokens"] == 258_400
    assert run["recorded_compact_limit_tokens"] == 200_000
    said = [i.reason for i in parsed.issues if "model_context_window" in i.reason]
    want = ("token_count model_context_window takes 2 values (258,400 x2, 121,600 x1): the run "
            "records the most frequent")
    assert said == [want]
    assert parsed.coverage["line ordinal"] == {"modelled": len(lines)}


def test_ordinals_out_of_order_are_counted_and_said_once(tmp_path: Path) -> None:
    path, lines = _remote_rollout(tmp_path)
    recs = [json.loads(x) for x in lines]
    recs[5]["ordinal"] = recs[6]["ordinal"] = 1  # two lines not above their predecessor
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    ordinals = [r["ordinal"] for r in recs]
    late = sum(1 for k in range(1, len(ordinals)) if ordinals[k] <= max(ordinals[:k]))
    src = _source(path, path.name)
    issues: list[Any] = []
    drafts = codex.parse(src, issues)
    assert len(drafts) == 1
    cov = src.coverage.by_type()["line ordinal"]
    assert cov == {"modelled": len(recs) - late, "skipped": late} and late == 2
    assert [i.reason for i in issues if "ordinal" in i.reason] == [
        f"{late} line(s) carry an ordinal not above the previous line's (read in file order)"]


def test_new_record_types_are_known_and_not_context(tmp_path: Path) -> None:
    """world_state, token_usage_record, inter_agent_communication(_metadata), retained_context:
    each counted as skipped, none unknown, the run the same as without them."""
    path, lines = _remote_rollout(tmp_path)
    extra = [_line("world_state", {"full": True, "state": {"model": "gpt-5.5"}}),
             _line("token_usage_record", {"thread_id": "s1", "turn_id": "t1"}),
             _line("inter_agent_communication", {"author": "a", "recipient": "b", "text": "x"}),
             _line("inter_agent_communication_metadata", {"trigger_turn": True}),
             _line("retained_context", {"items": [_msg("user", "first task")]})]
    with_extra = tmp_path / "x" / path.name
    with_extra.parent.mkdir()
    with_extra.write_text("\n".join(lines[:4] + extra + lines[4:]) + "\n")
    src = _source(with_extra, path.name)
    issues: list[Any] = []
    drafts = codex.parse(src, issues)
    cov = src.coverage.by_type()
    for kind in ("world_state", "token_usage_record", "inter_agent_communication",
                 "inter_agent_communication_metadata", "retained_context"):
        assert cov[kind] == {"skipped": 1}, kind
    assert not any("unknown" in fates for fates in cov.values())
    plain = _tables(path, tmp_path).messages.to_pylist()
    assert drafts[0].messages["text"] == [m["text"] for m in plain]


@pytest.mark.parametrize("bad", [-5, 0, 12.5, "258400x", [258_400], True])
def test_a_window_or_limit_that_is_no_token_count_is_said_once_a_field_not_used(
        tmp_path: Path, bad: Any) -> None:
    """A token_count's window or limit that is no positive whole number (negative, zero, a
    fraction, a string, a list, a boolean) was dropped unsaid: the run read "window not
    recorded" with no warning.  Now one issue a field, at its first line, with how often; the
    run's window is what the other token_counts record; null stays "not recorded", unsaid."""
    path, lines = _remote_rollout(tmp_path)
    recs = [json.loads(x) for x in lines]
    usage_lines = [k for k, r in enumerate(recs) if r["payload"].get("type") == "token_count"]
    for k in usage_lines[:2]:
        recs[k]["payload"]["info"]["model_context_window"] = bad
        recs[k]["payload"]["info"]["auto_compact_token_limit"] = bad
    recs[usage_lines[2]]["payload"]["info"]["auto_compact_token_limit"] = None
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    parsed = parse_file(path, tmp_path, tokenizers=("o200k_base",))
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["recorded_window_tokens"] == 121_600  # the one token_count left intact
    assert run["recorded_compact_limit_tokens"] is None
    first = usage_lines[0] + 1  # (lines count from 1)
    said = sorted((i.line, i.reason) for i in parsed.issues
                  if "model_context_window" in i.reason or "auto_compact_token_limit" in i.reason)
    assert [line for line, _ in said] == [first, first]
    for name in ("model_context_window", "auto_compact_token_limit"):
        reason = next(r for _, r in said if name in r)
        assert f"token_count {name} is " in reason and "not a positive token count (2 time(s)" \
            in reason


def test_a_null_window_is_not_recorded_and_not_said(tmp_path: Path) -> None:
    path, lines = _remote_rollout(tmp_path)
    recs = [json.loads(x) for x in lines]
    for r in recs:
        if r["payload"].get("type") == "token_count":
            r["payload"]["info"]["model_context_window"] = None
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    parsed = parse_file(path, tmp_path, tokenizers=("o200k_base",))
    assert parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["recorded_window_tokens"] is None
    assert not [i for i in parsed.issues if "model_context_window" in i.reason]
