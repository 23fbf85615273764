"""Chat-completions message-list parser.  There are no real dumps of this format, so the inputs
are built from a real mini-swe-agent run (bash blocks → OpenAI tool calls, observations → tool
messages) and written in the four accepted shapes; counts are derived from that source."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.discover import LOG_SUFFIXES
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import chat, detect_format
from replay.ingest.parsers.source import Issue
from tests.replay.ingest.parsers.parsed_rows import one_run_rows, stand_in_source

MINI = "mini-swe-agent/django__django-11095.traj.json"
BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
COLS = ("msg", "block", "role", "kind", "call_id", "tool", "op", "path", "text", "is_error")


def _openai_messages(samples: Path) -> list[dict[str, Any]]:
    """The mini-swe-agent messages as an OpenAI tool-calling transcript (with usage)."""
    src = json.loads((samples / MINI).read_text(encoding="utf-8"))["messages"]
    out: list[dict[str, Any]] = []
    pending = None
    for i, m in enumerate(src):
        if m["role"] == "assistant":
            blocks = BASH.findall(m["content"])
            text = BASH.sub("", m["content"]).strip()
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            resp = m["extra"]["response"]
            msg["usage"], msg["model"] = resp["usage"], resp["model"]
            pending = None
            if len(blocks) == 1:
                pending = f"call_{i}"
                msg["tool_calls"] = [{"id": pending, "type": "function", "function": {
                    "name": "bash", "arguments": json.dumps({"command": blocks[0]})}}]
            out.append(msg)
        elif m["role"] == "user" and pending:
            out.append({"role": "tool", "tool_call_id": pending, "content": m["content"]})
            pending = None
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def _request_log(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Shape (d): one line per call with its full prompt and the chat-completion response."""
    plain = [{k: v for k, v in m.items() if k not in ("usage", "model")} for m in messages]
    lines = []
    for k, m in enumerate(messages):
        if m["role"] == "assistant":
            lines.append({"messages": plain[:k], "response": {
                "id": f"resp-{k}", "object": "chat.completion", "model": m["model"],
                "created": 1763510154 + k,
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {**plain[k], "refusal": None}}],
                "usage": m["usage"]}})
    return lines


def _shapes(samples: Path, tmp_path: Path) -> dict[str, Path]:
    msgs = _openai_messages(samples)
    files = {
        "a": (tmp_path / "a.json", json.dumps({"model": "m", "messages": msgs}, indent=2)),
        "b": (tmp_path / "b.json", json.dumps(msgs, indent=1)),
        "c": (tmp_path / "c.jsonl", "".join(json.dumps(m) + "\n" for m in msgs)),
        "d": (tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in _request_log(msgs))),
    }
    for path, text in files.values():
        path.write_text(text, encoding="utf-8")
    return {k: p for k, (p, _) in files.items()}


