"""Values of the wrong type that parsers read without a word (a text that is a number read as
empty, a tool name that is a list stringified as Python's ``['bash']``, a window said to come
from the wrong event): each is now one issue naming the field and what it held, and what text
there is is kept.  Crafted inputs, each a minimal log of its format; every expected count is
the number of values planted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers.content_text import as_text
from tests.replay.ingest.parsers.openhands_v1_fixtures import copy_fixture
from tests.replay.ingest.parsers.test_text_not_a_string import _planted_copy

WRONG = [12345, 1.5, True, {"a": 1}, ["a"], None]
"""A text that is no string: a number, a boolean, an object, a list, null."""


def _held(value: Any) -> str:
    """What an issue says ``value`` is (JSON's null, else the type's name)."""
    return "null" if value is None else type(value).__name__


def _claude(tmp_path: Path, content: Any) -> Path:
    """A Claude Code transcript: a call, its result holding ``content``, an answer."""
    def rec(kind: str, uuid: str, parent: str | None, k: int, message: dict[str, Any]) -> str:
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                           "timestamp": f"2026-01-01T00:00:0{k}.000Z", "message": message})
    usage = {"input_tokens": 10, "output_tokens": 5}
    lines = [
        rec("user", "u1", None, 0, {"role": "user", "content": "list the files"}),
        rec("assistant", "a1", "u1", 1, {"id": "m1", "role": "assistant", "model": "claude",
                                         "usage": usage, "content": [
                                             {"type": "tool_use", "id": "t1", "name": "Bash",
                                              "input": {"command": "ls"}}]}),
        rec("user", "u2", "a1", 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": content}]}),
        rec("assistant", "a2", "u2", 3, {"id": "m2", "role": "assistant", "model": "claude",
                                         "usage": usage, "content": [
                                             {"type": "text", "text": "done"}]}),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _result_texts(parsed: ParsedFile) -> list[str]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    m = parsed.tables.messages
    return [t for t, k in zip(m["text"].to_pylist(), m["kind"].to_pylist(), strict=True)
            if k == "tool_result"]


@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_claude_code_a_tool_result_text_that_is_no_string_is_said_the_rest_kept(
        tmp_path: Path, value: Any) -> None:
    path = _claude(tmp_path, [{"type": "text", "text": "a.py"}, {"type": "text", "text": value},
                              {"type": "text", "text": "b.py"}])
    parsed = parse_file(path, tmp_path)
    said = [(i.line, i.reason) for i in parsed.issues]
    assert said == [(3, (f"content block 0 (tool_result): content item 1: text is {_held(value)}, "
                        "not a string (read as empty)"))]
    assert _result_texts(parsed) == ["a.py\nb.py"]


def test_claude_code_every_text_that_is_no_string_is_one_issue(tmp_path: Path) -> None:
    items = [{"type": "text", "text": v} for v in WRONG]
    parsed = parse_file(_claude(tmp_path, [{"type": "text", "text": "kept"}, *items]), tmp_path)
    assert [i.reason.split(": ", 2)[1] for i in parsed.issues] == [
        f"content item {k}" for k in range(1, len(WRONG) + 1)]
    assert _result_texts(parsed) == ["kept"]


def test_claude_code_a_tool_result_content_that_is_a_number_is_said_and_kept_as_json(
        tmp_path: Path) -> None:
    parsed = parse_file(_claude(tmp_path, 42), tmp_path)
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (3, ("content block 0 (tool_result): content is int, not a string or a list (kept as "
            "its JSON)"))]
    assert _result_texts(parsed) == ["42"]


def test_claude_code_a_well_typed_result_says_nothing(tmp_path: Path) -> None:
    parsed = parse_file(_claude(tmp_path, [{"type": "text", "text": "a.py"},
                                           {"type": "image", "source": {}}]), tmp_path)
    assert parsed.issues == ()
    assert _result_texts(parsed) == ["a.py\n[image]"]


def test_claude_code_the_issue_reaches_the_ingest_and_strict_fails_it(tmp_path: Path) -> None:
    path = _claude(tmp_path, [{"type": "text", "text": 7}])
    out = tmp_path / "ds"
    got = CliRunner().invoke(app, ["ingest", str(path), "--out", str(out), "-q"])
    assert got.exit_code == 0, got.output
    assert ("s1.jsonl:3: content block 0 (tool_result): content item 0: text is int, not a "
            "string (read as empty)") in got.stderr
    strict = CliRunner().invoke(app, ["ingest", str(path), "--out", str(out), "-q", "--strict"])
    assert strict.exit_code == 1, strict.output


def _chat(tmp_path: Path, messages: list[Any]) -> ParsedFile:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"model": "gpt-x", "messages": messages}), encoding="utf-8")
    return parse_file(path, tmp_path, fmt="chat")


_USAGE = {"prompt_tokens": 10, "completion_tokens": 2}


@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_chat_a_text_part_that_is_no_string_is_said_read_as_empty(tmp_path: Path,
                                                                  value: Any) -> None:
    parsed = _chat(tmp_path, [{"role": "user", "content": [
        {"type": "text", "text": "keep"}, {"type": "text", "text": value}]}])
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (1, f"message 0: content part 1: text is {_held(value)}, not a string (read as empty)")]
    assert parsed.tables is not None
    assert parsed.tables.messages["text"].to_pylist() == ["keep", ""]  # (was str(value))


def test_chat_names_ids_and_flags_of_the_wrong_type_are_said(tmp_path: Path) -> None:
    parsed = _chat(tmp_path, [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "reasoning_content": 7, "model": ["m"],
         "usage": _USAGE, "tool_calls": [{"id": 5, "type": "function",
                                          "function": {"name": ["bash"], "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "5", "content": 42, "is_error": "false"},
        {"role": "assistant", "usage": _USAGE, "timestamp": 1_700_000_000, "content": [
            {"type": "thinking", "thinking": {"x": 1}},
            {"type": "tool_use", "id": "t1", "name": 3, "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": 0,
                                      "content": [{"type": "text", "text": "ok"},
                                                  {"type": "text", "text": False}]}]},
    ])
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (2, "message 1: reasoning_content is int, not a string (read as empty)"),
        (2, "message 1: tool_calls[0].id is int, not a string (kept as its JSON)"),
        (2, "message 1: tool_calls[0].function.name is list, not a string (kept as its JSON)"),
        (2, "model is list, not a string (read as empty)"),
        (3, "message 2: content is int, not a string or a list (kept as its JSON)"),
        (3, "message 2: is_error is str, not a boolean (read as true)"),
        (4, ("message 3: content part 0 (thinking): thinking is dict, not a string (read as "
            "empty)")),
        (4, ("message 3: content part 1 (tool_use): name is int, not a string (kept as its "
            "JSON)")),
        (4, "message 3: timestamp is int, not a string (not read)"),
        (5, ("message 4: content part 0 (tool_result): content item 1: text is bool, not a "
            "string (read as empty)")),
        (5, ("message 4: content part 0 (tool_result): is_error is int, not a boolean (read as "
            "false)")),
    ]
    assert parsed.tables is not None
    rows = parsed.tables.messages.select(["kind", "call_id", "tool", "text"]).to_pylist()
    calls = [(r["call_id"], r["tool"], r["text"]) for r in rows
             if r["kind"] in ("tool_call", "tool_result")]
    assert calls == [("5", '["bash"]', "{}"), ("5", '["bash"]', "42"), ("t1", "3", "{}"),
                     ("t1", "3", "ok")]  # (JSON, never Python's "['bash']")
    assert parsed.tables.runs["model"].to_pylist() == ["gpt-x"]  # (the one the file names)


def test_chat_well_typed_messages_say_nothing(tmp_path: Path) -> None:
    parsed = _chat(tmp_path, [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": None, "usage": _USAGE, "model": "m",
         "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out", "is_error": False}])
    assert parsed.issues == ()


def _mini(tmp_path: Path, assistant: dict[str, Any]) -> ParsedFile:
    doc = {"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "run",
         "extra": {"response": {"usage": _USAGE}}, **assistant},
        {"role": "tool", "tool_call_id": "c1", "content": "out"}]}
    path = tmp_path / "x.traj.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return parse_file(path, tmp_path)


def _calls(parsed: ParsedFile) -> list[tuple[str, str]]:
    assert parsed.tables is not None
    rows = parsed.tables.messages.select(["kind", "tool", "text"]).to_pylist()
    return [(r["tool"], r["text"]) for r in rows if r["kind"] == "tool_call"]


@pytest.mark.parametrize("name", [["bash"], {"a": 1}, 0, []], ids=repr)
def test_mini_swe_agent_a_tool_name_that_is_no_string_is_said(tmp_path: Path, name: Any) -> None:
    parsed = _mini(tmp_path, {"tool_calls": [{"id": "c1", "function": {
        "name": name, "arguments": '{"command": "ls"}'}}]})
    said = [i.reason for i in parsed.issues]
    assert said == [(f"messages[2]: tool_calls[0]: function.name is {type(name).__name__}, not a "
                    "string (read as 'bash', the one tool mini-swe-agent has)")]
    assert _calls(parsed) == [("bash", '{"command": "ls"}')]


def test_mini_swe_agent_commands_that_are_no_string_are_said(tmp_path: Path) -> None:
    parsed = _mini(tmp_path, {"tool_call_id": None, "extra": {
        "actions": [{"command": ["ls", "-la"]}, "pwd", {"command": None}, {"command": "cat a"}],
        "response": {"usage": _USAGE}}})
    said = [i.reason for i in parsed.issues if i.reason.startswith("messages[2]")]
    assert said == [
        "messages[2]: extra.actions[0].command is list, not a string (kept as its JSON)",
        "messages[2]: extra.actions[1] is str, not an object (left out)",
        "messages[2]: extra.actions[2].command is null, not a string (read as empty)"]
    assert _calls(parsed) == [("bash", '["ls", "-la"]'), ("bash", ""), ("bash", "cat a")]


def _codex_line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2026-09-10T10:00:00.000Z", "type": kind, "payload": payload})


def _codex_rollout(tmp_path: Path, lines: list[str]) -> ParsedFile:
    """``lines`` (``_codex_line``'s) parsed as a Codex rollout file in ``tmp_path``."""
    path = tmp_path / "rollout-2026-09-10T10-00-00-0199a000-0000-7000-8000-000000000001.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return parse_file(path, tmp_path)


@pytest.mark.parametrize("where", [("task_started",), ("token_count",),
                                   ("task_started", "token_count")])
def test_codex_a_bad_window_names_the_event_it_came_from(tmp_path: Path,
                                                         where: tuple[str, ...]) -> None:
    def usage(window: Any) -> dict[str, Any]:
        return {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 100, "output_tokens": 5},
            "total_token_usage": {"input_tokens": 100, "output_tokens": 5},
            "model_context_window": window}}
    bad = -1
    lines = [
        _codex_line("session_meta", {"id": "s1", "cli_version": "0.149.0"}),
        _codex_line("turn_context", {"model": "gpt-5.5"}),
        _codex_line("event_msg", {"type": "task_started",
                                  "model_context_window": bad if "task_started" in where
                                  else 258_400}),
        _codex_line("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "hi"}]}),
        _codex_line("response_item", {"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": "hello"}]}),
        _codex_line("event_msg", usage(bad if "token_count" in where else 258_400)),
    ]
    parsed = _codex_rollout(tmp_path, lines)
    said = [(i.line, i.reason) for i in parsed.issues if "model_context_window" in i.reason]
    first = 3 if "task_started" in where else 6
    each = "" if len(where) < 2 else ": task_started 1, token_count 1"
    assert said == [(first, (f"{'/'.join(where)} model_context_window is -1, not a positive token "
                            f"count ({len(where)} time(s) in the file{each}): not used (the "
                            "run's is what the others record, else unknown)"))]
    assert parsed.tables is not None
    window = parsed.tables.runs["recorded_window_tokens"].to_pylist()
    assert window == [258_400 if len(where) == 1 else None]


FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
NAMES: dict[str, tuple[Path, Callable[[dict[str, Any]], bool], str, str]] = {
    # format: (real file, the call planted in, its key, the field said)
    "gemini_cli": (FIXTURES / "gemini_cli" / "session-2026-08-20T09-14-3f2b9c1e.jsonl",
                   lambda d: "args" in d and d.get("name") == "replace", "name",  # (a message
                   # written once: an earlier one is written again, its last copy read)
                   "toolCalls[0].name"),
    "atif": (FIXTURES / "atif" / "terminus2-timeout.trajectory.json",
             lambda d: isinstance(d.get("function_name"), str), "function_name",
             "tool_calls[0].function_name"),
    "opencode": (FIXTURES / "opencode" / "agentlogs-all-tools.export.json",
                 lambda d: d.get("type") == "tool" and isinstance(d.get("tool"), str), "tool",
                 "(tool): tool"),
    "inspect_ai": (FIXTURES / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json",
                   lambda d: isinstance(d.get("function"), str) and "arguments" in d,
                   "function", "].function"),
}


@pytest.mark.parametrize("fmt", sorted(NAMES))
def test_a_tool_name_that_is_a_list_is_said_and_kept_as_its_json(tmp_path: Path,
                                                                  fmt: str) -> None:
    """A tool name written as a list read as 'tool' unsaid (as_str: ''); now its JSON, one
    issue naming the field; every other call as before."""
    path, match, key, field = NAMES[fmt]
    original = tmp_path / f"original{path.suffix}"
    if path.suffix == ".jsonl":
        original.write_bytes(path.read_bytes())
    else:
        original.write_text(json.dumps(json.loads(path.read_bytes())), encoding="utf-8")
    planted = tmp_path / f"planted{path.suffix}"
    name = ["x_tool"]
    _planted_copy(path, match, key, name, planted)
    before, after = parse_file(original, tmp_path, fmt=fmt), parse_file(planted, tmp_path, fmt=fmt)
    new = sorted({i.reason for i in after.issues} - {i.reason for i in before.issues})
    assert len(new) == 1 and new[0].endswith(f"{field} is list, not a string (kept as its JSON)")
    assert before.tables is not None and after.tables is not None
    tools = [t for t, k in zip(after.tables.messages["tool"].to_pylist(),
                               after.tables.messages["kind"].to_pylist(), strict=True)
             if k == "tool_call"]
    assert '["x_tool"]' in tools
    assert after.tables.messages.num_rows == before.tables.messages.num_rows


