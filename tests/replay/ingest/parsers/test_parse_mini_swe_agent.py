"""mini-swe-agent ``.traj.json`` parser: facts counted from every sample's raw JSON, bad input."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import detect_format, mini_swe_agent
from tests.conftest import SAMPLES
from tests.replay.ingest.parsers.parsed_rows import assert_detected_only_in, table_rows

FORMAT_DIR = "mini-swe-agent"
SAMPLE_NAMES = sorted(p.name for p in (SAMPLES / FORMAT_DIR).glob("*.traj.json"))
BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


def _parsed(path: Path) -> ParsedFile:
    parsed = parse_file(path, path.parent)
    assert parsed.format == "mini_swe_agent"
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    return parsed


def _usage(m: dict[str, Any]) -> dict[str, Any]:
    return m.get("extra", {}).get("response", {}).get("usage", {})


def test_all_samples_are_listed(samples: Path) -> None:
    assert SAMPLE_NAMES == sorted(p.name for p in (samples / FORMAT_DIR).glob("*.traj.json"))
    assert len(SAMPLE_NAMES) == 4


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_counts_match_raw_json(samples: Path, name: str) -> None:
    path = samples / FORMAT_DIR / name
    raw = json.loads(path.read_text())
    chat = raw if isinstance(raw, list) else raw["messages"]
    assistants = [k for k, m in enumerate(chat) if m["role"] == "assistant"]
    # the harness runs an action only when the reply holds exactly one block
    acting = [k for k in assistants if len(BLOCK.findall(chat[k]["content"])) == 1]
    answered = [k for k in acting if k + 1 < len(chat) and chat[k + 1]["role"] == "user"]

    parsed = _parsed(path)
    assert not parsed.issues
    run = table_rows(parsed, "runs")[0]
    msgs = table_rows(parsed, "messages")
    reqs = table_rows(parsed, "requests")

    assert run["n_messages"] == len(chat)
    assert run["n_requests"] == len(reqs) == len(assistants)
    assert run["n_tool_calls"] == len(acting)
    assert run["n_tool_results"] == len(answered)
    assert run["n_orphan_results"] == 0 and run["n_harness_compactions"] == 0

    # usage, request by request, from extra.response.usage
    usages = [_usage(chat[k]) for k in assistants]
    if any(usages):
        assert [r["input_tokens"] for r in reqs] == [u["prompt_tokens"] for u in usages]
        assert [r["output_tokens"] for r in reqs] == [u["completion_tokens"] for u in usages]
        assert [r["cache_read_tokens"] for r in reqs] == \
            [u["prompt_tokens_details"]["cached_tokens"] for u in usages]
        assert [r["reasoning_tokens"] for r in reqs] == \
            [u["completion_tokens_details"]["reasoning_tokens"] for u in usages]
        assert run["recorded_input_tokens"] == sum(u["prompt_tokens"] for u in usages)
        assert run["recorded_output_tokens"] == sum(u["completion_tokens"] for u in usages)
        assert [r["model"] for r in reqs] == [chat[k]["extra"]["response"]["model"]
                                              for k in assistants]
        assert run["model"] == raw["info"]["config"]["model"]["model_name"]
        assert run["harness"] == f"mini-swe-agent {raw['info']['mini_version']}"
    else:
        assert run["recorded_input_tokens"] is None
        assert all(r["input_tokens"] is None for r in reqs)

    # one message per chat message, in order; the request k produced assistant message k
    roles = {r["msg"]: r["role"] for r in msgs}
    assert [r["output_msg"] for r in reqs] == assistants
    expected_roles = ["tool" if k - 1 in acting and m["role"] == "user" else m["role"]
                      for k, m in enumerate(chat)]
    assert [roles[k] for k in range(len(chat))] == expected_roles

    # calls carry the command, results the next user message, paired by id
    calls = [r for r in msgs if r["kind"] == "tool_call"]
    results = [r for r in msgs if r["kind"] == "tool_result"]
    assert [c["text"] for c in calls] == [BLOCK.findall(chat[k]["content"])[0].strip()
                                          for k in acting]
    assert [r["text"] for r in results] == [chat[k + 1]["content"] for k in answered]
    call_pos = {r["call_id"]: i for i, r in enumerate(msgs) if r["kind"] == "tool_call"}
    assert len(call_pos) == len(calls)
    for i, r in enumerate(msgs):
        if r["kind"] == "tool_result":
            assert call_pos[r["call_id"]] < i


def test_format_errors_stay_user_messages(samples: Path) -> None:
    """sympy run: replies with several blocks run nothing; the error reply is a user message."""
    path = samples / FORMAT_DIR / "sympy__sympy-14248.traj.json"
    chat = json.loads(path.read_text())["messages"]
    bad = [k for k, m in enumerate(chat)
           if m["role"] == "assistant" and len(BLOCK.findall(m["content"])) != 1]
    assert len(bad) == 3
    msgs = table_rows(_parsed(path), "messages")
    for k in bad:
        assert [r["kind"] for r in msgs if r["msg"] == k] == ["text"]
        assert [(r["role"], r["text"]) for r in msgs if r["msg"] == k + 1] == \
            [("user", chat[k + 1]["content"])]


def test_detection(samples: Path) -> None:
    assert_detected_only_in(samples, FORMAT_DIR, "mini_swe_agent")
    head = b'{"info": {"mini_version": "1.15.0"}, "trajectory_format": "mini-swe-agent-1"}'
    assert detect_format("run.json", head) == "mini_swe_agent"


V2_DOC: dict[str, Any] = {
    "trajectory_format": "mini-swe-agent-1.1", "info": {"mini_version": "2.0.0"},
    "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "look", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
         "extra": {"response": {"model": "m", "usage": {"prompt_tokens": 7,
                                                       "completion_tokens": 2}},
                   "timestamp": 0}},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "no call", "extra": {}},
        {"role": "user", "content": "format error",
         "extra": {"interrupt_type": "FormatError"}},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}]}
"""A mini-swe-agent 2.x trajectory (no sample has one): structured tool calls, tool messages,
a format error and the exit message (also the fuzz seed of ``test_fuzz_embedded_json``)."""


def test_v1_1_tool_calls_and_exit(tmp_path: Path) -> None:
    """mini-swe-agent 2.x shape (no sample): structured calls, tool messages, exit skipped."""
    path = tmp_path / "v2.traj.json"
    path.write_text(json.dumps(V2_DOC))
    parsed = _parsed(path)
    # (its one timestamp, 0, is 1970: a broken clock, said; nothing else is)
    requests = sum(m["role"] == "assistant" for m in V2_DOC["messages"])
    assert [i.reason.split(" (first")[0] for i in parsed.issues] == [
        f"1 of {requests} request(s) timestamped outside 2000-2099"]
    msgs = table_rows(parsed, "messages")
    assert [(r["msg"], r["role"], r["kind"]) for r in msgs] == [
        (0, "system", "text"), (1, "user", "text"), (2, "assistant", "text"),
        (2, "assistant", "tool_call"), (3, "tool", "tool_result"), (4, "assistant", "text"),
        (5, "user", "text")]
    assert msgs[3]["call_id"] == msgs[4]["call_id"] == "c1" and msgs[3]["op"] == "list"
    reqs = table_rows(parsed, "requests")
    assert [r["input_tokens"] for r in reqs] == [7, None]
    assert reqs[0]["ts"].startswith("1970-01-01")


# --- bad input ----------------------------------------------------------------------------

def _chat(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys"},
                                 {"role": "user", "content": "task"}]
    for k in range(n):
        out.append({"role": "assistant", "content": f"THOUGHT: {k}\n\n```bash\nls d{k}\n```",
                    "extra": {"response": {"usage": {"prompt_tokens": 10 + k,
                                                     "completion_tokens": 1}}}})
        out.append({"role": "user", "content": f"<output>{k}</output>"})
    return out


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.traj.json"
    path.write_text(text)
    return path


def _doc(chat: list[Any]) -> str:
    return json.dumps({"info": {"mini_version": "1.0.0"}, "messages": chat,
                       "trajectory_format": "mini-swe-agent-1"}, indent=1)


def test_malformed_line_in_the_middle_keeps_earlier_messages(tmp_path: Path) -> None:
    lines = _doc(_chat(3)).split("\n")
    bad = next(n for n, line in enumerate(lines) if "ls d2" in line)
    lines[bad] = lines[bad] + " oops"
    parsed = parse_file(_write(tmp_path, "\n".join(lines)), tmp_path)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_requests"] == 2 and run["n_tool_results"] == 2
    assert run["recorded_input_tokens"] == 10 + 11
    assert any(i.line == bad + 1 and "malformed JSON" in i.reason for i in parsed.issues)
    opening = bad - 1  # 1-based line of the "{" two lines above the content (0-based bad)
    assert any(f":{opening}:" in str(i) and "kept the 6 readable" in str(i) for i in parsed.issues)


def test_truncated_file_keeps_complete_messages(tmp_path: Path) -> None:
    text = _doc(_chat(2))
    cut = text.index("<output>1")
    parsed = parse_file(_write(tmp_path, text[:cut]), tmp_path)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_requests"] == 2 and run["n_tool_calls"] == 2 and run["n_tool_results"] == 1
    assert any(i.line == text[:cut].count("\n") + 1 for i in parsed.issues)


def test_bare_list_truncated(tmp_path: Path) -> None:
    text = json.dumps(_chat(2), indent=1)
    parsed = parse_file(_write(tmp_path, text[:text.index("ls d1")]), tmp_path)
    assert parsed.tables is not None
    assert parsed.tables.runs["n_tool_results"][0].as_py() == 1


def test_wrong_typed_messages_are_reported_and_skipped(tmp_path: Path) -> None:
    chat: list[Any] = _chat(3)
    chat[4] = {"role": "assistant", "content": 42}
    chat.insert(2, "not a message")
    text = _doc(chat)
    parsed = parse_file(_write(tmp_path, text), tmp_path)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_requests"] == 2 and run["n_tool_calls"] == 2 and run["n_tool_results"] == 2
    lines = text.split("\n")
    reasons = {i.line: i.reason for i in parsed.issues}
    not_message = next(n for n, s in enumerate(lines) if "not a message" in s)
    assert "messages[2]" in reasons[not_message + 1]
    content = next(n for n, s in enumerate(lines) if '"content": 42' in s)
    assert "messages[5]: content is int" in reasons[content - 1]  # the "{" two lines above
    assert sum(r["role"] == "user" for r in parsed.tables.messages.to_pylist()) == 2


def test_empty_and_non_trajectory_files(tmp_path: Path) -> None:
    empty = parse_file(_write(tmp_path, "  \n"), tmp_path)
    assert empty.tables is None and "empty file" in str(empty.issues[0])
    other = parse_file(_write(tmp_path, '{"messages": {}}'), tmp_path)
    assert other.tables is None and "no messages[] list" in str(other.issues[0])


@pytest.mark.parametrize(("pattern", "used"), [
    (r"(a+)+$", "default"), (r"(?:x|x)*y", "default"), (r"```(unclosed", "default"),
    (r"<act>\s*(.*?)\s*</act>", "own")])
def test_an_action_regex_from_the_file_is_used_only_when_it_is_safe(
        tmp_path: Path, pattern: str, used: str) -> None:
    """The trajectory's own action_regex comes from the file: one that could backtrack
    exponentially (a repeated repetition or alternation) or does not compile is said, and
    the default fence is used; a plain one is used."""
    chat = _chat(2)
    if used == "own":
        for m in chat:
            if m["role"] == "assistant":
                m["content"] = m["content"].replace("```bash\n", "<act>").replace("\n```",
                                                                                   "</act>")
    doc = json.loads(_doc(chat))
    doc["info"]["config"] = {"agent": {"action_regex": pattern}}
    parsed = _parsed(_write(tmp_path, json.dumps(doc)))
    said = [i.reason for i in parsed.issues if "action_regex" in i.reason]
    assert len(said) == (1 if used == "default" else 0), parsed.issues
    if said:
        assert "the default action pattern is used" in said[0]
    calls = [r for r in table_rows(parsed, "messages") if r["kind"] == "tool_call"]
    assert [c["text"] for c in calls] == ["ls d0", "ls d1"]



# --- coverage -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_record_is_counted_in_coverage(samples: Path, name: str) -> None:
    path = samples / FORMAT_DIR / name
    raw = json.loads(path.read_text())
    messages = raw if isinstance(raw, list) else raw["messages"]
    expected = Counter(f"message/{m['role']}" for m in messages)
    others = [k for k in raw if k != "messages"] if isinstance(raw, dict) else []
    expected.update(others)
    cov = _parsed(path).coverage
    assert {t: sum(f.values()) for t, f in cov.items()} == dict(expected)
    assert {t: f for t, f in cov.items() if t in others} == {k: {"skipped": 1} for k in others}
    assert sum(f.get("modelled", 0) for f in cov.values()) == len(messages)
    assert not any("unknown" in f for f in cov.values())


def test_unknown_roles_and_keys_are_counted_unknown(tmp_path: Path) -> None:
    messages: list[Any] = [*_chat(1), {"role": "critic", "content": "hmm"}, 7,
                           {"role": "user", "content": 5},
                           {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}]
    path = tmp_path / "x.traj.json"
    path.write_text(json.dumps({"messages": messages, "info": {}, "attempts": []}))
    cov = parse_file(path, tmp_path).coverage
    assert cov["message/critic"] == {"unknown": 1}
    assert cov["message (not an object)"] == {"unknown": 1}
    assert cov["message/user"] == {"modelled": 2}
    assert cov["message/user (malformed)"] == {"unknown": 1}
    assert cov["message/exit"] == {"skipped": 1}
    assert cov["attempts"] == {"unknown": 1} and cov["info"] == {"skipped": 1}


_PIECES = ["`", "```", "\n", " ", "\t", "\r", "\x0b", "bash", "mswea_bash_command", "x",
           "\n```", "```bash\n", "```mswea_bash_command \n"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join))
@example("```bash\nls\n``x\n```")  # a line starting with two backquotes is the command's
def test_the_default_action_block_is_found_as_its_pattern_finds_it(text: str) -> None:
    """The parser's compiled default action pattern finds the same blocks, commands and
    spans as ``ACTION_PATTERN`` itself (its command read to the first newline and fence in
    whole lines: no character-at-a-time lazy match)."""
    want = [(m.span(), m.groups()) for m in BLOCK.finditer(text)]
    assert BLOCK.pattern == mini_swe_agent.ACTION_PATTERN
    assert [(m.span(), m.groups()) for m in mini_swe_agent.ACTION.finditer(text)] == want
