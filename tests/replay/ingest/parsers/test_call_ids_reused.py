"""A tool call that takes the id of an earlier call still waiting for its result: results pair
with the latest call of their id, so which call such a result answers is a guess, and the run
says so (``call_pairs.ids_reused_while_open``); an id used again after its result is no doubt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.call_pairs import call_issues, ids_reused_while_open

SAID = "take the id of an earlier call still waiting for its result"


def _chat(tmp_path: Path, name: str, ids: list[list[str]]) -> Path:
    """A chat dump: a task, then one assistant message per entry of ``ids`` calling read_file
    once per id in it (files a.py, b.py, ... in order), each followed by the results in
    order, then a final answer."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "fix it"}]
    n = 0
    for turn in ids:
        calls = []
        for cid in turn:
            calls.append({"id": cid, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"path": f"{chr(97 + n)}.py"})}})
            n += 1
        msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
        msgs += [{"role": "tool", "tool_call_id": c["id"], "content": f"body of {c['function']['arguments']}"}
                 for c in calls]
    msgs.append({"role": "assistant", "content": "done"})
    (tmp_path / name).write_text(json.dumps({"messages": msgs}))
    return tmp_path / name


def test_a_second_call_of_an_open_id_is_said(tmp_path: Path) -> None:
    """The repro: two calls ``call_0`` in one message, then their results: the first result
    (a.py's) was stored as b.py's, without a word."""
    parsed = parse_file(_chat(tmp_path, "a.json", [["call_0", "call_0"]]), tmp_path)
    said = [i.reason for i in parsed.issues if SAID in i.reason]
    assert len(said) == 1 and said[0].startswith("1 tool call(s)") and "'call_0'" in said[0]
    assert parsed.tables is not None
    rows = parsed.tables.messages.to_pylist()
    assert [r["path"] for r in rows if r["kind"] == "tool_call"] == ["a.py", "b.py"]


def test_an_id_used_again_after_its_result_is_not_said(tmp_path: Path) -> None:
    """Every turn's call ``call_0`` (a harness numbering its calls per turn) pairs each result
    with its own call: no doubt, nothing said; nor for distinct ids in one message."""
    for name, ids in (("again.json", [["call_0"], ["call_0"], ["call_0"]]),
                      ("two.json", [["call_0", "call_1"]])):
        parsed = parse_file(_chat(tmp_path, name, ids), tmp_path)
        assert parsed.tables is not None
        assert not [i for i in parsed.issues if SAID in i.reason], parsed.issues
        rows = parsed.tables.messages.to_pylist()
        calls = [r["path"] for r in rows if r["kind"] == "tool_call"]
        assert [r["path"] for r in rows if r["kind"] == "tool_result"] == calls


Event = tuple[str, str]  # (kind, call id)


def _reused_the_long_way(events: list[Event]) -> int:
    """Calls whose id's previous call has no result of that id between the two (independent of
    the set walk in call_pairs)."""
    n = 0
    for i, (kind, cid) in enumerate(events):
        if kind != "tool_call" or not cid:
            continue
        earlier = [j for j in range(i) if events[j] == ("tool_call", cid)]
        if earlier and ("tool_result", cid) not in events[earlier[-1] + 1:i]:
            n += 1
    return n


@given(st.lists(st.tuples(st.sampled_from(["tool_call", "tool_result", "text"]),
                          st.sampled_from(["", "a", "b", "c"])), max_size=30))
def test_the_count_matches_a_walk_back_from_each_call(events: list[Event]) -> None:
    kinds = [k for k, _ in events]
    ids = [c if k != "text" else "" for k, c in events]
    issue = ids_reused_while_open("f", kinds, ids, list(range(len(events))))
    expected = _reused_the_long_way([(k, c) for k, c in zip(kinds, ids)])
    assert (0 if issue is None else int(issue.reason.split()[0])) == expected
    # the run's checks skip the walk only when no id is given twice: never a reuse missed
    said = [i for i in call_issues("f", kinds, ids, list(range(len(events))), [])
            if SAID in i.reason]
    assert len(said) == (expected > 0)
