"""Codex ``thread_rolled_back``: the rolled-back turns stay in the rollout, but Codex rebuilds
the thread without them (``drop_last_n_user_turns`` in codex-rs), so the run must not carry
them into the context of later requests.  Counts are checked against that rule applied to the
raw items here, not through the parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file


def _line(kind: str, payload: dict[str, Any], sec: int) -> dict[str, Any]:
    return {"timestamp": f"2026-09-01T10:00:{sec:02d}.000Z", "type": kind, "payload": payload}


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _said(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}


def _usage(total: int) -> dict[str, Any]:
    last = {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 5}
    return {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": {
        "input_tokens": total, "cached_input_tokens": 0, "output_tokens": 5}}}


def _rollout(rolled: int) -> list[dict[str, Any]]:
    items: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": "019f0000-0000-7000-8000-000000000001", "cli_version": "0.146.0",
                          "base_instructions": {"text": "You are Codex."}}),
        ("response_item", _user("<environment_context>cwd=/repo</environment_context>")),
        ("response_item", _user("first task")),
        ("response_item", _said("done one")),
        ("event_msg", _usage(100)),
        ("response_item", _user("second task")),
        ("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                           "arguments": json.dumps({"command": ["cat", "big.log"]})}),
        ("event_msg", _usage(200)),
        ("response_item", {"type": "function_call_output", "call_id": "c1",
                           "output": "x" * 4000}),
        ("response_item", _said("done two")),
        ("event_msg", _usage(300)),
        ("event_msg", {"type": "thread_rolled_back", "num_turns": rolled}),
        ("response_item", _user("third task")),
        ("response_item", _said("done three")),
        ("event_msg", _usage(150)),
    ]
    return [_line(k, p, i) for i, (k, p) in enumerate(items)]


def _expected(lines: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(requests, tool calls, results) after Codex's own rule: at a rollback of N, truncate
    the history at the N-th last user turn start (at the first one when N is larger)."""
    history: list[dict[str, Any]] = []
    for rec in lines:
        p = rec["payload"]
        if rec["type"] == "response_item":
            history.append(p)
        elif p.get("type") == "thread_rolled_back" and p["num_turns"]:
            starts = [i for i, h in enumerate(history) if h.get("role") == "user"
                      and not h["content"][0]["text"].startswith("<environment_context>")]
            cut = starts[0] if p["num_turns"] >= len(starts) else starts[-p["num_turns"]]
            del history[cut:]
    requests, prev = 0, None
    for h in history:
        out = h.get("role") == "assistant" or h["type"] == "function_call"
        requests += out and not prev
        prev = out
    calls = sum(h["type"] == "function_call" for h in history)
    results = sum(h["type"] == "function_call_output" for h in history)
    return requests, calls, results


@pytest.mark.parametrize("rolled", [0, 1, 2, 9])
def test_rolled_back_turns_leave_the_run(tmp_path: Path, rolled: int) -> None:
    lines = _rollout(rolled)
    path = tmp_path / "rollout-2026-09-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "codex" and parsed.tables is not None
    run, *branches = parsed.tables.runs.to_pylist()
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == _expected(lines)
    # the rolled-back turns were paid for: their requests are a run of their own, linked to
    # the session's run, and every request of the rollout is counted once over the two
    recorded = sum(1 for r in lines if r["payload"].get("type") == "token_count")
    assert run["n_requests"] + sum(b["n_requests"] for b in branches) == recorded
    assert len(branches) == (rolled > 0)
    for b in branches:
        assert (b["parent_run_id"], b["agent"]) == (run["run_id"], "abandoned-1")
        own = [m for m in parsed.tables.messages.to_pylist() if m["run_id"] == b["run_id"]]
        assert "second task" in [m["text"] for m in own]
        assert "third task" not in [m["text"] for m in own]
    texts = [m["text"] for m in parsed.tables.messages.to_pylist()
             if m["run_id"] == run["run_id"]]
    assert ("second task" in texts) == (rolled == 0)
    assert ("first task" in texts) == (rolled < 2)
    assert "third task" in texts
    said = [i.reason for i in parsed.issues if "rolled back" in i.reason]
    assert len(said) == (rolled > 0), parsed.issues
    assert parsed.coverage["event_msg/thread_rolled_back"] == {"modelled": 1}


def test_a_bad_turn_count_is_said_and_rolls_nothing_back(tmp_path: Path) -> None:
    lines = _rollout(1)
    lines[11]["payload"]["num_turns"] = "one"
    path = tmp_path / "rollout-2026-09-01T10-00-00-019f0000-0000-7000-8000-000000000002.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["n_requests"] == 4
    assert any("num_turns 'one' is not a count" in i.reason for i in parsed.issues)


def test_rollbacks_past_the_most_branches_are_said_not_made(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollout of more rollbacks than ``MAX_BRANCHES`` (2 here): the first two are runs of
    their own, each later one's rolled-back requests are in no run, and its issue says so (a
    crafted rollout of 4,000 rollbacks was 4,000 copies of the run: 2.8 GB)."""
    from replay.ingest.parsers import codex_rollback

    monkeypatch.setattr(codex_rollback, "MAX_BRANCHES", 2)
    items: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": "019f0000-0000-7000-8000-000000000001", "cli_version": "0.146.0",
                          "base_instructions": {"text": "You are Codex."}})]
    for k in range(4):
        items += [("response_item", _user(f"task {k}")), ("response_item", _said(f"done {k}")),
                  ("event_msg", _usage(100 + k)),
                  ("event_msg", {"type": "thread_rolled_back", "num_turns": 1})]
    items += [("response_item", _user("last task")), ("response_item", _said("done")),
              ("event_msg", _usage(200))]
    path = tmp_path / "rollout-2026-09-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl"
    path.write_text("".join(json.dumps(_line(k, p, i % 60)) + "\n"
                            for i, (k, p) in enumerate(items)))
    parsed = parse_file(path, tokenizers=("o200k_base",))
    assert parsed.tables is not None
    assert parsed.tables.runs.column("agent").to_pylist() == ["", "abandoned-1", "abandoned-2"]
    rolled = [i.reason for i in parsed.issues if i.reason.startswith("thread_rolled_back")]
    assert len(rolled) == 4
    assert all("are the run abandoned-" in r for r in rolled[:2])
    assert all("are in no run (the rollout has more than 2 rollbacks" in r for r in rolled[2:])
