"""Which branch a Claude Code run follows when the leaves' timestamps are crafted: a timestamp
is read as the instant ISO-8601 names (``claude_code_newest``), one that cannot be read never
beats a well-formed one, and what the order had to decide is an issue — none on real logs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parsers import claude_code
from replay.ingest.parsers.claude_code_newest import moment_us
from replay.ingest.parsers.source import Issue, Source

_UNSET = object()
REPO = Path(__file__).resolve().parents[4]
_MISSING = "no readable timestamp"
_DECIDED = "the newest by timestamp, not the file's last leaf"


def _rec(kind: str, uuid: str, parent: str | None, text: str, ts: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"parentUuid": parent, "sessionId": "s", "version": "2.1.0",
                           "type": kind, "uuid": uuid}
    if kind == "user":
        rec["message"] = {"role": "user", "content": text}
    else:
        rec["message"] = {"id": f"msg_{uuid}", "model": "claude-x", "role": "assistant",
                          "content": [{"type": "text", "text": text}],
                          "usage": {"input_tokens": 3, "output_tokens": 5}}
    if ts is not _UNSET:
        rec["timestamp"] = ts
    return rec


def _session(tmp_path: Path, first_end: Any, last_end: Any) -> tuple[list[Issue], list[str]]:
    """A prompt and its answer, then two attempts from that answer (a rewind): the first
    attempt's reply (line 4) stamped ``first_end``, the second's (line 6) ``last_end``.  The
    issues and the texts of the run the parser takes as the session's (its first)."""
    lines = [
        _rec("user", "u1", None, "start", "2026-01-01T10:00:00.000Z"),
        _rec("assistant", "a1", "u1", "answer", "2026-01-01T10:01:00.000Z"),
        _rec("user", "u2a", "a1", "first attempt", "2026-01-01T10:02:00.000Z"),
        _rec("assistant", "a2a", "u2a", "reply A", first_end),
        _rec("user", "u2b", "a1", "second attempt", "2026-01-01T10:04:00.000Z"),
        _rec("assistant", "a2b", "u2b", "reply B", last_end),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())
    issues: list[Issue] = []
    drafts = claude_code.parse(src, issues)
    assert len(drafts) == 2  # the session's run and the abandoned branch's
    return issues, list(drafts[0].messages["text"])


_GOOD_A, _GOOD_B = "2026-01-01T10:03:00.000Z", "2026-01-01T10:05:00.000Z"
_UNREADABLE = ["zzz", "9999-99-99T99:99:99.999Z", "2026-01-01", "2026-01-01T10:03:00",
               "Thu, 01 Jan 2026 10:03:00 GMT", "2026-01-01 10:03:00Z", "", "２０２６-01-01T10:03:00Z",
               12345, 1.5e12, None, True, ["2026-01-01T10:03:00Z"], {"t": 1}, _UNSET]


def _ids(v: Any) -> str:
    return "missing" if v is _UNSET else repr(v)[:30]


@pytest.mark.parametrize("ts", _UNREADABLE, ids=_ids)
def test_an_unreadable_timestamp_earlier_in_the_file_does_not_win(tmp_path: Path,
                                                                  ts: Any) -> None:
    issues, texts = _session(tmp_path, ts, _GOOD_B)
    assert "reply B" in texts and "reply A" not in texts
    said = [i for i in issues if _MISSING in i.reason]
    assert [(i.line, _DECIDED in i.reason) for i in issues] == [(4, False)], issues
    assert "1 of 2 leaf records" in said[0].reason


@pytest.mark.parametrize("ts", _UNREADABLE, ids=_ids)
def test_an_unreadable_timestamp_last_in_the_file_does_not_win_and_the_choice_is_said(
        tmp_path: Path, ts: Any) -> None:
    issues, texts = _session(tmp_path, _GOOD_A, ts)
    assert "reply A" in texts and "reply B" not in texts
    assert sorted((i.line, _MISSING in i.reason, _DECIDED in i.reason) for i in issues) == [
        (4, False, True), (6, True, False)], issues


def test_a_far_future_timestamp_earlier_in_the_file_is_followed_and_said(tmp_path: Path) -> None:
    issues, texts = _session(tmp_path, "9999-12-31T23:59:59.999Z", _GOOD_B)
    assert "reply A" in texts and "reply B" not in texts  # well-formed: the timestamp decides
    decided = [i for i in issues if _DECIDED in i.reason]
    assert len(decided) == 1 and decided[0].line == 4
    assert "'9999-12-31T23:59:59.999Z'" in decided[0].reason and "line 6" in decided[0].reason
    # and the run's request stamped 9999 is a broken clock, no instant an idle gap is read from
    (clock,) = [i for i in issues if i not in decided]
    assert "1 of 2 request(s) timestamped outside 2000-2099 (first: request 1)" in clock.reason