def test_atif_a_call_id_that_is_a_number_is_said_and_still_pairs(tmp_path: Path) -> None:
    """A call id 7 on a call and on its result: both read as '' before, so the call took a
    made-up id and its result another (paired only by position); now both are '7', said."""
    doc = json.loads((FIXTURES / "atif" / "openhands-hello-world.trajectory.json").read_bytes())
    step = next(s for s in doc["steps"] if s.get("tool_calls") and any(
        r.get("source_call_id") == s["tool_calls"][0]["tool_call_id"]
        for r in (s.get("observation") or {}).get("results", [])))
    ident = step["tool_calls"][0]["tool_call_id"]
    step["tool_calls"][0]["tool_call_id"] = 7
    results = step["observation"]["results"]
    k = next(k for k, r in enumerate(results) if r.get("source_call_id") == ident)
    results[k]["source_call_id"] = 7
    path = tmp_path / "t.trajectory.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="atif")
    i = doc["steps"].index(step)
    said = [x.reason for x in parsed.issues if "is int, not a string" in x.reason]
    assert said == [
        f"step {i}: tool_calls[0].tool_call_id is int, not a string (kept as its JSON)",
        (f"step {i}: observation result {k}: source_call_id is int, not a string (kept as its "
        "JSON)")]
    assert parsed.tables is not None
    m = parsed.tables.messages.select(["kind", "call_id"]).to_pylist()
    assert [r["kind"] for r in m if r["call_id"] == "7"] == ["tool_call", "tool_result"]
    assert not any("orphan" in x.reason or "no result" in x.reason for x in parsed.issues)