@pytest.mark.parametrize("shape", ["a", "b", "c", "d"])
def test_shapes_match_counts_from_the_source(samples: Path, tmp_path: Path, shape: str) -> None:
    msgs = _openai_messages(samples)
    assistants = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    if shape == "d":  # a request log ends with the last response: later tool output is unknown
        msgs = msgs[: assistants[-1] + 1]
    n_calls = sum(len(m.get("tool_calls", [])) for m in msgs)
    n_results = sum(m["role"] == "tool" for m in msgs)
    path = _shapes(samples, tmp_path)[shape]
    assert detect_format(path.name, path.read_bytes()[:65536]) == "chat"
    parsed = parse_file(path, path.parent)
    assert parsed.format == "chat" and parsed.issues == ()
    run, rows, reqs = one_run_rows(parsed)
    assert run["n_messages"] == len(msgs)
    assert run["n_requests"] == len(assistants) == 35
    assert run["n_tool_calls"] == n_calls and run["n_tool_results"] == n_results
    assert run["n_orphan_results"] == 0 and run["n_harness_compactions"] == 0
    usages = [msgs[i]["usage"] for i in assistants]
    assert run["recorded_input_tokens"] == sum(u["prompt_tokens"] for u in usages)
    assert run["recorded_output_tokens"] == sum(u["completion_tokens"] for u in usages)
    assert [r["cache_read_tokens"] for r in reqs] == [
        u["prompt_tokens_details"]["cached_tokens"] for u in usages]
    assert [r["reasoning_tokens"] for r in reqs] == [
        u["completion_tokens_details"]["reasoning_tokens"] for u in usages]
    assert [r["output_msg"] for r in reqs] == assistants
    assert {r["model"] for r in reqs} == {msgs[i]["model"] for i in assistants}
    assert [m["role"] for m in rows if m["block"] == 0] == [m["role"] for m in msgs]
    calls = {m["call_id"]: m for m in rows if m["kind"] == "tool_call"}
    for m in rows:
        if m["kind"] == "tool_result":
            assert m["call_id"] in calls and calls[m["call_id"]]["msg"] < m["msg"]
    first_call = next(m for m in msgs if m.get("tool_calls"))["tool_calls"][0]
    assert json.loads(calls[first_call["id"]]["text"]) == json.loads(
        first_call["function"]["arguments"])
    assert {m["tool"] for m in calls.values()} == {"bash"}


def test_the_four_shapes_give_the_same_messages(samples: Path, tmp_path: Path) -> None:
    tables = {k: one_run_rows(parse_file(p, p.parent))[1:] for k, p in _shapes(samples, tmp_path).items()}
    key = lambda rows: [tuple(r[c] for c in COLS) for r in rows]
    a_rows, a_reqs = tables["a"]
    for shape in ("b", "c"):
        assert key(tables[shape][0]) == key(a_rows)
    d_rows, d_reqs = tables["d"]
    last = max(r["output_msg"] for r in a_reqs)
    assert key(d_rows) == key([r for r in a_rows if r["msg"] <= last])
    strip = lambda reqs: [{k: v for k, v in r.items() if k not in ("run_id", "ts")}
                          for r in reqs]
    assert strip(d_reqs) == strip(a_reqs) == strip(tables["b"][1]) == strip(tables["c"][1])
    assert d_reqs[0]["ts"].startswith("2025-11-")


def test_request_log_with_a_rewritten_history(tmp_path: Path) -> None:
    lines = [
        {"messages": [{"role": "user", "content": "hi"}],
         "response": {"choices": [{"message": {"role": "assistant", "content": "one"}}],
                      "usage": {"prompt_tokens": 5, "completion_tokens": 1}}},
        {"messages": [{"role": "user", "content": "summary of earlier"}],  # harness compacted
         "response": {"choices": [{"message": {"role": "assistant", "content": "two"}}],
                      "usage": {"prompt_tokens": 7, "completion_tokens": 2}}},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    parsed = parse_file(path, tmp_path)
    run, rows, reqs = one_run_rows(parsed)
    # every request read: the rewrite is a compaction (one new message, the next turn: no
    # summary can be told from it), the earlier messages stay in the stream before it
    assert [r["text"] for r in rows] == ["hi", "one", "summary of earlier", "two"]
    assert [(r["output_msg"], r["input_tokens"]) for r in reqs] == [(1, 5), (3, 7)]
    assert not parsed.issues and run["n_harness_compactions"] == 1
    (e,) = parsed.tables.events.to_pylist() if parsed.tables else []
    assert (e["msg"], e["request"], e["summary_msg"], e["preserved_msgs"]) == (2, 1, None, [])


def test_anthropic_blocks_and_usage(tmp_path: Path) -> None:
    doc = {"system": "be brief", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "read a.py"},
                                     {"type": "image", "source": {}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "x"},
            {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "a.py"}}],
         "usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                   "cache_creation_input_tokens": 20, "output_tokens": 7}},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                      "content": [{"type": "text", "text": "x = 1"}],
                                      "is_error": True}]},
    ]}
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert chat.sniff(path.name, path.read_bytes())
    _run, rows, reqs = one_run_rows(parse_file(path, tmp_path))
    assert [(r["role"], r["kind"]) for r in rows] == [
        ("system", "text"), ("user", "text"), ("user", "image"), ("assistant", "reasoning"),
        ("assistant", "tool_call"), ("tool", "tool_result")]
    assert (rows[4]["op"], rows[4]["path"]) == ("read", "a.py")
    assert rows[5]["is_error"] and rows[5]["text"] == "x = 1" and rows[5]["path"] == "a.py"
    assert [(r["input_tokens"], r["cache_read_tokens"], r["cache_write_tokens"],
             r["output_tokens"], r["output_msg"]) for r in reqs] == [(130, 100, 20, 7, 2)]


