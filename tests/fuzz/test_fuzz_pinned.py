"""Every input that once failed the fuzz tests, pinned by a plain test: degenerate inputs to every
parser, the bugs found outside the parsers (tokenizer panic on a million spaces, quadratic shell
classification, lone surrogates outside the text column), and the parser regressions fixed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest._build import BUILD as INGEST_BUILD
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.source import Issue, Source
from tests.fuzz.harness import (
    LIMIT,
    _identity,
    _run_of,
    check,
    explain_difference,
    hard_limit,
    parse_direct,
    same_parse,
)
from tests.fuzz.mutations import deep_list, join_lines, json_object, serialise_with, split_lines
from tests.fuzz.seeds import Seed, dump_doc, dump_line
from tests.pure_rerun import ran_pure

# --------------------------------------------------------------------------- pinned inputs

@pytest.mark.parametrize("fmt", sorted(PARSERS))
@pytest.mark.parametrize("payload", [b"", b"\n\n", b"\x00" * 64, b"\xff\xfe", b"[]", b"{}",
                                     b"null", b"[" * 5000 + b"]" * 5000,
                                     b'{"a":' * 5000 + b"1" + b"}" * 5000,
                                     b'[{"a":' * 3000 + b"1" + b"}]" * 3000])
def test_degenerate_inputs_with_every_parser(fmt: str, payload: bytes, workdir: Path) -> None:
    """Empty, binary and deeply nested inputs, forced through every parser."""
    check(fmt, "degenerate.json", payload, workdir, LIMIT)


# --------------------------------------------------------------------------- known bugs elsewhere

def _claude_file(path: Path, text: str) -> Path:
    """A two-record Claude Code transcript whose prompt is ``text``."""
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
         "message": {"id": "m1", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": "ok"}]}},
    ]
    path.write_bytes(b"".join(dump_line(r) + b"\n" for r in records))
    return path


def test_million_spaces_in_a_message(tmp_path: Path) -> None:
    path = _claude_file(tmp_path / "spaces.jsonl", "x" + " " * 1_000_000 + "y")
    try:
        parsed = parse_file(path)
    except BaseException as exc:  # noqa: BLE001 - the panic is not an Exception
        raise AssertionError(f"parse_file raised {type(exc).__name__}") from None
    assert parsed.tables is not None


def test_huge_shell_word_is_classified_in_time() -> None:
    from replay.ingest.ops import classify

    command = "echo '" + "QUJD" * 75_000 + "' | base64 -d > blob.bin"
    with hard_limit(0.5):  # fails (Hang) instead of waiting the seconds out
        assert classify("bash", command) == ("write", "blob.bin")


def test_many_assignments_are_classified_in_time() -> None:
    from replay.ingest.ops import classify

    with hard_limit(0.5):
        classify("bash", "A=1 " * 30_000 + "ls")


def test_env_pipe_is_classified() -> None:
    from replay.ingest.ops import classify

    assert classify("bash", "env | grep PATH").op in ("exec", "search")


# --------------------------------------------------------------------------- regressions (fixed)


@pytest.mark.parametrize("fmt", ["codex", "chat"])
def test_sniffers_answer_false_on_deep_nesting(fmt: str) -> None:
    """codex.sniff and chat.sniff raised RecursionError on a deeply nested head (``[[[…]]]``),
    which aborted detection for every later parser."""
    for head in (b"[" * 5000 + b"]" * 5000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                 b"[" * 5000 + b"]" * 5000 + b"\n" + b"[" * 5000 + b"]" * 5000):
        assert PARSERS[fmt].sniff("x.jsonl", head) is False


def test_deep_value_in_a_mini_trajectory_keeps_the_readable_messages(
        seeds: dict[str, Seed], workdir: Path) -> None:
    """A value nested 5,000 deep in a ``.traj.json`` used to stop detection at the Codex sniffer
    (the whole file lost); now the mini-swe-agent parser keeps the messages before it."""
    seed = seeds["mini"]
    doc = json.loads(seed.data)
    data = serialise_with(doc, (6,), deep_list(b"1", 5000), False)  # a line of its own
    drafts, issues = check(seed.fmt, seed.filename, data, workdir, LIMIT)
    parsed = parse_file(workdir / seed.filename)
    assert parsed.format == "mini_swe_agent" and parsed.tables is not None
    assert drafts[0].run["n_messages"] == 6
    assert any("damaged file: kept the 6 readable messages" in i.reason for i in issues)


def test_chat_jsonl_with_a_damaged_first_line(seeds: dict[str, Seed]) -> None:
    """A chat JSON Lines file whose first line was damaged was read as one JSON document: the
    whole file was lost with one 'malformed JSON' issue.  Now line 1 is reported and skipped."""
    seed = seeds["chat_jsonl"]
    lines = split_lines(seed.data)
    damaged = join_lines([lines[0][:25], *lines[1:]], seed.data)
    run, issues = _run_of("chat", seed.filename, damaged)
    assert [i.line for i in issues] == [1]
    want, _ = _run_of("chat", seed.filename, join_lines([b"", *lines[1:]], seed.data))
    assert same_parse([run], [want])
    # a damaged pretty-printed document stays one file-level issue, not one per line
    doc_issues: list[Issue] = []
    assert parse_direct("chat", "c.json", seeds["chat_object"].data[:-40], LIMIT)[0] == []
    doc_issues = parse_direct("chat", "c.json", seeds["chat_object"].data[:-40], LIMIT)[1]
    assert len(doc_issues) == 1 and "malformed JSON" in doc_issues[0].reason


@pytest.mark.parametrize("fmt,data", [
    # mini-swe-agent: an assistant message without content (a model call that returned nothing)
    ("mini_swe_agent", dump_doc([{"role": "user", "content": "task"}, {"role": "assistant"},
                                 {"role": "user", "content": "go on"}])),
    # SWE-agent: a step with neither thought, response nor action
    ("swe_agent", dump_doc({"trajectory": [{"observation": "o"}, {"action": "ls", "thought": "t",
                                                                  "observation": "a b"}]})),
    # Claude Code: a streamed response whose only record has an empty content list
    ("claude_code", b"".join(dump_line(r) + b"\n" for r in [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x", "content": []}},
        {"type": "user", "uuid": "v", "parentUuid": "a", "sessionId": "s",
         "message": {"role": "user", "content": "again"}}])),
])
def test_message_without_content_keeps_indices_dense(fmt: str, data: bytes) -> None:
    """A message with no block left a hole in the message indices (``n_messages`` counted it,
    no row had it) and its request pointed at a message that did not exist.  The builder now
    gives such a message one empty text block."""
    run, issues = _run_of(fmt, "x.traj.json" if fmt == "mini_swe_agent" else "x.json", data)
    assert not issues
    out = run.requests["output_msg"][0]
    rows = [k for k, m in enumerate(run.messages["msg"]) if m == out]
    assert [run.messages["role"][k] for k in rows] == ["assistant"]
    assert [run.messages["text"][k] for k in rows] == [""] or fmt == "swe_agent"


def test_codex_duplicated_items_are_reported(seeds: dict[str, Seed]) -> None:
    """A Codex call, output or reasoning item written twice was counted twice, silently (one
    more tool call, one more result, one more request).  Now the copy is reported and skipped;
    messages, which carry no identity, may still repeat."""
    for name in ("codex_small", "codex_2025", "codex_legacy"):
        seed = seeds[name]
        lines = split_lines(seed.data)
        want, _ = _run_of("codex", seed.filename, seed.data)
        for at, raw in enumerate(lines):
            if not _identity("codex", json_object(raw)):
                continue
            doubled = join_lines([*lines, raw], seed.data)
            got, issues = _run_of("codex", seed.filename, doubled)
            assert [i.line for i in issues] == [len(lines) + 1], (name, at)
            assert "duplicate" in issues[0].reason and f"line {at + 1}" in issues[0].reason
            assert same_parse([got], [want]), (name, at, explain_difference([got], [want]))


def test_chat_duplicated_tool_messages_are_reported(seeds: dict[str, Seed]) -> None:
    """A chat message with a tool call id (a call, or a result) written twice was counted twice;
    now the copy is reported at its line and skipped."""
    seed = seeds["chat_jsonl"]
    lines = split_lines(seed.data)
    want, _ = _run_of("chat", seed.filename, seed.data)
    checked = 0
    for at, raw in enumerate(lines):
        if _identity("chat", json_object(raw)):
            got, issues = _run_of("chat", seed.filename, join_lines([*lines, raw], seed.data))
            assert [i.line for i in issues] == [len(lines) + 1] and "repeats" in issues[0].reason
            assert same_parse([got], [want])
            checked += 1
    assert checked >= 4


def test_chat_timestamp_out_of_range(workdir: Path) -> None:
    """A chat message whose unix ``created`` is past year 9999 (or nan) raised OverflowError out
    of the chat parser: the whole file was lost.  Now the message just has no timestamp."""
    data = b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi", "created": 10**30},
        {"role": "assistant", "content": "x", "created": float("1e308")}])
    run, issues = _run_of("chat", "c.jsonl", data)
    assert not issues and run.messages["ts"] == ["", ""]
    check("chat", "c.jsonl", data, workdir, LIMIT)


@pytest.mark.parametrize("fmt,data", [
    ("chat", b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "usage": {"prompt_tokens": 2**63,
                                                         "completion_tokens": 5}}])),
    ("claude_code", b"".join(dump_line(r) + b"\n" for r in [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x",
                     "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 10**30, "output_tokens": -(2**63) - 1}}}])),
])
def test_token_count_out_of_int64(fmt: str, data: bytes, workdir: Path) -> None:
    """A usage number outside int64 made ``tokenize`` fail after parsing: the whole file was
    lost ("values the schema cannot hold").  Now that number is unknown and reported."""
    run, issues = _run_of(fmt, "x.jsonl", data)
    assert run.requests["input_tokens"] == [None]
    assert issues and all("out of range" in i.reason for i in issues)
    check(fmt, "x.jsonl", data, workdir, LIMIT)
    assert parse_file(workdir / "x.jsonl", fmt=fmt).tables is not None


def test_lone_surrogate_outside_the_text(workdir: Path) -> None:
    data = b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00\ud800"},
        {"role": "assistant", "content": "x", "model": "m\udfff"}])
    path = workdir / "surrogate.jsonl"
    path.write_bytes(data)
    parsed = parse_file(path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]


@pytest.mark.parametrize("doc", [
    {"trajectory": [{"action": "ls", "observation": "a"}], "history": 1},
    {"trajectory": [{"action": "ls", "observation": "a"}],
     "history": [{"role": "assistant", "tool_calls": 1}]},
    {"trajectory": [{"action": "ls", "observation": "a", "query": 1}]},
    {"trajectory": [{"action": "ls", "observation": "a"}], "replay_config": {"agent": "x"}},
    {"trajectory": [{"action": "ls", "observation": "a"}], "replay_config": "[" * 5000},
])
def test_swe_agent_wrong_typed_run_fields(doc: dict[str, Any]) -> None:
    """``history`` / ``tool_calls`` / ``query`` that are not lists, an ``agent`` config that is
    not an object, or a deeply nested ``replay_config`` string raised out of the SWE-agent
    parser (TypeError, AttributeError, RecursionError): the whole file was lost."""
    run, _ = _run_of("swe_agent", "x.traj", dump_doc(doc))
    assert run.run["n_tool_calls"] == 1 and run.run["n_requests"] == 1


def test_chat_request_line_with_messages_as_a_string() -> None:
    """A request-log line whose ``messages`` was a string became one message per character
    (one issue each: a million for a 1 MB string, and seconds per MB).  Now the line is
    reported once and skipped."""
    good = {"messages": [{"role": "user", "content": "hi"}],
            "response": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]}}
    bad = dict(good, messages="x" * 10_000)
    run, issues = _run_of("chat", "r.jsonl", b"".join(dump_line(r) + b"\n" for r in [good, bad]))
    assert [(i.line, "not a list" in i.reason) for i in issues] == [(2, True)]
    assert run.run["n_requests"] == 1


def test_builder_keeps_a_call_the_classifier_fails_on(request: pytest.FixtureRequest,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in ``replay.ingest.ops.classify`` (e.g. IndexError on ``env | grep PATH``) escaped every
    parser and lost the file.  The builder now keeps the call as op 'other' with an issue.
    (Compiled, the builder calls ``classify`` straight: run where it is pure.)"""
    if ran_pure(request, INGEST_BUILD.compiled):
        return
    from replay.ingest.parsers import builder

    def broken(tool: str, args: Any) -> Any:
        raise IndexError("list index out of range")

    monkeypatch.setattr(builder, "classify", broken)
    issues: list[Issue] = []
    b = builder.RunBuilder(Source(path="p", rel="p", data=b"", sha256="0" * 64), 0, "t",
                           issues)
    b.message("assistant")
    b.tool_call("c1", "Bash", {"command": "env | grep PATH"})
    msgs = b.build().messages
    assert (msgs["kind"], msgs["op"], msgs["tool"]) == (["tool_call"], ["other"], ["Bash"])
    assert len(issues) == 1 and "not classified" in issues[0].reason