@pytest.mark.parametrize("key", ["id", "name"])
def test_openhands_v1_a_call_id_or_name_of_another_type_is_said_as_such(
        tmp_path: Path, key: str) -> None:
    """A tool call's name written as a list was said as 'the tool call has no id or no name'
    (as_str read it as ''): now what it holds."""
    folder = copy_fixture(tmp_path)
    planted = next(f for f in sorted(folder.rglob("event-*.json"))
                   if isinstance(json.loads(f.read_bytes()).get("tool_call"), dict))
    event = json.loads(planted.read_bytes())
    event["tool_call"][key] = ["x"]
    planted.write_text(json.dumps(event), encoding="utf-8")
    parsed = parse_file(folder, folder.parent)
    said = [i.reason for i in parsed.issues if "tool_call." in i.reason]
    assert said == [(f"{planted.relative_to(folder.parent).as_posix().split('/', 1)[1]}: "
                    f"ValueError: tool_call.{key} is list, not a string; skipped")]


@pytest.mark.parametrize("fmt", ["atif", "inspect_ai"])
def test_a_request_s_model_that_is_no_string_is_said(tmp_path: Path, fmt: str) -> None:
    """A request's model written as a number was read as '' unsaid (as_str)."""
    if fmt == "atif":
        path = FIXTURES / "atif" / "openhands-hello-world.trajectory.json"
        match, key, field = (lambda d: d.get("source") == "agent" and "metrics" in d), \
            "model_name", "model_name"
    else:
        path = FIXTURES / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json"
        match, key, field = (lambda d: d.get("event") == "model"), "model", \
            "model event: model"
    planted = tmp_path / f"planted{path.suffix}"
    _planted_copy(path, match, key, 5, planted)
    before = parse_file(path, path.parent, fmt=fmt)
    after = parse_file(planted, tmp_path, fmt=fmt)
    new = [i.reason for i in after.issues if "model" in i.reason]
    assert len(new) == 1 and new[0].endswith(f"{field} is int, not a string (read as empty)")
    assert before.tables is not None and after.tables is not None
    # (the request then names the run's model, as one with none does: nothing of the 5)
    assert after.tables.requests["model"].to_pylist() == \
        before.tables.requests["model"].to_pylist()


def test_one_object_in_two_places_is_said_at_each_place() -> None:
    """``[7, 7]`` holds Python's one 7 twice: each place is said with its own index (found by
    identity, it was item 1 twice)."""
    bad: list[str] = []
    assert as_text(["a", 7, 7, {"text": 7}, 7], bad) == "a"
    assert [b.split(" is ")[0].split(":")[0] for b in bad] == [
        "content item 1", "content item 2", "content item 3", "content item 4"]
