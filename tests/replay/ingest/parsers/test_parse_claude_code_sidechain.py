"""Claude Code before the ``subagents/`` folder wrote each Task subagent's conversation inline,
in the session file, as records with ``isSidechain: true`` (the first one without a parent).
Those are model calls too: each subagent becomes its own run, linked to the session's run,
and the session's own run keeps exactly its own records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.ingest.parse_file import parse_file

SID = "5e551011-0000-4000-8000-000000000001"


def _rec(kind: str, uuid: str, parent: str | None, content: Any, *, side: bool = False,
         msg_id: str = "", usage: dict[str, int] | None = None,
         agent: str = "", ts: int = 0) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SID,
                           "isSidechain": side, "userType": "external", "version": "1.0.98",
                           "timestamp": f"2025-08-01T10:00:{ts:02d}Z"}
    if agent:
        rec["agentId"] = agent
    if kind == "user":
        rec["message"] = {"role": "user", "content": content}
    else:
        rec["message"] = {"id": msg_id, "role": "assistant", "model": "claude-sonnet-4",
                          "content": content, "usage": usage or {}}
    return rec


def _use(call: str, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call, "name": name, "input": args}]


def _result(call: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call, "content": text}]


def _session() -> list[dict[str, Any]]:
    """A session whose model sends two Task calls; subagent A answers after one Read, B at
    once (B names its agent, A does not, as in the oldest files)."""
    u = {"input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 5}
    return [
        _rec("user", "m1", None, "look at the repo", ts=1),
        _rec("assistant", "m2", "m1", _use("task_a", "Task", {"prompt": "find the bug"}) +
             _use("task_b", "Task", {"prompt": "list the tests"}), msg_id="msg_main1", usage=u,
             ts=2),
        _rec("user", "a1", None, "find the bug", side=True, ts=3),
        _rec("user", "b1", None, "list the tests", side=True, agent="b7", ts=4),
        _rec("assistant", "a2", "a1", _use("r1", "Read", {"file_path": "x.py"}), side=True,
             msg_id="msg_a1", usage={"input_tokens": 900, "output_tokens": 3}, ts=5),
        _rec("assistant", "b2", "b1", [{"type": "text", "text": "tests: t1, t2"}], side=True,
             msg_id="msg_b1", usage={"input_tokens": 700, "output_tokens": 4}, agent="b7",
             ts=6),
        _rec("user", "a3", "a2", _result("r1", "def f(): return 1/0"), side=True, ts=7),
        _rec("assistant", "a4", "a3", [{"type": "text", "text": "division by zero"}],
             side=True, msg_id="msg_a2", usage={"input_tokens": 950, "output_tokens": 6},
             ts=8),
        _rec("user", "m3", "m2", _result("task_a", "division by zero") +
             _result("task_b", "tests: t1, t2"), ts=9),
        _rec("assistant", "m4", "m3", [{"type": "text", "text": "fixed"}], msg_id="msg_main2",
             usage=u, ts=10),
    ]


def _count(recs: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Independent count: per conversation (main, or the root uuid of a sidechain), the
    distinct assistant message ids and the tool_use blocks."""
    root: dict[str, str] = {}
    out: dict[str, dict[str, int]] = {}
    for r in recs:
        key = "main"
        if r["isSidechain"]:
            key = root.setdefault(r["uuid"], root.get(r["parentUuid"] or "", r["uuid"]))
        c = out.setdefault(key, {"requests": 0, "calls": 0})
        if r["type"] == "assistant":
            c["requests"] += 1
            c["calls"] += sum(b["type"] == "tool_use" for b in r["message"]["content"])
    return out


def test_inline_subagents_are_their_own_runs_linked_to_the_session(tmp_path: Path) -> None:
    recs = _session()
    path = tmp_path / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "claude_code" and parsed.tables is not None
    runs = parsed.tables.runs.to_pylist()
    expected = _count(recs)
    assert len(runs) == len(expected) == 3
    main, *subs = runs
    assert (main["n_requests"], main["n_tool_calls"]) == (
        expected["main"]["requests"], expected["main"]["calls"])
    assert main["parent_run_id"] == "" and main["agent"] == ""
    by_agent = {r["agent"]: r for r in subs}
    assert set(by_agent) == {"b7", "sidechain-1"}
    a = next(r for k, r in by_agent.items() if k != "b7")
    assert (a["n_requests"], a["n_tool_calls"]) == (expected["a1"]["requests"],
                                                    expected["a1"]["calls"])
    assert (by_agent["b7"]["n_requests"], by_agent["b7"]["n_tool_calls"]) == (
        expected["b1"]["requests"], expected["b1"]["calls"])
    assert all(r["parent_run_id"] == main["run_id"] for r in subs)
    assert not any("off the conversation path" in k for k in parsed.coverage), parsed.coverage
    requests = parsed.tables.requests.to_pylist()
    assert sum(r["input_tokens"] for r in requests) == sum(
        sum(r["message"]["usage"].get(k, 0) for k in ("input_tokens", "cache_read_input_tokens"))
        for r in recs if r["type"] == "assistant")


def test_a_subagent_file_is_still_one_run(tmp_path: Path) -> None:
    """In a ``subagents/agent-*.jsonl`` file every record is a sidechain: one run, as before."""
    recs = [r for r in _session() if r["isSidechain"] and not r.get("agentId")]
    folder = tmp_path / SID / "subagents"
    folder.mkdir(parents=True)
    path = folder / "agent-a1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    [run] = parsed.tables.runs.to_pylist()
    assert (run["n_requests"], run["agent"]) == (2, "a1")