def test_sniff_never_claims_another_formats_sample(samples: Path) -> None:
    files = [p for p in samples.rglob("*") if p.is_file() and p.name.endswith(LOG_SUFFIXES)]
    assert len(files) >= 25
    for p in files:
        head = p.read_bytes()[:65536]
        assert detect_format(p.name, head) != "chat", p  # every real sample has its own parser
        if p.relative_to(samples).parts[0] in ("claude-code", "codex", "openhands"):
            assert not chat.sniff(p.name, head), p  # chat alone must not claim these either


def test_bad_lines_are_reported_and_the_rest_parsed(tmp_path: Path) -> None:
    good = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
             "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]
    lines = [json.dumps(good[0]), '{"role": "user", "content": ', json.dumps(good[1]),
             json.dumps({"role": "assistant", "content": 42}), json.dumps(good[2]),
             json.dumps({"role": "wizard", "content": "x"}), '{"role": "assistant", "cont']
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")  # no final newline: last line truncated
    parsed = parse_file(path, tmp_path)
    by_line = {i.line: i.reason for i in parsed.issues}
    assert sorted(by_line) == [2, 4, 6, 7], by_line
    assert "malformed JSON" in by_line[2] and "incomplete last line" in by_line[7]
    assert "content" in by_line[4] and "wizard" in by_line[6]
    _run, rows, reqs = one_run_rows(parsed)
    assert [(r["role"], r["kind"]) for r in rows] == [
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result")]
    assert [(r["output_msg"], r["input_tokens"], r["output_tokens"]) for r in reqs] == [(1, 9, 3)]


def test_wrong_types_in_a_json_document_and_empty_files(tmp_path: Path) -> None:
    doc = {"messages": [{"role": "user", "content": "q"}, ["not a message"],
                        {"role": "assistant", "content": "a", "tool_calls": "oops"},
                        {"role": "assistant", "content": "fine"}]}
    issues: list[Issue] = []
    drafts = chat.parse(stand_in_source("doc.json", json.dumps(doc).encode()), issues)
    assert [i.line for i in issues] == [2, 3]
    assert "message 2" in issues[0].reason and "tool_calls" in issues[1].reason
    assert drafts[0].messages["text"] == ["q", "fine"] and drafts[0].requests["output_msg"] == [1]
    for data in (b"", b"[]", b"{}", b'"just a string"'):
        issues = []
        assert chat.parse(stand_in_source("e.json", data), issues) == [] and issues and issues[0].line == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    assert parse_file(empty, tmp_path, fmt="chat").tables is None


# --- coverage -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["a", "b", "c", "d"])
def test_every_record_is_counted_in_coverage(samples: Path, tmp_path: Path, shape: str) -> None:
    path = _shapes(samples, tmp_path)[shape]
    raw = path.read_text(encoding="utf-8")
    if shape == "d":  # each line, and the messages of the longest prompt with its response
        lines = [json.loads(line) for line in raw.splitlines()]
        longest = max(lines, key=lambda r: len(r["messages"]))
        messages = [*longest["messages"], longest["response"]["choices"][0]["message"]]
        expected = Counter({"request": len(lines)})
    else:
        doc = json.loads(raw) if shape != "c" else [json.loads(line) for line in raw.splitlines()]
        messages = doc["messages"] if shape == "a" else doc
        expected = Counter({"model": 1} if shape == "a" else {})
    expected.update(f"message/{m['role']}" for m in messages)
    cov = parse_file(path, path.parent).coverage
    assert {t: sum(f.values()) for t, f in cov.items()} == dict(expected)
    assert sum(f.get("modelled", 0) for f in cov.values()) == sum(expected.values()) - (
        shape == "a")
    assert not any("unknown" in f for f in cov.values())


def test_coverage_of_unknown_malformed_and_repeated_records(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}
    doc = {"model": "m", "tools": [{"type": "function"}], "system": "be brief", "messages": [
        {"role": "user", "content": "q"}, call, call, {"role": "function", "content": "x"},
        ["not a message"], {"content": "no role"}, {"role": "tool", "content": "no id"},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert parse_file(path, tmp_path).coverage == {
        "model": {"skipped": 1}, "tools": {"unknown": 1}, "message/system": {"modelled": 1},
        "message/user": {"modelled": 1}, "message/assistant": {"modelled": 1},
        "message/assistant (repeat)": {"skipped": 1}, "message/function": {"unknown": 1},
        "message (not an object)": {"unknown": 1}, "message (no role)": {"unknown": 1},
        "message/tool (malformed)": {"unknown": 1}, "message/tool": {"modelled": 1}}


def test_coverage_of_a_request_log_line_not_in_the_transcript(tmp_path: Path) -> None:
    ok = {"choices": [{"message": {"role": "assistant", "content": "two"}}]}
    lines = [{"messages": [{"role": "user", "content": "hi"}],
              "response": {"choices": [{"message": {"role": "assistant", "content": "one"}}]}},
             {"messages": [{"role": "user", "content": "summary"}], "response": ok},
             {"messages": "not a list", "response": ok}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert parse_file(path, tmp_path).coverage == {
        "request": {"modelled": 2}, "request (malformed)": {"unknown": 1},
        "message/user": {"modelled": 2}, "message/assistant": {"modelled": 2}}


def test_a_request_log_of_a_windowed_history_reads_every_request(tmp_path: Path) -> None:
    """A harness that sends a window of its latest messages rewrites its history between
    requests: every request is read (they were dropped, said in one issue), each message
    once, each rewrite a compaction (``test_parse_chat_rewritten`` has the details)."""
    system, history, lines = {"role": "system", "content": "be brief"}, [], []
    for i in range(30):
        history.append({"role": "user", "content": f"question {i}"})
        answer = {"role": "assistant", "content": f"answer {i}"}
        lines.append({"messages": [system, *history[-6:]], "response": {"choices": [
            {"message": answer}], "usage": {"prompt_tokens": 50, "completion_tokens": 5}}})
        history.append(answer)
    path = tmp_path / "window.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    parsed = parse_file(path, tmp_path, tokenizers=())
    assert parsed.coverage["request"] == {"modelled": 30}
    assert "request (not in the transcript)" not in parsed.coverage
    assert not parsed.issues
    run, _, _ = one_run_rows(parsed)
    assert run["n_messages"] == 61 and run["n_harness_compactions"] == 27


def test_coverage_counts_the_lines_that_are_not_records(tmp_path: Path) -> None:
    """A broken line (not JSON, not UTF-8, not an object) is skipped with its issue and now
    counted in the file's coverage, so `replay runs` accounts for every line: it said
    "2 records: 2 modelled" of a four-line file whose two broken lines ingest warned of."""
    lines = [json.dumps({"role": "user", "content": "hi"}).encode(),
             b'{"role": "assistant",', b"\xff\xfe",
             json.dumps({"role": "assistant", "content": "hello"}).encode(), b"[1, 2]"]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    parsed = parse_file(path, tmp_path, tokenizers=())
    broken = [i for i in parsed.issues if i.line in (2, 3, 5)]
    assert len(broken) == 3
    assert parsed.coverage["(line not read)"] == {"unknown": 3}
    assert sum(n for fates in parsed.coverage.values() for n in fates.values()) == len(lines)
