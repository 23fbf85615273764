"""Codex rollouts made messy on purpose: rollouts written into one file (each a run of its own,
a fork's copy of its parent still one run), a compacted line's fields and a token_count's info
of the wrong type (said once for the file, no phantom compaction).  Expected values come from
the files as parsed one by one, or from how the test made the input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "codex"
TOP = sorted(p.name for p in FIXTURES.glob("rollout-*.jsonl"))
TREE = FIXTURES / "sessions" / "2026" / "09" / "02"
PARENT = TREE / "rollout-2026-09-02T10-00-00-01a03000-0000-7000-8000-00000000000a.jsonl"
FORK = TREE / "rollout-2026-09-02T10-05-00-01a03000-0000-7000-8000-00000000000b.jsonl"
COMPACTIONS = FIXTURES / "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
_FACTS = ("n_messages", "n_requests", "n_tool_calls", "n_tool_results", "n_harness_compactions",
          "agent")


def _facts(parsed: ParsedFile) -> list[dict[str, Any]]:
    """Per run: its counts and its requests' recorded usage (what a merge would change)."""
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    requests = parsed.tables.requests.to_pylist()
    return [{**{k: run[k] for k in _FACTS},
             "usage": [(q["input_tokens"], q["cache_read_tokens"], q["output_tokens"])
                       for q in requests if q["run_id"] == run["run_id"]]}
            for run in parsed.tables.runs.to_pylist()]


def _alone(path: Path, tmp: Path) -> list[dict[str, Any]]:
    copy = tmp / f"alone-{path.name}"  # (beside no parent: as the concatenation's copy is)
    copy.write_bytes(path.read_bytes())
    return _facts(parse_file(copy, tmp))


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())


@pytest.mark.parametrize(("first", "second"), [
    (TOP[0], TOP[1]), (TOP[2], TOP[4]), (TOP[4], TOP[3]), (PARENT.name, FORK.name)])
def test_concatenated_rollouts_are_a_run_each(tmp_path: Path, first: str, second: str) -> None:
    a, b = (next(FIXTURES.rglob(name)) for name in (first, second))
    both = tmp_path / "rollout-2026-09-09T00-00-00-concat.jsonl"
    both.write_bytes(a.read_bytes().rstrip(b"\n") + b"\n" + b.read_bytes())
    parsed = parse_file(both, tmp_path)
    assert _facts(parsed) == _alone(a, tmp_path) + _alone(b, tmp_path)
    said = [i for i in parsed.issues if "session_meta line(s) of other sessions" in i.reason]
    assert [(i.line, i.reason.split(" ")[0]) for i in said] == [(_lines(a) + 1, "1")]
    assert parsed.coverage["session_meta"]["modelled"] == 2


def test_a_fork_is_still_one_run_with_its_parents_meta_skipped(tmp_path: Path) -> None:
    metas = sum('"session_meta"' in line for line in FORK.read_text().splitlines())
    assert metas == 2  # the fork's own, then its parent's (the copy of the parent's lines)
    parsed = parse_file(FORK, FIXTURES)
    assert len(_facts(parsed)) == 1
    assert parsed.coverage["session_meta"] == {"modelled": 1, "skipped": 1}
    assert not [i for i in parsed.issues if "other sessions" in i.reason]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(tmp: Path, records: list[dict[str, Any]]) -> Path:
    out = tmp / COMPACTIONS.name
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


@pytest.mark.parametrize("bad", ["oops", 5, {"type": "message"}])
def test_replacement_history_of_the_wrong_type_adds_no_compaction(tmp_path: Path,
                                                                   bad: Any) -> None:
    records = _records(COMPACTIONS)
    changed = []
    for no, r in enumerate(records, 1):
        if r["type"] == "compacted":
            r["payload"]["replacement_history"] = bad
            changed.append(no)
    expected = _facts(parse_file(COMPACTIONS, FIXTURES))[0]
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    run = _facts(parsed)[0]
    assert {k: run[k] for k in ("n_messages", "n_requests", "n_harness_compactions", "usage")} \
        == {k: expected[k] for k in ("n_messages", "n_requests", "n_harness_compactions",
                                     "usage")}
    said = [i for i in parsed.issues if "replacement_history is" in i.reason]
    assert [(i.line, i.reason) for i in said] == [(changed[0], (
        f"compacted: replacement_history is {type(bad).__name__}, not a list (read as if "
        f"absent) ({len(changed)} lines, the first here)"))]
    compacted = sum(parsed.coverage["compacted"].values())
    assert compacted == len(changed)  # every compacted line counted, once


