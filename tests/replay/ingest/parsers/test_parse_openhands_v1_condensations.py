"""OpenHands V1 condensations (hand-made to the SDK's ``Condensation`` schema: no public one was
found): a harness compaction with or without its summary, the messages each keeps, forgotten ids
that are no event id, event ids repeated, the bound on what condensations keep in all; a
conversation without its base state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file


def _write(folder: Path, events: list[dict[str, Any]], usages: list[dict[str, Any]]) -> None:
    (folder / "events").mkdir(parents=True)
    for i, e in enumerate(events):
        (folder / "events" / f"event-{i:05d}-{e['id']}.json").write_text(json.dumps(e))
    (folder / "base_state.json").write_text(json.dumps({
        "id": "x", "agent": {"llm": {"model": "m"}, "kind": "Agent"},
        "execution_status": "finished",
        "stats": {"usage_to_metrics": {"agent": {"token_usages": usages}}}}))


def _eid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def _handmade(summary: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """System, a task, 3 terminal calls with results, a Condensation forgetting the first two
    calls and their results, one more call: hand-made, shaped as the SDK writes them."""
    ev: list[dict[str, Any]] = [
        {"id": _eid(0), "kind": "SystemPromptEvent", "source": "agent",
         "system_prompt": {"type": "text", "text": "You are OpenHands agent."}, "tools": []},
        {"id": _eid(1), "kind": "MessageEvent", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix it"}]}}]
    usages = []
    for k in range(4):
        rid = f"resp-{k}"
        if k == 3:
            cond: dict[str, Any] = {"id": _eid(len(ev)), "kind": "Condensation",
                                    "source": "environment", "llm_response_id": "cond-1",
                                    "forgotten_event_ids": [_eid(2), _eid(3), _eid(4), _eid(5)]}
            if summary is not None:
                cond.update(summary=summary, summary_offset=2)
            ev.append(cond)
        ev.append({"id": _eid(len(ev)), "kind": "ActionEvent", "source": "agent",
                   "thought": [{"type": "text", "text": f"step {k}"}], "tool_name": "terminal",
                   "tool_call_id": f"call-{k}", "llm_response_id": rid,
                   "tool_call": {"id": f"call-{k}", "name": "terminal",
                                 "arguments": json.dumps({"command": f"ls {k}"})}})
        ev.append({"id": _eid(len(ev)), "kind": "ObservationEvent", "source": "environment",
                   "tool_name": "terminal", "tool_call_id": f"call-{k}", "action_id": "a",
                   "observation": {"content": [{"type": "text", "text": f"out {k} " * 50}]}})
        usages.append({"prompt_tokens": 1000 + 100 * k, "completion_tokens": 10,
                       "cache_read_tokens": 0, "cache_write_tokens": 0, "response_id": rid})
    return ev, usages


def test_a_condensation_is_a_harness_compaction_with_its_summary(tmp_path: Path) -> None:
    events, usages = _handmade("USER_CONTEXT: fix it. COMPLETED: ls 0, ls 1.")
    _write(tmp_path / "c", events, usages)
    parsed = parse_file(tmp_path / "c", tmp_path)
    assert not parsed.issues, [str(i) for i in parsed.issues]
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert (run["n_harness_compactions"], run["n_requests"], run["n_tool_calls"]) == (1, 4, 4)
    rows = parsed.tables.messages.to_pylist()
    (ce,) = parsed.tables.events.to_pylist()
    summary = [r for r in rows if r["kind"] == "summary"]
    assert len(summary) == 1 and summary[0]["is_harness_summary"]
    assert summary[0]["msg"] == ce["summary_msg"] == ce["msg"]
    # kept: the system prompt, the task, the third call and its result (not the forgotten four)
    kept_roles = [next(r["role"] for r in rows if r["msg"] == m) for m in ce["preserved_msgs"]]
    assert kept_roles == ["system", "user", "assistant", "tool"]
    assert ce["preserved_msgs"] == [0, 1, 6, 7]


def test_a_condensation_without_summary_is_a_bare_compaction(tmp_path: Path) -> None:
    events, usages = _handmade(None)
    _write(tmp_path / "c", events, usages)
    parsed = parse_file(tmp_path / "c", tmp_path)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_harness_compactions"] == 1
    assert not [r for r in parsed.tables.messages.to_pylist() if r["kind"] == "summary"]
    (ce,) = parsed.tables.events.to_pylist()
    assert ce["summary_msg"] is None and ce["preserved_msgs"] == [0, 1, 6, 7]


@pytest.mark.parametrize("odd", [[7], [None, 3.5], [{"id": "x"}, ["y"], True]])
def test_forgotten_ids_that_are_no_event_ids_are_counted_and_said(tmp_path: Path,
                                                                 odd: list[Any]) -> None:
    """Entries of ``forgotten_event_ids`` that are not text name no event: they were dropped
    without a word. The text ids beside them still forget their events; the others are
    counted in one issue."""
    events, usages = _handmade(None)
    cond = next(e for e in events if e["kind"] == "Condensation")
    cond["forgotten_event_ids"] = [*cond["forgotten_event_ids"][:2], *odd,
                                   *cond["forgotten_event_ids"][2:]]
    _write(tmp_path / "c", events, usages)
    parsed = parse_file(tmp_path / "c", tmp_path)
    assert parsed.tables is not None
    (ce,) = parsed.tables.events.to_pylist()
    assert ce["preserved_msgs"] == [0, 1, 6, 7]  # the four text ids forgot the same as before
    said = [i.reason for i in parsed.issues if "forgotten_event_ids" in i.reason]
    noun = "entry" if len(odd) == 1 else "entries"
    expected = (f"{len(odd)} {noun} of a Condensation's forgotten_event_ids not an event id "
                "(not text): ignored, those events kept")
    assert said == [expected]


def test_a_run_without_base_state_has_unknown_usage(tmp_path: Path) -> None:
    events, usages = _handmade(None)
    _write(tmp_path / "c", events, usages)
    (tmp_path / "c" / "base_state.json").unlink()
    parsed = parse_file(tmp_path / "c", tmp_path)
    assert parsed.tables is not None
    reqs = parsed.tables.requests.to_pylist()
    assert len(reqs) == 4 and all(r["input_tokens"] is None for r in reqs)
    assert any("no readable base_state.json" in i.reason for i in parsed.issues)


def test_condensations_keeping_too_much_fail_the_file_not_the_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Condensation keeps every message not forgotten (its ``preserved_msgs``): a folder
    of 20,000 tiny events, every other one a Condensation forgetting nothing (~2 MB), kept
    10,000 lists of up to 10,000 messages: 42 s and 6.4 GB for its ingest (5,000 events: 3 s,
    0.5 GB), a crafted folder of 50,000 took the machine's memory.  Now the messages kept in
    all are bounded (``MAX_PRESERVED``, here made 50): over it the file fails with one line
    saying why, the rest of the batch goes on."""
    from replay.ingest.parsers import openhands_v1

    monkeypatch.setattr(openhands_v1, "MAX_PRESERVED", 50)
    folder = tmp_path / "conv"
    events: list[dict[str, Any]] = []
    for k in range(40):  # a message, then a condensation keeping every message so far
        events.append({"id": _eid(len(events)), "kind": "MessageEvent", "source": "user",
                       "llm_message": {"role": "user", "content": [{"type": "text",
                                                                    "text": f"m{k}"}]}})
        events.append({"id": _eid(len(events)), "kind": "Condensation", "source": "environment",
                       "forgotten_event_ids": [], "summary": "s"})
    _write(folder, events, [])
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is None
    # the k-th condensation keeps the k messages and k-1 summaries before it: 2k-1, k**2 in
    # all after k of them; over 50 at the 8th (49, then 64)
    why = ("openhands_v1 parser failed: OverflowError: the conversation's condensations keep "
           "over 50 messages in all (each keeps every message it does not forget): not read")
    assert [i.reason for i in parsed.issues] == [why]
    monkeypatch.setattr(openhands_v1, "MAX_PRESERVED", 64)
    assert parse_file(folder, folder.parent).tables is None
    folder8 = tmp_path / "conv8"
    _write(folder8, events[:16], [])  # 8 condensations: 1 + 3 + ... + 15 = 64, not over
    assert parse_file(folder8, folder8.parent).tables is not None



def test_an_event_id_repeated_is_said_and_forgotten_with_its_twin(tmp_path: Path) -> None:
    """Two events with one id are each read (the SDK's view keys events by id only when it
    forgets them): a Condensation forgetting that id forgets both, which the log's reader
    could not tell from the tables alone.  Said once, with the count; a log without repeats
    says nothing."""
    events, usages = _handmade(None)
    events[6]["id"] = events[2]["id"]  # the third call's event takes the first call's id
    events[7]["id"] = events[3]["id"]  # and its result the first result's
    _write(tmp_path / "c", events, usages)
    parsed = parse_file(tmp_path / "c", tmp_path)
    assert parsed.tables is not None
    (ce,) = parsed.tables.events.to_pylist()
    assert ce["preserved_msgs"] == [0, 1]  # the third call and its result forgotten too
    said = [i.reason for i in parsed.issues if "earlier event's id" in i.reason]
    why = ("2 event(s) with an earlier event's id: each read, as the SDK reads them; "
           "a Condensation forgetting that id forgets every one of them")
    assert said == [why]
    plain = tmp_path / "plain"
    _write(plain, *_handmade(None))
    assert not [i for i in parse_file(plain, tmp_path).issues if "earlier event" in i.reason]
