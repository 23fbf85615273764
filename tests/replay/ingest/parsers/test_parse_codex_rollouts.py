"""Codex rollout parser on hand-made rollouts: request / usage attachment rules (both
token_count orders, totals only, legacy, compaction), other items, bad input, coverage counts.
The real samples are in test_parse_codex.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import codex, codex_file
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.source import Issue, Source
from tests.replay.ingest.parsers.parsed_rows import one_run_rows

# --- hand-made rollouts -------------------------------------------------------------------------

def _env(kind: str, payload: dict[str, Any], ts: str = "2026-01-01T00:00:00Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def _item(**payload: Any) -> str:
    return _env("response_item", payload)


def _tc(inp: int, out: int, total: int, cached: int = 0, reasoning: int = 0) -> str:
    last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": reasoning, "total_tokens": inp + out}
    tot = dict(last, input_tokens=total)
    return _env("event_msg", {"type": "token_count", "info": {"total_token_usage": tot,
                                                              "last_token_usage": last}})


META = _env("session_meta", {"id": "x", "cli_version": "0.99.0", "originator": "codex_exec",
                             "cwd": "/w"})
TURN = _env("turn_context", {"model": "gpt-test", "cwd": "/w"})
USER = _item(type="message", role="user", content=[{"type": "input_text", "text": "fix it"},
                                                   {"type": "input_image", "image_url": "data:"}])
REASON = _item(type="reasoning", summary=[{"type": "summary_text", "text": "thinking"}],
               content=None, encrypted_content="gAAA")
CALL = _item(type="function_call", name="shell", call_id="c1",
             arguments=json.dumps({"command": ["bash", "-lc", "cat a.py"]}))
OUT = _item(type="function_call_output", call_id="c1",
            output=json.dumps({"output": "boom", "metadata": {"exit_code": 1}}))
SAY = _item(type="message", role="assistant", content=[{"type": "output_text", "text": "done"}])


def _parse(tmp_path: Path, lines: list[str], *, end: str = "\n") -> tuple[ParsedFile, list[str]]:
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="codex")
    return parsed, [str(i) for i in parsed.issues]


def test_usage_after_output_and_duplicates(tmp_path: Path) -> None:
    lines = [META, USER, TURN, REASON, CALL, _tc(100, 10, 100, reasoning=4), OUT,
             _tc(100, 10, 100, reasoning=4), TURN, SAY, _tc(150, 5, 250, cached=90)]
    parsed, issues = _parse(tmp_path, lines)
    run, msgs, reqs = one_run_rows(parsed)
    assert issues == []
    assert [(m["msg"], m["role"], m["kind"]) for m in msgs] == [
        (0, "user", "text"), (0, "user", "image"), (1, "assistant", "reasoning"),
        (1, "assistant", "tool_call"), (2, "tool", "tool_result"), (3, "assistant", "text")]
    assert msgs[1]["text"] == "[image]" and msgs[2]["text"] == "thinking"
    assert msgs[4]["is_error"] and msgs[4]["text"] == json.loads(OUT)["payload"]["output"]
    assert msgs[4]["op"] == "read" and msgs[4]["path"] == "a.py"
    assert [(r["output_msg"], r["input_tokens"], r["cache_read_tokens"], r["output_tokens"],
             r["reasoning_tokens"]) for r in reqs] == [(1, 100, 0, 10, 4), (3, 150, 90, 5, 0)]
    assert run["model"] == "gpt-test" and run["harness"] == "codex 0.99.0 codex_exec"
    assert run["recorded_input_tokens"] == 250


def test_an_item_written_again_is_reported_and_counted_once(tmp_path: Path) -> None:
    """An item with the identity of an earlier one (call_id) and the same content is reported,
    naming the earlier line, and skipped; the same identity with other content is kept, and a
    copy of that one names its own first line."""
    other = _item(type="function_call", name="shell", call_id="c1",
                  arguments=json.dumps({"command": ["bash", "-lc", "cat b.py"]}))
    lines = [META, USER, TURN, CALL, CALL, other, OUT, other, SAY]
    parsed, issues = _parse(tmp_path, lines)
    _, msgs, _ = one_run_rows(parsed)
    # the second c1 is called before the first has its output: the pairing is a guess, said
    reuse = [i for i in issues if "take the id of an earlier call" in i]
    assert len(reuse) == 1 and "1 tool call(s)" in reuse[0] and "'c1'" in reuse[0]
    issues = [i for i in issues if i not in reuse]
    assert [i.split(": ", 1)[1] for i in issues] == [
        "duplicate of the function_call item on line 4 (record skipped)",
        "duplicate of the function_call item on line 6 (record skipped)"]
    assert [i.split(":")[1] for i in issues] == ["5", "8"]
    assert [m["text"] for m in msgs if m["kind"] == "tool_call"] == [
        json.dumps({"command": ["bash", "-lc", "cat a.py"]}),
        json.dumps({"command": ["bash", "-lc", "cat b.py"]})]


def test_records_with_no_repeated_item_are_kept_as_they_are() -> None:
    """``unique`` copies nothing when no item repeats (most rollouts): the same list back; a
    repeat is left out of a new list, the records given untouched."""
    records = [(n, json.loads(line)) for n, line in enumerate([META, USER, TURN, CALL, OUT], 1)]
    issues: list[Issue] = []
    cov = Coverage()
    assert codex_file.unique(records, "r.jsonl", issues, cov) is records
    again = [*records, (6, json.loads(CALL))]
    kept = codex_file.unique(again, "r.jsonl", issues, cov)
    assert kept == records and len(again) == 6
    assert cov.by_type() == {"response_item/function_call": {"skipped": 1}}
    assert [str(i) for i in issues] == [
        "r.jsonl:6: duplicate of the function_call item on line 4 (record skipped)"]


def test_usage_before_output_and_run_without_usage(tmp_path: Path) -> None:
    """0.5x order: each token_count precedes the items of the response it measures."""
    other = _item(type="function_call", name="shell", call_id="c2", arguments="not json {")
    out2 = _item(type="function_call_output", call_id="c2", output="ok")
    lines = [META, USER, TURN, _tc(100, 10, 100), REASON, CALL, OUT, _tc(100, 10, 100), TURN,
             _tc(120, 7, 220), other, out2, SAY]
    parsed, issues = _parse(tmp_path, lines)
    _, msgs, reqs = one_run_rows(parsed)
    assert issues == []
    assert [(r["output_msg"], r["input_tokens"]) for r in reqs] == [(1, 100), (3, 120), (5, None)]
    call2 = [m for m in msgs if m["call_id"] == "c2" and m["kind"] == "tool_call"]
    assert call2[0]["text"] == "not json {"  # non-JSON arguments kept raw


def test_totals_only_usage_is_differenced(tmp_path: Path) -> None:
    def totals(inp: int, out: int) -> str:
        tot = {"input_tokens": inp, "cached_input_tokens": 0, "output_tokens": out,
               "reasoning_output_tokens": 0}
        return _env("event_msg", {"type": "token_count", "info": {"total_token_usage": tot}})
    lines = [META, USER, TURN, CALL, totals(100, 10), OUT, TURN, SAY, totals(250, 15)]
    parsed, issues = _parse(tmp_path, lines)
    _, _, reqs = one_run_rows(parsed)
    assert issues == []
    assert [(r["input_tokens"], r["output_tokens"]) for r in reqs] == [(100, 10), (150, 5)]


def test_legacy_layout(tmp_path: Path) -> None:
    meta = json.dumps({"id": "s", "timestamp": "2025-09-01T00:00:00Z", "instructions": "AGENTS",
                       "git": {}})
    state = json.dumps({"record_type": "state"})
    bare = [json.loads(x)["payload"] for x in (USER, REASON, CALL, OUT, SAY)]
    lines = [meta, state] + [json.dumps(b) for b in bare] + [state]
    assert codex.sniff("x.jsonl", ("\n".join(lines)).encode())
    parsed, issues = _parse(tmp_path, lines)
    run, msgs, reqs = one_run_rows(parsed)
    assert issues == []
    # the legacy instructions (AGENTS.md) are repeated in no message here: a system message
    assert [m["role"] for m in msgs] == ["system", "user", "user", "assistant", "assistant",
                                         "tool", "assistant"]
    assert msgs[0]["text"] == "AGENTS"
    assert [r["output_msg"] for r in reqs] == [2, 4]
    assert all(r["input_tokens"] is None for r in reqs) and run["recorded_input_tokens"] is None
    assert run["harness"] == "codex" and run["model"] == ""


def test_compacted_summary_without_replacement_history(tmp_path: Path) -> None:
    replaced = [{"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "OLD HISTORY COPY"}]}]
    comp = _env("compacted", {"message": "summary of work", "replacement_history": replaced})
    lines = [META, USER, TURN, SAY, _tc(100, 5, 100), comp,
             _env("event_msg", {"type": "context_compacted"}), TURN, SAY, _tc(20, 5, 125)]
    parsed, issues = _parse(tmp_path, lines)
    run, msgs, reqs = one_run_rows(parsed)
    assert issues == []
    assert run["n_harness_compactions"] == 1
    summary = [m for m in msgs if m["kind"] == "summary"]
    assert len(summary) == 1 and summary[0]["is_harness_summary"]
    assert summary[0]["text"] == "summary of work"
    assert not any("OLD HISTORY COPY" in m["text"] for m in msgs)
    assert [(r["output_msg"], r["input_tokens"]) for r in reqs] == [(1, 100), (3, 20)]


def test_other_items(tmp_path: Path) -> None:
    lines = [META, USER, TURN,
             _item(type="custom_tool_call", name="apply_patch", call_id="p1",
                   input="*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n*** End Patch"),
             _item(type="local_shell_call", call_id="l1", status="completed",
                   action={"type": "exec", "command": ["ls", "src"]}),
             _item(type="web_search_call", status="completed", action={"query": "q"}),
             _tc(50, 5, 50),
             _item(type="custom_tool_call_output", call_id="p1", output="Success"),
             _item(type="function_call_output", call_id="l1", output="x.py"),
             _item(type="ghost_snapshot", ghost_commit={}),
             _item(type="function_call_output", call_id="nope", output="lost"),
             _item(type="message", role="developer", content=[{"type": "input_text", "text": "d"}])]
    parsed, issues = _parse(tmp_path, lines)
    run, msgs, reqs = one_run_rows(parsed)
    calls = [m for m in msgs if m["kind"] == "tool_call"]
    assert [(m["tool"], m["op"], m["path"]) for m in calls] == [
        ("apply_patch", "edit", "src/x.py"), ("local_shell", "list", "src"),
        ("web_search", "search", "")]
    assert calls[0]["text"].startswith("*** Begin Patch") and calls[2]["call_id"]
    assert len({m["msg"] for m in calls}) == 1 and len(reqs) == 1  # one response, one request
    assert run["n_orphan_results"] == 1 and len(issues) == 1 and "'nope'" in issues[0]
    assert msgs[-1]["role"] == "system"


# --- bad input ----------------------------------------------------------------------------------

def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    lines = [META, USER, TURN, REASON, CALL, _tc(100, 10, 100), '{"type": "response_item", "pay',
             OUT, TURN, SAY, _tc(150, 5, 250)]
    parsed, issues = _parse(tmp_path, lines)
    run, _, reqs = one_run_rows(parsed)
    assert len(issues) == 1 and ":7: malformed JSON" in issues[0]
    assert run["n_tool_results"] == 1 and [r["input_tokens"] for r in reqs] == [100, 150]


def test_truncated_last_line(tmp_path: Path) -> None:
    lines = [META, USER, TURN, REASON, CALL, _tc(100, 10, 100), OUT, SAY[: len(SAY) // 2]]
    parsed, issues = _parse(tmp_path, lines, end="")
    run, _, reqs = one_run_rows(parsed)
    assert len(issues) == 1 and ":8: incomplete last line" in issues[0]
    assert run["n_tool_calls"] == 1 and run["n_tool_results"] == 1 and len(reqs) == 1


def test_wrong_typed_fields(tmp_path: Path) -> None:
    bad_call = _item(type="function_call", name=123, call_id="c9", arguments="{}")
    bad_usage = _env("event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 7}, "last_token_usage": {"input_tokens": "many"}}})
    bad_content = _item(type="message", role="user", content=42)
    lines = [META, USER, TURN, bad_call, REASON, CALL, _tc(100, 10, 100), OUT, bad_content,
             SAY, bad_usage, _env("response_item", ["not", "an", "object"])]
    parsed, issues = _parse(tmp_path, lines)
    run, msgs, reqs = one_run_rows(parsed)
    assert len(issues) == 4, issues
    assert ":4: function_call name is int" in issues[0]
    assert ":9: message content is int" in issues[1]
    assert ":11: token_count: input_tokens 'many' is not a token count (kept as unknown)" \
        in issues[2]
    assert ":12: 'response_item' line: payload is list" in issues[3]
    assert run["n_tool_calls"] == 1 and run["n_tool_results"] == 1
    assert [(r["output_msg"], r["input_tokens"]) for r in reqs] == [(1, 100), (3, None)]
    assert not any(m["call_id"] == "c9" for m in msgs)


def test_empty_and_meta_only_files(tmp_path: Path) -> None:
    empty = Source(path="e.jsonl", rel="e.jsonl", data=b"", sha256="0" * 64)
    issues: list[Issue] = []
    assert codex.parse(empty, issues) == [] and issues[0].line == 0
    parsed, texts = _parse(tmp_path, [META, TURN])
    assert parsed.tables is None and texts and "no context items" in texts[0]
    assert parse_file(_write(tmp_path / "blank.jsonl", ""), tmp_path).tables is None


def test_sniff_long_first_line_and_rejects_others() -> None:
    long_meta = _env("session_meta", {"id": "x", "base_instructions": {"text": "x" * 100_000}})
    assert codex.sniff("r.jsonl", (long_meta + "\n").encode()[:65536])
    claude = json.dumps({"type": "user", "sessionId": "s", "uuid": "u", "timestamp": "t",
                         "message": {"role": "user", "content": "hi"}})
    assert not codex.sniff("s.jsonl", (claude + "\n").encode())
    assert not codex.sniff("s.json", b'[{"role": "user", "content": "hi"}]')
    assert not codex.sniff("s.jsonl", b"")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _coverage(tmp_path: Path, lines: list[str]) -> tuple[list[Any], dict[str, dict[str, int]]]:
    path = tmp_path / "cov.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data, sha256="0" * 64)
    issues: list[Issue] = []
    drafts = codex.parse(src, issues)
    return drafts, src.coverage.by_type() | {"issues": {str(i): 1 for i in issues}}


def test_totals_that_go_down_leave_that_request_unknown(tmp_path: Path) -> None:
    def totals(inp: int) -> str:
        return _env("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": inp, "output_tokens": 1}}})
    lines = [META, USER, TURN, CALL, totals(100), OUT, TURN, SAY, totals(40), USER, TURN, SAY,
             totals(100)]
    parsed, issues = _parse(tmp_path, lines)
    _, _, reqs = one_run_rows(parsed)
    assert issues == []
    assert [r["input_tokens"] for r in reqs] == [100, None, 60]


def test_output_objects_and_cache_writes(tmp_path: Path) -> None:
    obj = _item(type="function_call_output", call_id="c1", output={"isError": True, "exit": 2})
    usage = {"input_tokens": 500, "cached_input_tokens": 100, "cache_creation_input_tokens": 400,
             "output_tokens": 3}
    tc = _env("event_msg", {"type": "token_count", "info": {"total_token_usage": usage,
                                                            "last_token_usage": usage}})
    parsed, issues = _parse(tmp_path, [META, USER, TURN, CALL, tc, obj])
    _, msgs, reqs = one_run_rows(parsed)
    assert issues == []
    result = next(m for m in msgs if m["kind"] == "tool_result")
    assert json.loads(result["text"]) == {"isError": True, "exit": 2} and result["is_error"]
    assert [(r["input_tokens"], r["cache_read_tokens"], r["cache_write_tokens"])
            for r in reqs] == [(500, 100, 400)]


def test_instructions_as_the_system_message(tmp_path: Path) -> None:
    base = _env("session_meta", {"id": "x", "base_instructions": {"text": "You are Codex."}})
    drafts, cov = _coverage(tmp_path, [base, USER, TURN, SAY])
    assert drafts[0].messages["role"][0] == "system"
    assert drafts[0].messages["text"][0] == "You are Codex."
    assert cov["session_meta/base_instructions"] == {"modelled": 1}
    # legacy instructions repeated in a user message: not added twice
    legacy = _env("session_meta", {"id": "x", "instructions": "RULES"})
    repeat = _item(type="message", role="user",
                   content=[{"type": "input_text", "text": "<user_instructions>\nRULES\n"}])
    drafts, cov = _coverage(tmp_path, [legacy, repeat, TURN, SAY])
    assert drafts[0].messages["role"][0] == "user"
    assert cov["session_meta/instructions"] == {"skipped": 1}


def test_unknown_types_are_counted_not_warned_per_line(tmp_path: Path) -> None:
    odd = _env("brand_new_line", {"x": 1})
    item = _item(type="brand_new_item", id="i1")
    lines = [META, USER, TURN, SAY, odd, odd, odd, item, item.replace("i1", "i2")]
    drafts, cov = _coverage(tmp_path, lines)
    assert cov["brand_new_line"] == {"unknown": 3}
    assert cov["response_item/brand_new_item"] == {"unknown": 2}
    assert "issues" not in cov or cov["issues"] == {}
    assert len(drafts) == 1


def test_token_count_with_nothing_to_measure_is_reported(tmp_path: Path) -> None:
    parsed, issues = _parse(tmp_path, [META, USER, TURN, SAY, _tc(10, 1, 10), _tc(20, 1, 30),
                                       USER, TURN, SAY, _tc(30, 1, 60)])
    _, _, reqs = one_run_rows(parsed)
    assert [r["input_tokens"] for r in reqs] == [10, 30]
    assert [i.split(": ", 1)[1] for i in issues] == [
        "token_count with no model output to attach it to (usage dropped)"]


def test_items_of_one_identity_are_repeats_only_of_an_equal_one() -> None:
    """Three calls under one call_id: the second, another call, is kept; the third, the first
    written again, is its repeat (named by the first's line), and so is a fourth copy of the
    second."""
    call = json.loads(CALL)
    other = json.loads(CALL)
    other["payload"]["arguments"] = json.dumps({"command": ["bash", "-lc", "ls"]})
    records = [(n, json.loads(line)) for n, line in enumerate([META, USER, TURN], 1)]
    records += [(4, call), (5, other), (6, json.loads(CALL)), (7, json.loads(json.dumps(other)))]
    issues: list[Issue] = []
    kept = codex_file.unique(records, "r.jsonl", issues, Coverage())
    assert [no for no, _ in kept] == [1, 2, 3, 4, 5]
    assert [str(i) for i in issues] == [
        "r.jsonl:6: duplicate of the function_call item on line 4 (record skipped)",
        "r.jsonl:7: duplicate of the function_call item on line 5 (record skipped)"]
