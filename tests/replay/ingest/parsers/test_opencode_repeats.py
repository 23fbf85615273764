"""OpenCode: repeated message and part ids are read once and said; parts without ids are read
as the step they make, each counted in the test from how the input was made (the real 1.1.34
export, its parts listed out of id order)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from replay.ingest.parsers import opencode
from replay.ingest.parsers.source import Issue, Source

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "opencode" \
    / "agentlogs-all-tools.export.json"


def _parse(doc: dict[str, Any]) -> tuple[Any, list[Issue], dict[str, dict[str, int]]]:
    data = json.dumps(doc, indent=1).encode()
    src = Source(path="s.json", rel="s.json", data=data, sha256=hashlib.sha256(data).hexdigest())
    issues: list[Issue] = []
    (draft,) = opencode.parse(src, issues)
    return draft, issues, src.coverage.by_type()


def _steps(doc: dict[str, Any]) -> list[int]:
    """The full prompt of each step, in id order (OpenCode's: time order), from its
    step-finish: uncached input plus cache reads and writes."""
    out = []
    for m in doc["messages"]:
        for p in sorted(m["parts"], key=lambda p: p["id"]):
            if p["type"] == "step-finish":
                t = p["tokens"]
                out.append(t["input"] + t["cache"]["read"] + t["cache"]["write"])
    return out


def _rows(draft: Any) -> list[tuple[str, str, str]]:
    m = draft.messages
    return list(zip(m["role"], m["kind"], m["text"]))


def test_an_export_listed_twice_is_read_once() -> None:
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    whole, none, _ = _parse(doc)
    assert none == []
    n_messages = len(doc["messages"])
    n_parts = sum(len(m["parts"]) for m in doc["messages"])
    roles = [m["info"]["role"] for m in doc["messages"]]
    twice = {**doc, "messages": doc["messages"] + copy.deepcopy(doc["messages"])}
    draft, issues, cov = _parse(twice)
    assert draft.requests["input_tokens"] == _steps(doc)  # 14 steps, not 28
    assert _rows(draft) == _rows(whole)
    assert [i.reason for i in issues] == [
        (f"{n_messages} message(s) repeat the id of an earlier message (first "
        f"messages[{n_messages}]; the first copy is kept, the repeats skipped)")]
    items = [no for no, line in enumerate(json.dumps(twice, indent=1).splitlines(), 1)
             if line == "  {"]  # (an item of messages[]: the one array at that depth)
    assert len(items) == 2 * n_messages and issues[0].line == items[n_messages]
    for role in ("user", "assistant"):
        assert cov[f"message/{role} (repeated id)"] == {"skipped": roles.count(role)}
    assert cov["part (of a repeated message)"] == {"skipped": n_parts}
    total = sum(n for fates in cov.values() for n in fates.values())
    assert total - sum(sum(f.values()) for t, f in _parse(doc)[2].items()) \
        == n_messages + n_parts  # every repeat counted once, nothing else changed


def test_a_part_listed_twice_is_read_once() -> None:
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    whole, _, _ = _parse(doc)
    dup = copy.deepcopy(doc)
    target = next(k for k, m in enumerate(dup["messages"])
                  if any(p["type"] == "tool" for p in m["parts"]))
    tools = [p for p in dup["messages"][target]["parts"] if p["type"] in ("tool", "step-finish")]
    dup["messages"][target]["parts"] += copy.deepcopy(tools)
    draft, issues, cov = _parse(dup)
    assert draft.requests["input_tokens"] == _steps(doc)
    assert _rows(draft) == _rows(whole)
    assert [i.reason for i in issues] == [
        (f"{len(tools)} part(s) repeat the id of an earlier part (first in messages[{target}]; "
        "the first copy is kept, the repeats skipped)")]
    assert cov["part/tool (repeated id)"] == {"skipped": 1}
    assert cov["part/step-finish (repeated id)"] == {"skipped": 1}


def test_parts_without_ids_are_read_as_their_step() -> None:
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    whole, _, _ = _parse(doc)
    noid = copy.deepcopy(doc)
    for m in noid["messages"]:
        for p in m["parts"]:
            p.pop("id")
    several = sum(1 for m in doc["messages"] if len(m["parts"]) > 1)
    draft, issues, cov = _parse(noid)
    assert draft.requests["input_tokens"] == _steps(doc)  # 14 requests, each with its usage
    assert None not in draft.requests["input_tokens"]
    assert _rows(draft) == _rows(whole)  # each part's start time gives the order of the step
    assert [i.reason for i in issues] == [
        (f"{several} message(s) have parts without an id, so their order is not known (first "
        f"messages[1]): {several} of one step read as step-start, its parts in the order of "
        "their start times (else of the file), step-finish")]
    assert "message/parts out of id order (read in id order)" not in cov


def test_several_steps_without_ids_are_read_in_file_order() -> None:
    step = [{"type": "step-start"}, {"type": "text", "text": "a"},
            {"type": "step-finish", "tokens": {"input": 5, "output": 1, "reasoning": 0,
                                               "cache": {"read": 0, "write": 0}}}]
    doc = {"info": {"id": "ses_x"}, "messages": [
        {"info": {"id": "msg_1", "role": "user"}, "parts": [{"type": "text", "text": "hi"}]},
        {"info": {"id": "msg_2", "role": "assistant"},
         "parts": copy.deepcopy(step) + copy.deepcopy(step) + copy.deepcopy(step)}]}
    draft, issues, _ = _parse(doc)
    assert draft.requests["input_tokens"] == [5, 5, 5]
    assert [i.reason for i in issues] == [
        ("1 message(s) have parts without an id, so their order is not known (first "
        "messages[1]): 1 of several steps read in file order")]
