"""Claude Code transcript parser: real samples checked against facts counted from the raw JSONL,
conversation-order rules on hand-made transcripts, and bad input."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.discover import LOG_SUFFIXES
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import claude_code, detect_format
from replay.ingest.parsers.source import Issue, Source

SAMPLE_FILES = (
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl",
    "short.jsonl",
    "subagent.jsonl",
    "tool_heavy.jsonl",
)


@cache
def _parsed(path: str) -> ParsedFile:
    p = Path(path)
    return parse_file(p, p.parent)


def _raw(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _rows(parsed: ParsedFile) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    runs = parsed.tables.runs.to_pylist()
    assert len(runs) == 1
    return runs[0], parsed.tables.messages.to_pylist(), parsed.tables.requests.to_pylist()


def test_sample_list_is_complete(samples: Path) -> None:
    root = samples / "claude-code"
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jsonl"))
    assert found == sorted(SAMPLE_FILES)


@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_sample_matches_raw_counts(samples: Path, rel: str) -> None:
    path = samples / "claude-code" / rel
    recs = _raw(path)
    last_of: dict[str, dict[str, Any]] = {}  # message.id -> last record (insertion = first seen)
    calls: dict[str, tuple[str, Any]] = {}
    n_results = n_boundaries = 0
    for r in recs:
        content = (r.get("message") or {}).get("content")
        if r["type"] == "assistant":
            last_of[r["message"]["id"]] = r
            for b in content:
                if b["type"] == "tool_use":
                    calls.setdefault(b["id"], (b["name"], b["input"]))
        elif r["type"] == "user" and isinstance(content, list):
            n_results += sum(b["type"] == "tool_result" for b in content)
        elif r["type"] == "system" and r.get("subtype") == "compact_boundary":
            n_boundaries += 1
    usages = [r["message"]["usage"] for r in last_of.values()]
    full = [u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
            for u in usages]

    run, msgs, reqs = _rows(_parsed(str(path)))
    assert not _parsed(str(path)).issues
    assert run["n_requests"] == len(reqs) == len(last_of)
    assert [q["input_tokens"] for q in reqs] == full
    assert [q["cache_read_tokens"] for q in reqs] == [u["cache_read_input_tokens"] for u in usages]
    assert [q["cache_write_tokens"] for q in reqs] == \
        [u["cache_creation_input_tokens"] for u in usages]
    assert [q["output_tokens"] for q in reqs] == [u["output_tokens"] for u in usages]
    assert run["recorded_input_tokens"] == sum(full)
    assert run["recorded_output_tokens"] == sum(u["output_tokens"] for u in usages)
    assert [q["model"] for q in reqs] == [r["message"]["model"] for r in last_of.values()]
    models = Counter(r["message"]["model"] for r in last_of.values())
    assert run["model"] == models.most_common(1)[0][0]
    version = next(r["version"] for r in recs if r.get("version"))
    assert run["harness"] == f"claude-code {version}"

    call_rows = [m for m in msgs if m["kind"] == "tool_call"]
    assert run["n_tool_calls"] == len(call_rows) == len(calls)
    assert [(m["call_id"], m["tool"], json.loads(m["text"])) for m in call_rows] == \
        [(cid, name, args) for cid, (name, args) in calls.items()]
    result_rows = [m for m in msgs if m["kind"] == "tool_result"]
    assert run["n_tool_results"] == len(result_rows) == n_results
    assert run["n_orphan_results"] == 0
    for res in result_rows:  # exactly one earlier call with the same id
        earlier = [c for c in call_rows if c["call_id"] == res["call_id"]
                   and (c["msg"], c["block"]) < (res["msg"], res["block"])]
        assert len(earlier) == 1
        assert res["role"] == "tool"

    summaries = [m for m in msgs if m["kind"] == "summary"]
    assert all(m["is_harness_summary"] for m in summaries)
    if Path(rel).name.startswith("agent-acompact-"):
        # the run is the compaction request: its answer is a plain response here (the session's
        # own boundary counts the compaction, once)
        answer = [b["text"] for r in recs if r["type"] == "assistant"
                  for b in r["message"]["content"] if b["type"] == "text"]
        assert run["n_harness_compactions"] == len(summaries) == 0 and len(last_of) == 1
        assert [m["text"] for m in msgs if m["role"] == "assistant" and m["kind"] == "text"] \
            == answer
    else:
        compact_texts = [r["message"]["content"] for r in recs if r.get("isCompactSummary")]
        assert run["n_harness_compactions"] == len(summaries) == n_boundaries == len(compact_texts)
        assert [m["text"] for m in summaries] == compact_texts


@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_sample_message_order_is_file_order(samples: Path, rel: str) -> None:
    """One message per user record / per response (at its first record), in file order."""
    path = samples / "claude-code" / rel
    expected: list[tuple[str, str]] = []
    seen: set[str] = set()
    for r in _raw(path):
        if r["type"] == "assistant" and r["message"]["id"] not in seen:
            seen.add(r["message"]["id"])
            expected.append(("assistant", r["timestamp"]))
        elif r["type"] == "user":
            content = r["message"]["content"]
            tool = isinstance(content, list) and any(b["type"] == "tool_result" for b in content)
            expected.append(("tool" if tool else "user", r["timestamp"]))
    run, msgs, reqs = _rows(_parsed(str(path)))
    first = {m["msg"]: (m["role"], m["ts"]) for m in reversed(msgs)}
    assert [first[i] for i in range(run["n_messages"])] == expected
    assert [q["output_msg"] for q in reqs] == [i for i, (role, _) in enumerate(expected)
                                              if role == "assistant"]
    # The data's timestamps are chronological except where the harness stamped a record early
    # (a queued task notification, /compact's command records): at most one such step per file.
    stamps = [ts for _, ts in expected]
    assert sum(b < a for a, b in itertools.pairwise(stamps)) <= 1


def _run_id(sha256: str, source: str) -> str:
    """The first run's id of the file with these bytes stored as ``source`` (content and
    path, issue 23 item 6), computed here apart from the parser."""
    return f"{sha256[:16]}-{hashlib.sha1(source.encode()).hexdigest()[:8]}-0"


@pytest.mark.parametrize("rel", [r for r in SAMPLE_FILES if "/subagents/" in r])
def test_subagent_links_to_parent_run(samples: Path, rel: str) -> None:
    path = samples / "claude-code" / rel
    parent = samples / "claude-code" / f"{rel.split('/')[0]}.jsonl"
    sha = hashlib.sha256(parent.read_bytes()).hexdigest()
    run, msgs, _ = _rows(_parsed(str(path)))
    agent_ids = {r["agentId"] for r in _raw(path)}
    assert run["parent_run_id"] == _run_id(sha, parent.name)  # the file given alone: its name
    assert run["parent_run_id"] == _rows(_parsed(str(parent)))[0]["run_id"]
    assert {run["agent"]} == agent_ids and {m["agent"] for m in msgs} == agent_ids


def test_main_sessions_are_top_level(samples: Path) -> None:
    for rel in SAMPLE_FILES:
        if "/subagents/" not in rel:
            run = _rows(_parsed(str(samples / "claude-code" / rel)))[0]
            assert run["parent_run_id"] == "" and run["agent"] == ""


def test_detect_format_on_all_samples(samples: Path) -> None:
    files = [f for d in samples.iterdir() if d.is_dir() for f in sorted(d.rglob("*"))
             if f.is_file() and f.name.endswith(LOG_SUFFIXES)]
    assert len(files) > len(SAMPLE_FILES)
    for f in files:
        is_cc = f.relative_to(samples).parts[0] == "claude-code"
        head = f.read_bytes()[:65536]
        assert claude_code.sniff(f.name, head) == is_cc, f
        assert (detect_format(f.name, head) == "claude_code") == is_cc, f


def test_sniff_huge_first_line_and_lookalikes() -> None:
    line = {"parentUuid": None, "isSidechain": False, "sessionId": "s", "type": "user",
            "message": {"role": "user", "content": "x" * 200_000}, "uuid": "u1"}
    head = (json.dumps(line) + "\n").encode()[:65536]
    assert claude_code.sniff("a.jsonl", head)
    codex = {"timestamp": "t", "type": "session_meta", "payload": {"id": "x" * 100_000}}
    assert not claude_code.sniff("r.jsonl", (json.dumps(codex) + "\n").encode()[:65536])
    assert not claude_code.sniff("r.jsonl", b'{"timestamp":"t","type":"user","payload":{}}\n')
    assert not claude_code.sniff("c.jsonl", b'{"role":"user","content":"hi"}\n')
    assert not claude_code.sniff("c.jsonl", b'{"type":"user","content":"hi"}\n')
    assert not claude_code.sniff("c.json", b"[\n  {\n")


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
    assert run["parent_run_id"] == _run_id(hashlib.sha256(parent.read_bytes()).hexdigest(),
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


_PDF = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                       "data": "JVBERi0xLjQK" * 20_000}}


def _with_pdf(samples: Path, out: Path, where: str) -> Path:
    """tool_heavy.jsonl with a 240 KB PDF attached to its first string prompt ('prompt') or
    after the content of its first tool result ('result')."""
    lines = _raw(samples / "claude-code" / "tool_heavy.jsonl")
    for rec in lines:
        msg = rec.get("message")
        if rec.get("type") != "user" or not isinstance(msg, dict):
            continue
        if where == "prompt" and isinstance(msg.get("content"), str):
            msg["content"] = [{"type": "text", "text": msg["content"]}, _PDF]
            break
        results = [b for b in msg.get("content") or () if isinstance(b, dict)
                   and b.get("type") == "tool_result"] if where == "result" else []
        if results:
            old = results[0]["content"]
            results[0]["content"] = [*([{"type": "text", "text": old}] if isinstance(old, str)
                                       else old), _PDF]
            break
    else:
        raise AssertionError(f"no {where} to attach to")
    path = out / f"pdf_{where}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["prompt", "result"])
def test_an_attached_pdf_is_a_placeholder_not_its_base64(samples: Path, tmp_path: Path,
                                                         where: str) -> None:
    """A PDF (a ``document`` block) was counted as its base64 JSON in a prompt (160 k tokens
    against 25 k recorded, the usage then judged at odds with the text) and dropped from a
    tool result (an empty result). It is now a placeholder naming its media type, as an image
    is ``[image]``, and the run counts what it counted without it but for that placeholder."""
    plain = parse_file(samples / "claude-code" / "tool_heavy.jsonl", samples / "claude-code")
    got = parse_file(_with_pdf(samples, tmp_path, where), tmp_path)
    texts = got.tables.messages.column("text").to_pylist()
    assert max(map(len, texts)) < 20_000  # nothing like the 240 KB of base64
    if where == "prompt":
        assert "[document: application/pdf]" in texts
    else:
        assert sum(t.endswith("\n[document: application/pdf]") for t in texts) == 1
    added = sum(got.tables.messages.column("tokens_o200k").to_pylist()) - \
        sum(plain.tables.messages.column("tokens_o200k").to_pylist())
    assert 0 < added < 20


def test_a_call_whose_result_is_lost_is_said_when_a_request_follows(
        samples: Path, tmp_path: Path) -> None:
    """A tool call with no result was never reported (an orphan result is): the model was
    called again with a call unanswered and nothing said. Now one issue counts such calls;
    the last call of an interrupted session, with no request after it, is not one."""
    lines = _raw(samples / "claude-code" / "tool_heavy.jsonl")
    results = [(k, b["tool_use_id"]) for k, r in enumerate(lines) if r.get("type") == "user"
               and isinstance(r["message"].get("content"), list)
               for b in r["message"]["content"] if b.get("type") == "tool_result"]
    lost = results[:2]  # the first two results: later requests follow both
    for k, _ in lost:
        lines[k]["message"]["content"] = [b for b in lines[k]["message"]["content"]
                                          if b.get("type") != "tool_result"] or "ok"
    path = tmp_path / "lost.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    said = [i for i in parse_file(path, tmp_path).issues if "got no result" in i.reason]
    assert len(said) == 1 and said[0].reason.startswith(f"{len(lost)} tool call(s)")
    assert repr(lost[0][1]) in said[0].reason
    # cut after the last call: the session ended waiting for its result, nothing to say
    last_call = max(k for k, r in enumerate(lines) if r.get("type") == "assistant" and any(
        isinstance(b, dict) and b.get("type") == "tool_use"
        for b in r["message"].get("content") or []))
    whole = _raw(samples / "claude-code" / "tool_heavy.jsonl")[:last_call + 1]
    path.write_text("".join(json.dumps(r) + "\n" for r in whole), encoding="utf-8")
    assert not [i for i in parse_file(path, tmp_path).issues if "got no result" in i.reason]


def test_a_null_input_tokens_leaves_the_prompt_unknown(samples: Path, tmp_path: Path) -> None:
    """`input_tokens: null` beside counted cache parts was read as 0: the request's prompt
    was its cached parts alone, with nothing said (tool_heavy.jsonl: 105,981 -> 105,978
    recorded input tokens).  Now that request's prompt is unknown, with one issue at its
    line; every other request keeps the sum read here from the raw records."""
    src = samples / "claude-code" / "tool_heavy.jsonl"
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    prompts: dict[str, int] = {}  # message id -> its last record's prompt (as the parser takes)
    for rec in records:
        msg = rec.get("message")
        if rec.get("type") == "assistant" and isinstance(msg, dict) and "usage" in msg:
            u = msg["usage"]
            prompts[msg["id"]] = u["input_tokens"] + u.get("cache_read_input_tokens", 0) + \
                u.get("cache_creation_input_tokens", 0)
    nulled = list(prompts)[1]
    for rec in records:
        msg = rec.get("message")
        if isinstance(msg, dict) and msg.get("id") == nulled and "usage" in msg:
            msg["usage"]["input_tokens"] = None
    path = tmp_path / "null-input.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    got = parsed.tables.requests["input_tokens"].to_pylist()
    assert got == [None if mid == nulled else n for mid, n in prompts.items()]
    assert [i.reason for i in parsed.issues] == [
        "input_tokens is null (the request's prompt size kept as unknown)"]