def test_other_fields_of_the_wrong_type_are_said_once(tmp_path: Path) -> None:
    records = _records(COMPACTIONS)
    usage_lines, entry_lines = [], []
    for no, r in enumerate(records, 1):
        p = r["payload"]
        if r["type"] == "compacted":
            p["message"] = ["not", "text"]
            if "replacement_history_entries" in p:
                p["replacement_history_entries"] = "oops"
                entry_lines.append(no)
        elif p.get("type") == "token_count" and p.get("info") is not None:
            p["info"] = "oops"
            usage_lines.append(no)
    parsed = parse_file(_write(tmp_path, records), tmp_path)
    reasons = {i.reason.split(" (")[0]: i for i in parsed.issues}
    info = reasons["token_count info is str, not an object"]
    assert (info.line, info.reason.endswith(f"({len(usage_lines)} lines, the first here)")) \
        == (usage_lines[0], True)
    assert parsed.coverage["event_msg/token_count (info not an object)"] == {
        "skipped": len(usage_lines)}
    assert reasons["compacted: replacement_history_entries is str, not a list"].line \
        == entry_lines[0]
    assert "compacted: message is list, not a string" in reasons
    run = _facts(parsed)[0]
    assert run["usage"] == [(None, None, None)] * run["n_requests"]  # no usage read from "oops"
    assert not [i for i in parsed.issues if "record skipped" in i.reason]


def test_a_line_that_cannot_be_read_is_counted_in_coverage(tmp_path: Path) -> None:
    """A line the walk refuses (a message of an unknown role, a payload that is no object) was
    one issue and in no coverage count: `replay runs` accounted for fewer lines than the file
    had. It is now counted as '<type> (not read)' unknown, beside its issue."""
    path = COMPACTIONS
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    messages = [r for r in lines if r.get("type") == "response_item"
                and r["payload"].get("type") == "message"]
    for r in messages[:2]:
        r["payload"]["role"] = "robot"
    lines.append({"timestamp": "2026-09-01T09:00:00Z", "type": "event_msg", "payload": "oops"})
    bad = tmp_path / path.name
    bad.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    plain, got = parse_file(path, FIXTURES, tokenizers=()), parse_file(bad, tmp_path, tokenizers=())
    assert got.coverage["response_item (not read)"] == {"unknown": 2}
    assert got.coverage["event_msg (not read)"] == {"unknown": 1}
    total = [sum(n for fates in p.coverage.values() for n in fates.values()) for p in (plain, got)]
    assert total[1] - total[0] == 1  # one line more, each line counted once
    assert sum("(record skipped)" in i.reason for i in got.issues) == 3


def test_a_repeated_item_is_counted_in_coverage_as_skipped(tmp_path: Path, samples: Path) -> None:
    """A real rollout with every line written twice: each repeat of an item with an identity
    (a call, an output, a reasoning item) is skipped with an issue, and was in no coverage count
    (`replay runs` accounted for 1,128 of the 1,405 records). Each is now counted as skipped
    under its own type: the response_item lines the file holds, counted here with json, are
    the response_item records its coverage accounts for."""
    path = next((samples / "codex").glob("rollout-2026-02-23T12-40-23-*.jsonl"))
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    doubled = tmp_path / path.name
    doubled.write_text("".join(f"{x}\n{x}\n" for x in lines), encoding="utf-8")
    got = parse_file(doubled, tmp_path, tokenizers=())
    items = Counter(f"response_item/{json.loads(x)['payload']['type']}" for x in lines
                    if json.loads(x)["type"] == "response_item")
    counted = {t: sum(fates.values()) for t, fates in got.coverage.items() if t in items}
    assert counted == {t: 2 * n for t, n in items.items()}
    repeats = [i for i in got.issues if i.reason.startswith("duplicate of the ")]
    assert repeats and sum(f.get("skipped", 0) for t, f in got.coverage.items()
                           if t in items) == len(repeats)
