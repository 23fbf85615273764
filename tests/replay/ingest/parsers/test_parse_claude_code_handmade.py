"""Claude Code transcript parser on hand-made transcripts: conversation-order rules (streamed
responses, rewound branches, broken chains, subagents without their parent) and bad input
(malformed, truncated and wrongly typed lines, empty files, the run's model)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import claude_code
from replay.ingest.parsers.source import Issue, Source
from tests.claude_code_raw import first_run_id

# ---- hand-made transcripts -------------------------------------------------------------------

def _user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": parent, "sessionId": "s", "version": "9.9.9", "type": "user",
            "message": {"role": "user", "content": content}, "uuid": uuid,
            "timestamp": f"2026-01-01T00:00:{len(uuid):02d}Z", **extra}


def _asst(uuid: str, parent: str | None, mid: str, block: dict[str, Any], out: int = 5,
          model: str = "claude-x") -> dict[str, Any]:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100,
             "output_tokens": out}
    return {"parentUuid": parent, "sessionId": "s", "version": "9.9.9", "type": "assistant",
            "message": {"id": mid, "model": model, "role": "assistant", "content": [block],
                        "usage": usage}, "uuid": uuid, "timestamp": "2026-01-01T00:01:00Z"}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


Rows = list[dict[str, Any]]


def _parse(path: Path, runs: int = 1, which: int = 0
           ) -> tuple[list[Issue], dict[str, Any], Rows, Rows]:
    issues: list[Issue] = []
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())
    drafts = claude_code.parse(src, issues)
    assert len(drafts) == runs
    d = drafts[which]
    msgs = [dict(zip(d.messages, row)) for row in zip(*d.messages.values())]
    reqs = [dict(zip(d.requests, row)) for row in zip(*d.requests.values())]
    return issues, d.run, msgs, reqs


def _texts(msgs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(m["role"], m["kind"], m["text"]) for m in msgs]


def test_streamed_response_with_parallel_tools(tmp_path: Path) -> None:
    call = {"type": "tool_use", "name": "Read"}
    lines = [
        _user("u1", None, "go"),
        _asst("a1", "u1", "m1", {"type": "thinking", "thinking": "hmm"}, out=1),
        _asst("a2", "a1", "m1", {**call, "id": "t1", "input": {"file_path": "/a.py"}}, out=2),
        {"type": "progress", "uuid": "p1", "parentUuid": "a2", "sessionId": "s"},
        _user("r1", "a2", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
        _asst("a3", "r1", "m1", {**call, "id": "t2", "input": {"file_path": "/b.py"}}, out=42),
        _user("r2", "a3", [{"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                            "content": [_text("B1"), _text("B2")]}]),
        _asst("a4", "r2", "m2", _text("done"), out=7),
    ]
    issues, run, msgs, reqs = _parse(_write(tmp_path / "s.jsonl", lines))
    assert issues == []
    assert _texts(msgs) == [("user", "text", "go"), ("assistant", "reasoning", "hmm"),
                            ("assistant", "tool_call", '{"file_path": "/a.py"}'),
                            ("assistant", "tool_call", '{"file_path": "/b.py"}'),
                            ("tool", "tool_result", "A"), ("tool", "tool_result", "B1\nB2"),
                            ("assistant", "text", "done")]
    assert [m["is_error"] for m in msgs if m["kind"] == "tool_result"] == [False, True]
    assert [(q["output_msg"], q["input_tokens"], q["cache_read_tokens"], q["cache_write_tokens"],
             q["output_tokens"]) for q in reqs] == [(1, 113, 100, 10, 42), (4, 113, 100, 10, 7)]
    assert run["harness"] == "claude-code 9.9.9" and run["model"] == "claude-x"


def test_rewound_branch_is_a_run_of_its_own_and_compaction_bridged(tmp_path: Path) -> None:
    boundary = {"parentUuid": None, "logicalParentUuid": "a3", "type": "system",
                "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "b1",
                "sessionId": "s"}
    lines = [
        _user("u1", None, "first"),
        _asst("a1", "u1", "m1", _text("ok")),
        _user("u2", "a1", "abandoned prompt"),
        _asst("a2", "u2", "m2", _text("abandoned answer")),
        _user("u3", "a1", "edited prompt"),
        _asst("a3", "u3", "m3", _text("answer")),
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        boundary,
        _user("s1", "b1", "SUMMARY", isCompactSummary=True),
        _user("u4", "s1", [_text("next"), {"type": "image", "source": {}}], isMeta=True),
        _asst("a4", "u4", "m4", _text("fin")),
    ]
    path = _write(tmp_path / "s.jsonl", lines)
    issues, run, msgs, reqs = _parse(path, runs=2)
    assert issues == []
    assert _texts(msgs) == [("user", "text", "first"), ("assistant", "text", "ok"),
                            ("user", "text", "edited prompt"), ("assistant", "text", "answer"),
                            ("user", "summary", "SUMMARY"), ("user", "text", "next"),
                            ("user", "image", "[image]"), ("assistant", "text", "fin")]
    assert run["n_harness_compactions"] == 1 and len(reqs) == 3
    assert [m["is_harness_summary"] for m in msgs].count(True) == 1
    # the abandoned branch was paid for: a run of its own, linked to the session's run, whose
    # context is the chain up to its answer and whose one request is the abandoned answer
    _, branch, bmsgs, breqs = _parse(path, runs=2, which=1)
    assert branch["parent_run_id"] == run["run_id"] and branch["agent"] == "abandoned-1"
    assert _texts(bmsgs) == [("user", "text", "first"), ("assistant", "text", "ok"),
                             ("user", "text", "abandoned prompt"),
                             ("assistant", "text", "abandoned answer")]
    assert [r["output_msg"] for r in breqs] == [3]


def test_broken_chain_falls_back_to_file_order(tmp_path: Path) -> None:
    lines = [_user("u1", "outside-1", "hook context", isMeta=True),
             _user("u2", "outside-2", "prompt"),
             _asst("a1", "u2", "m1", _text("answer"), model="<synthetic>")]
    issues, run, msgs, reqs = _parse(_write(tmp_path / "s.jsonl", lines))
    assert issues == []
    assert [m["text"] for m in msgs] == ["hook context", "prompt", "answer"]
    assert reqs == [] and run["model"] == ""  # a <synthetic> record is no model call


def test_subagent_without_parent_file(tmp_path: Path) -> None:
    lines = [{**_user("u1", None, "task"), "agentId": "abc", "isSidechain": True},
             {**_asst("a1", "u1", "m1", _text("r")), "agentId": "abc", "isSidechain": True}]
    sub = _write(tmp_path / "sess" / "subagents" / "agent-abc.jsonl", lines)
    _, run, _, _ = _parse(sub)
    assert run["parent_run_id"] == "" and run["agent"] == "abc"
    parent = _write(tmp_path / "sess.jsonl", [_user("p1", None, "hi")])
    _, run, _, _ = _parse(sub)
    assert run["parent_run_id"] == first_run_id(hashlib.sha256(parent.read_bytes()).hexdigest(),
                                           parent.name)


# ---- bad input -------------------------------------------------------------------------------

def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    lines = [_user("u1", None, "go"), '{"type": "user", "broken',
             _asst("a1", "u1", "m1", _text("ok"))]
    issues, _run, msgs, reqs = _parse(_write(tmp_path / "s.jsonl", lines))
    assert [(i.line, "malformed JSON" in i.reason) for i in issues] == [(2, True)]
    assert [m["text"] for m in msgs] == ["go", "ok"] and len(reqs) == 1


def test_truncated_last_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl",
                  [_user("u1", None, "go"), _asst("a1", "u1", "m1", _text("ok"))])
    path.write_bytes(path.read_bytes() + b'{"type": "assistant", "mess')
    issues, _run, msgs, reqs = _parse(path)
    assert [(i.line, "incomplete last line" in i.reason) for i in issues] == [(3, True)]
    assert [m["text"] for m in msgs] == ["go", "ok"] and len(reqs) == 1


def test_wrong_typed_fields_are_reported_and_skipped(tmp_path: Path) -> None:
    bad_content = _asst("a2", "a1", "m2", _text("x"))
    bad_content["message"]["content"] = 42
    bad_input = _asst("a3", "a1", "m3", {"type": "tool_use", "id": "t", "name": "X", "input": 7})
    bad_usage = _asst("a4", "a1", "m4", _text("y"))
    bad_usage["message"]["usage"] = "lots"
    lines = [_user("u1", None, "go"), _asst("a1", "u1", "m1", _text("ok")), bad_content,
             bad_input, bad_usage,
             {"type": "user", "uuid": "u9", "parentUuid": "a1", "message": "hi"},
             _user("u2", "a1", [{"type": "tool_result", "tool_use_id": 5, "content": "r"}]),
             _asst("a5", "a1", "m5", _text("end"))]
    issues, _run, msgs, reqs = _parse(_write(tmp_path / "s.jsonl", lines))
    by_line = {i.line: i.reason for i in issues}
    assert sorted(by_line) == [3, 4, 5, 6, 7]
    assert "message.content is int" in by_line[3]
    assert "input is int" in by_line[4]
    assert "message.usage is str" in by_line[5]
    assert "no 'message' object" in by_line[6]
    assert "'tool_use_id' is int" in by_line[7]
    assert all(str(i).startswith(f"{tmp_path / 's.jsonl'}:{i.line}: ") for i in issues)
    assert [m["text"] for m in msgs] == ["go", "ok", "end"] and len(reqs) == 2


def test_empty_and_trafficless_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    parsed = parse_file(empty, tmp_path, fmt="claude_code")
    assert parsed.tables is None and [i.line for i in parsed.issues] == [0]
    only_meta = _write(tmp_path / "meta.jsonl", [{"type": "file-history-snapshot", "messageId": "m",
                                                  "snapshot": {}}])
    issues: list[Issue] = []
    data = only_meta.read_bytes()
    src = Source(path=str(only_meta), rel="meta.jsonl", data=data, sha256="0" * 64)
    assert claude_code.parse(src, issues) == []
    # a file of nothing but metadata records holds no conversation: said, not a problem
    assert issues == [] and src.coverage.no_conversation == "only file-history-snapshot x1 records"
    odd = _write(tmp_path / "odd.jsonl", [{"type": "file-history-snapshot", "messageId": "m",
                                           "snapshot": {}}, {"type": "brand-new"}])
    src = Source(path=str(odd), rel="odd.jsonl", data=odd.read_bytes(), sha256="0" * 64)
    assert claude_code.parse(src, issues) == []
    assert [(i.line, i.reason) for i in issues] == [(0, "no user or assistant records")]


@pytest.mark.parametrize(("models", "want"), [
    (["m-b", "m-a", "m-a", "m-b"], "m-b"),  # a tie: the first answered
    (["m-b", "m-a", "m-a"], "m-a"),
    (["<synthetic>", "m-a"], "m-a"),  # the harness's own: no model call
])
def test_the_run_model_is_the_one_that_answered_most(tmp_path: Path, models: list[str],
                                                      want: str) -> None:
    """The run's model is the model of most of its responses; of models answering as often,
    the one that answered first (``Counter.most_common``'s order)."""
    lines: list[Any] = [_user("u0", None, "hi")]
    for k, model in enumerate(models, 1):
        lines.append(_asst(f"a{k}", lines[-1]["uuid"], f"msg_{k}", _text("ok"), model=model))
    _, run, _, reqs = _parse(_write(tmp_path / "s.jsonl", lines))
    assert run["model"] == want
    assert [r["model"] for r in reqs] == [m for m in models if m != "<synthetic>"]