def test_env_pipe_command_keeps_the_file(workdir: Path) -> None:
    """End to end: a transcript running ``env | grep PATH`` is parsed, not lost."""
    records = [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "check PATH"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash",
              "input": {"command": "env | grep PATH"}}]}},
        {"type": "user", "uuid": "v", "parentUuid": "a", "sessionId": "s",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": "PATH=/bin"}]}}]
    path = workdir / "env.jsonl"
    path.write_bytes(b"".join(dump_line(r) + b"\n" for r in records))
    parsed = parse_file(path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    assert parsed.tables.runs["n_tool_results"][0].as_py() == 1


@pytest.mark.parametrize("messages", [-1, "xyz", {"id": "m", "type": "user"}])
def test_gemini_session_whose_messages_is_not_a_list(messages: Any, workdir: Path) -> None:
    """A Gemini CLI session document whose ``messages`` was ``-1`` raised TypeError out of the
    parser (the whole file lost); a string or an object was walked as if it were the list (a
    'malformed message' counted per character or key).  Now it is one issue at the record and
    one unknown ``messages (not a list)`` in the coverage, nothing else read from it."""
    seed = (Path(__file__).resolve().parents[1] / "fixtures" / "gemini_cli"
            / "session-2025-09-03T16-40-8c1d2e3f.json")
    doc = json.loads(seed.read_bytes())
    assert isinstance(doc["messages"], list) and isinstance(doc["sessionId"], str)
    path = workdir / seed.name
    path.write_bytes(dump_doc(dict(doc, messages=messages)))
    parsed = parse_file(path, fmt="gemini_cli")
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (0, f"'messages' is not a list but a {type(messages).__name__}: no message read from it")]
    assert parsed.coverage["messages (not a list)"] == {"unknown": 1}
    assert "message (malformed)" not in parsed.coverage


@pytest.mark.parametrize("sid", ["s" * 300, "a\ud800b", "x" * 1_000_000],
                         ids=["300 bytes", "lone surrogate", "1 MB"])
def test_claude_code_session_id_no_file_system_names(sid: str, workdir: Path) -> None:
    """A record's ``sessionId`` names the session's own file beside the transcript
    (``claude_code_file.sibling``): one longer than a file name may be (found by the long fuzz
    run: 1 MB) raised OSError (ENAMETOOLONG) out of the parser: the whole file was lost.  Now
    no such file is looked for (nor for a name with a lone surrogate, which pathlib took as
    absent already): the session's records are kept in this file (a run of their own, as
    another session's are)."""
    records = [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s0",
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": sid,
         "message": {"id": "m", "role": "assistant", "model": "x",
                     "content": [{"type": "text", "text": "yo"}]}}]
    path = workdir / "sid.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    parsed = parse_file(path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    assert sorted(parsed.tables.runs["n_requests"].to_pylist()) == [0, 1]