def test_offsets_are_compared_as_instants_not_as_strings(tmp_path: Path) -> None:
    # 10:30+02:00 is 08:30Z, before 09:00Z; as strings "10:30" sorts after "09:00"
    issues, texts = _session(tmp_path, "2026-01-01T10:30:00.000+02:00", "2026-01-01T09:00:00Z")
    assert "reply B" in texts and "reply A" not in texts
    assert issues == []


def test_well_ordered_timestamps_say_nothing(tmp_path: Path) -> None:
    issues, texts = _session(tmp_path, _GOOD_A, _GOOD_B)
    assert "reply B" in texts and "reply A" not in texts
    assert issues == []


def test_both_unreadable_file_order_decides(tmp_path: Path) -> None:
    issues, texts = _session(tmp_path, "zzz", 7)
    assert "reply B" in texts and "reply A" not in texts
    assert len(issues) == 1 and "2 of 2 leaf records" in issues[0].reason
    assert "the file's last leaf is followed" in issues[0].reason


def test_a_hostile_timestamp_is_quoted_escaped_and_short(tmp_path: Path) -> None:
    ts = "\x1b[31m\u202e" + "z" * 500
    issues, _ = _session(tmp_path, _GOOD_A, ts)
    text = " ".join(i.reason for i in issues)
    assert "\x1b" not in text and "\u202e" not in text and "z" * 50 not in text


@pytest.mark.parametrize(("ts", "same_as"), [
    ("2026-02-11T21:46:25.781Z", "2026-02-11T22:46:25.781+01:00"),
    ("2026-02-11T21:46:25Z", "2026-02-11T21:46:25.000000Z"),
    ("2026-02-11T21:46:25.5Z", "2026-02-11T21:46:25.500Z"),
    ("0001-01-01T00:30:00+01:00", "0000-12-31T23:30:00Z"),  # (before year 1 in UTC: no error)
])
def test_moment_reads_iso_8601_as_claude_code_writes_it(ts: str, same_as: str) -> None:
    a = moment_us(ts)
    assert a is not None
    if same_as.startswith("0000"):
        assert a == moment_us("0001-01-01T00:00:00Z") - 30 * 60 * 1_000_000  # type: ignore[operator]
    else:
        assert a == moment_us(same_as)
    assert moment_us("2026-02-11T21:46:25.782Z") > moment_us("2026-02-11T21:46:25.781Z")  # type: ignore[operator]


@pytest.mark.parametrize("folder", [REPO.parent / "shared" / "logs-sample" / "claude-code",
                                    REPO / "tests" / "fixtures" / "claude_code"],
                         ids=["samples", "fixtures"])
def test_real_logs_say_nothing_of_their_leaves(folder: Path) -> None:
    files = sorted(folder.rglob("*.jsonl"))
    assert files
    for path in files:
        data = path.read_bytes()
        src = Source(path=str(path), rel=path.name, data=data,
                     sha256=hashlib.sha256(data).hexdigest())
        issues: list[Issue] = []
        claude_code.parse(src, issues)
        assert not [i for i in issues if _MISSING in i.reason or _DECIDED in i.reason], path


def test_timestamps_as_claude_code_writes_them_order_as_their_instants() -> None:
    """Leaves all stamped as Claude Code writes them are ordered by their strings (no instant
    read): the same order as by the instants, whatever the mix (days past the 28th read by
    ``moment_us``, a leap day, one stamped twice)."""
    from replay.ingest.parsers.claude_code_newest import newest_last
    from replay.ingest.parsers.claude_code_node import Node

    stamps = ["2026-02-11T21:46:25.781Z", "2024-02-29T00:00:00.000Z", "2026-01-31T23:59:59.999Z",
              "2026-02-11T21:46:25.780Z", "2025-12-31T23:59:59.999Z", "2026-02-11T21:46:25.781Z",
              "2026-02-01T00:00:00.000Z", "1999-07-15T12:00:00.001Z"]
    for k in range(len(stamps)):
        nodes = [Node(i + 1, f"u{i}", None, ts) for i, ts in enumerate(stamps[k:] + stamps[:k])]
        want = sorted(nodes, key=lambda n: (moment_us(n.ts), n.line))
        assert newest_last(nodes) == want
        assert newest_last(nodes[:-1] + [Node(99, "x", None, "zzz")])[0].line == 99
