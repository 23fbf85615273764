"""Claude Code transcript parser: real samples checked against facts counted from the raw JSONL
(hand-made transcripts and bad input: test_parse_claude_code_handmade.py)."""

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
from tests.claude_code_raw import first_run_id

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


@pytest.mark.parametrize("rel", [r for r in SAMPLE_FILES if "/subagents/" in r])
def test_subagent_links_to_parent_run(samples: Path, rel: str) -> None:
    path = samples / "claude-code" / rel
    parent = samples / "claude-code" / f"{rel.split('/')[0]}.jsonl"
    sha = hashlib.sha256(parent.read_bytes()).hexdigest()
    run, msgs, _ = _rows(_parsed(str(path)))
    agent_ids = {r["agentId"] for r in _raw(path)}
    assert run["parent_run_id"] == first_run_id(sha, parent.name)  # the file given alone: its name
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
