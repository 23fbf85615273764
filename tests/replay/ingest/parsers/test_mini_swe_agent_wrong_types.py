"""mini-swe-agent: a message field of the wrong type is said in the log's terms — the message,
the field, what it holds and what was expected — never in Python's ("unhashable type: 'list'",
"'int' object is not iterable")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.source import Issue

PYTHON_WORDS = ("unhashable", "object is not", "not iterable", "not subscriptable",
                "has no attribute", "NoneType")
_UNSET = object()


def _chat(**assistant: Any) -> list[dict[str, Any]]:
    """A system prompt, a task, an assistant reply with one action (its fields ``assistant``:
    _UNSET removes one) and its output."""
    reply = {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls\n```",
             "extra": {"response": {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}}}
    reply.update(assistant)
    reply = {k: v for k, v in reply.items() if v is not _UNSET}
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}, reply,
            {"role": "user", "content": "<output>a</output>"}]


def _issues(tmp_path: Path, chat: list[Any]) -> tuple[list[Issue], list[dict[str, Any]]]:
    path = tmp_path / "t.traj.json"
    text = json.dumps({"info": {"mini_version": "1.0.0"}, "messages": chat,
                       "trajectory_format": "mini-swe-agent-1"}, indent=1)
    path.write_text(text)
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "mini_swe_agent" and parsed.tables is not None
    for i in parsed.issues:
        assert not any(w in i.reason for w in PYTHON_WORDS), i.reason
    return list(parsed.issues), parsed.tables.messages.to_pylist()


@pytest.mark.parametrize(("role", "held"), [
    (["assistant"], "list"), ({"name": "assistant"}, "dict"), (3, "int"), (True, "bool"),
    (None, "null"), (_UNSET, "missing")], ids=["list", "dict", "int", "bool", "null",
                                                   "missing"])
def test_a_role_that_is_no_string_is_said_as_such(tmp_path: Path, role: Any, held: str) -> None:
    issues, rows = _issues(tmp_path, _chat(role=role))
    assert [i.reason for i in issues] == [
        (f"messages[2]: role is {held}, not a string (one of system, developer, user, assistant, "
         "tool, exit) (message skipped)")]
    assert issues[0].line > 0  # the message's line in the file
    assert not any("THOUGHT" in r["text"] for r in rows)


def test_an_unknown_role_is_said_short_with_what_was_expected(tmp_path: Path) -> None:
    issues, _ = _issues(tmp_path, _chat(role="robot" + "x" * 500))
    assert len(issues) == 1 and issues[0].reason.startswith("messages[2]: unknown role 'robotxx")
    assert "(one of system, developer, user, assistant, tool, exit)" in issues[0].reason
    assert len(issues[0].reason) < 200


@pytest.mark.parametrize("calls", [5, 1.5, True, "ls", {"id": "c1"}], ids=repr)
def test_tool_calls_that_are_no_list_are_said(tmp_path: Path, calls: Any) -> None:
    issues, _ = _issues(tmp_path, _chat(tool_calls=calls))
    assert [i.reason for i in issues] == [
        (f"messages[2]: tool_calls is {type(calls).__name__}, not a list of calls "
         "(message skipped)")]


def test_a_tool_call_that_is_no_object_is_said_and_the_others_kept(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash",
                                                         "arguments": '{"command": "ls"}'}}
    issues, rows = _issues(tmp_path, _chat(tool_calls=[7, call, "x"]))
    assert [i.reason for i in issues] == [
        "messages[2]: tool_calls[0] is int, not an object (2 of 3 calls left out)"]
    assert [r["call_id"] for r in rows if r["kind"] == "tool_call"] == ["c1"]


@pytest.mark.parametrize("content", [{"text": "hi"}, 42], ids=["dict", "int"])
def test_content_of_the_wrong_type_says_what_was_expected(tmp_path: Path, content: Any) -> None:
    issues, _ = _issues(tmp_path, _chat(content=content))
    assert [i.reason for i in issues] == [
        (f"messages[2]: content is {type(content).__name__}, not a string or a list of parts "
         "(message skipped)")]


def test_a_null_tool_call_is_said_as_null(tmp_path: Path) -> None:
    issues, _ = _issues(tmp_path, _chat(tool_calls=[None]))
    assert [i.reason for i in issues] == [
        "messages[2]: tool_calls[0] is null, not an object (1 of 1 calls left out)"]


def test_a_null_message_is_said_as_null(tmp_path: Path) -> None:
    chat: list[Any] = _chat()
    chat.insert(2, None)
    issues, _ = _issues(tmp_path, chat)
    assert [i.reason for i in issues] == [
        "messages[2]: expected an object, got null (message skipped)"]
