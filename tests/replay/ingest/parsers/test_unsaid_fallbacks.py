"""Fallbacks the parsers took without a word, each now said: a Claude Code record whose
``sessionId`` is null or no string (it joins the file's first session), an Inspect sample whose
id or epoch is of an odd type (its run's label wrote Python's ``str`` of it), a run-level field
written as JSON null where the format never writes null (read as unknown).  Real logs with one
value planted, each compared with the same log with the field removed: the tables are equal and
the planted value adds exactly one issue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.parse_file import ParsedFile, parse_file
from tests.replay.ingest.parsers.openhands_v1_fixtures import copy_fixture
from tests.replay.ingest.parsers.test_wrong_types_run_fields import RUN_FIELDS, SAMPLES, _set
from tests.replay.ingest.parsers.test_wrong_types_unsaid import (
    FIXTURES,
    _codex_line,
    _codex_rollout,
    _held,
)

SHORT = SAMPLES / "claude-code" / "short.jsonl"
"""A real Claude Code 2.1.38 session (15 lines; every record from line 2 on names its
session)."""
INSPECT = FIXTURES / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json"
"""A real Inspect log (one sample: id 1, epoch 1)."""


def _tables_equal(a: ParsedFile, b: ParsedFile) -> bool:
    """Whether the tables of ``a`` and ``b`` are equal but for what names the file's bytes
    (its digest, its runs' ids)."""
    assert a.tables is not None and b.tables is not None

    def kept(parsed: ParsedFile, name: str) -> Any:
        table = getattr(parsed.tables, name)
        return table.drop([c for c in ("source", "sha256", "run_id", "parent_run_id")
                           if c in table.column_names])

    return all(kept(a, t).equals(kept(b, t)) for t in ("runs", "messages", "requests"))


def _claude_planted(tmp_path: Path, at: dict[int, dict[str, Any]]) -> tuple[ParsedFile,
                                                                            ParsedFile]:
    """``SHORT`` with the fields of ``at`` (line -> key -> value) set, and with them removed:
    both parsed (their runs' ids differ: the file's name is the same, its bytes are not)."""
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    parsed = []
    for name in ("absent", "planted"):
        for no, fields in at.items():
            for key, value in fields.items():
                if name == "absent":
                    lines[no - 1].pop(key, None)
                else:
                    lines[no - 1][key] = value
        folder = tmp_path / name
        folder.mkdir()
        path = folder / SHORT.name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        parsed.append(parse_file(path, folder))
    return parsed[0], parsed[1]


def _new_issues(before: ParsedFile, after: ParsedFile) -> list[tuple[int, str]]:
    return [(i.line, i.reason) for i in after.issues
            if (i.line, i.reason) not in {(j.line, j.reason) for j in before.issues}]


@pytest.mark.parametrize("value", [5, 1.5, True, ["s"], {"a": 1}, None], ids=repr)
@pytest.mark.parametrize("line", [5, 9], ids=["assistant", "progress"])
def test_claude_code_a_session_id_that_is_no_string_is_said_the_record_kept(
        tmp_path: Path, value: Any, line: int) -> None:
    """A record whose ``sessionId`` is a number (a list, an object, null) joined the file's
    first session without a word; it still does (as a record without one does), said once."""
    absent, planted = _claude_planted(tmp_path, {line: {"sessionId": value}})
    assert _new_issues(absent, planted) == [
        (line, f"sessionId is {_held(value)}, not a string (read as empty)")]
    assert _tables_equal(absent, planted)


def test_claude_code_session_ids_of_another_type_are_said_once_a_file(tmp_path: Path) -> None:
    absent, planted = _claude_planted(tmp_path, {k: {"sessionId": k} for k in range(5, 12)})
    assert _new_issues(absent, planted) == [(5, "sessionId is int, not a string (read as empty)")]
    assert _tables_equal(absent, planted)


def test_the_session_id_issue_reaches_ingest_and_inspect(tmp_path: Path) -> None:
    """Said where the user sees it: ``replay ingest`` prints it (``--strict`` fails the file)
    and ``replay inspect`` lists it."""
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    lines[4]["sessionId"] = 5
    path = tmp_path / SHORT.name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    said = "short.jsonl:5: sessionId is int, not a string (read as empty)"
    runner = CliRunner()
    got = runner.invoke(app, ["ingest", str(path), "--out", str(tmp_path / "ds"), "-q"])
    assert got.exit_code == 0 and said in got.stderr, got.output
    strict = runner.invoke(app, ["ingest", str(path), "--out", str(tmp_path / "ds2"), "-q",
                                 "--strict"])
    assert strict.exit_code == 1
    shown = runner.invoke(app, ["inspect", str(path), "--json"])
    assert shown.exit_code == 0
    assert [i for i in json.loads(shown.stdout)["issues"] if i.endswith(said)] != []


def test_claude_code_a_null_version_or_title_is_said(tmp_path: Path) -> None:
    """Claude Code writes ``version`` on every record and a title record's title as strings: a
    null one read as unknown unsaid (said at the first message record: the version is read
    from those; a title record without its title stays unsaid)."""
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    sid = lines[1]["sessionId"]
    for rec in lines[1:]:
        rec["version"] = None
    lines += [{"type": "custom-title", "customTitle": None, "sessionId": sid},
              {"type": "ai-title", "sessionId": sid}]
    path = tmp_path / SHORT.name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    parsed = parse_file(path, tmp_path)
    reference = parse_file(SHORT, SHORT.parent)
    assert [(i.line, i.reason) for i in parsed.issues if i not in reference.issues] == [
        (4, "version is null, not a string (read as empty)"),
        (16, "customTitle is null, not a string (read as empty)")]
    assert parsed.tables is not None
    assert parsed.tables.runs["harness"].to_pylist() == ["claude-code"]


def _inspect(tmp_path: Path, **fields: Any) -> ParsedFile:
    """``INSPECT`` with its sample's fields set (removed when ``...``)."""
    doc = json.loads(INSPECT.read_bytes())
    for key, value in fields.items():
        _set(doc["samples"][0], (key,), value)
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return parse_file(path, tmp_path, fmt="inspect_ai")


@pytest.mark.parametrize(("value", "label"), [
    (1.5, "1.5"), (True, "true"), (False, "false"), ([1, "a"], '[1, "a"]'),
    ({"n": 1}, '{"n": 1}'), (None, "null"), (..., "null")], ids=repr)
@pytest.mark.parametrize("key", ["id", "epoch"])
def test_inspect_a_sample_id_or_epoch_of_an_odd_type_is_said_and_labelled_as_json(
        tmp_path: Path, key: str, value: Any, label: str) -> None:
    """The run's label wrote Python's ``str`` of an odd id (``sample True epoch 1``,
    ``{'n': 1}``) without a word: now its JSON, said (an absent one reads as null)."""
    reference = _inspect(tmp_path)
    parsed = _inspect(tmp_path, **{key: value})
    held = "null" if value is ... else _held(value)
    assert _new_issues(reference, parsed) == [
        (0, f"samples[0].{key} is {held}, not a string (kept as its JSON)")]
    assert parsed.tables is not None
    want = {"id": "1", "epoch": "1", key: label}
    assert parsed.tables.runs["agent"].to_pylist() == [f"sample {want['id']} epoch {want['epoch']}"]


@pytest.mark.parametrize("value", [7, "7", "a-b"], ids=repr)
def test_inspect_an_id_that_is_a_string_or_an_integer_says_nothing(tmp_path: Path,
                                                                   value: Any) -> None:
    parsed = _inspect(tmp_path, id=value)
    assert parsed.issues == _inspect(tmp_path).issues
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist() == [f"sample {value} epoch 1"]


NULL_SAID = [c for c in RUN_FIELDS if c[3] != "agent.model_name"]
"""Run-level fields the format writes as a string or leaves out, never as null (ATIF's
``agent.name``/``version``, ``schema_version``; Inspect's ``EvalSpec`` ``task``/``model`` and
its ``packages``; opencode's session ``title``/``version``; mini-swe-agent's and SWE-agent's
versions and model; Gemini CLI's ``kind``)."""


@pytest.mark.parametrize(("fmt", "path", "keys", "field"), NULL_SAID,
                         ids=[f"{c[0]}:{'.'.join(c[2])}" for c in NULL_SAID])
def test_a_run_level_field_written_as_null_is_said_once(tmp_path: Path, fmt: str, path: Path,
                                                        keys: tuple[str, ...],
                                                        field: str) -> None:
    """A null where the format writes a string read as unknown without a word: now the run
    reads as if the field were absent, with one issue, as another type is said."""
    parsed = {}
    for name, v in (("absent", ...), ("planted", None)):
        planted = tmp_path / f"{name}{path.suffix}"
        planted.write_text(json.dumps(_set(json.loads(path.read_bytes()), keys, v)),
                           encoding="utf-8")
        parsed[name] = parse_file(planted, tmp_path, fmt=fmt)
    absent, after = parsed["absent"], parsed["planted"]
    assert _new_issues(absent, after) == [(0, f"{field} is null, not a string (read as empty)")]
    assert absent.tables is not None and after.tables is not None
    assert after.tables.runs.drop(["source", "run_id", "sha256"]).equals(
        absent.tables.runs.drop(["source", "run_id", "sha256"]))


def test_where_the_format_writes_null_a_null_says_nothing(tmp_path: Path) -> None:
    """ATIF's ``agent.model_name`` is optional (null: no model named), a chat export's top
    ``model`` too: null there reads as unknown, unsaid, as before."""
    atif = FIXTURES / "atif" / "terminus2-timeout.trajectory.json"
    doc = json.loads(atif.read_bytes())
    doc["agent"]["model_name"] = None
    path = tmp_path / "t.trajectory.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert parse_file(path, tmp_path, fmt="atif").issues == parse_file(atif, atif.parent).issues
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"model": None, "messages": [
        {"role": "user", "content": "hi"}]}), encoding="utf-8")
    assert parse_file(chat, tmp_path, fmt="chat").issues == ()


@pytest.mark.parametrize(("meta", "said", "agent"), [
    ({"agent_path": None, "agent_nickname": "scout"}, "agent_path", "scout"),
    ({"agent_nickname": None}, "agent_nickname", "")], ids=["path", "nickname"])
def test_codex_a_null_agent_path_or_nickname_is_said(tmp_path: Path, meta: dict[str, Any],
                                                     said: str, agent: str) -> None:
    """Codex leaves an unset ``agent_path`` / ``agent_nickname`` out of ``session_meta``
    (``skip_serializing_if``): a null one is said (the nickname still names the agent; it is
    read only without a path)."""
    lines = [
        _codex_line("session_meta", {"id": "s1", "cli_version": "0.149.0", **meta}),
        _codex_line("turn_context", {"model": "gpt-5.5"}),
        _codex_line("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "hi"}]}),
    ]
    parsed = _codex_rollout(tmp_path, lines)
    assert [i.reason for i in parsed.issues if "session_meta" in i.reason] == [
        f"session_meta.{said} is null, not a string (read as empty)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist() == [agent]


CODEX = SAMPLES / "codex" / "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
"""A real Codex rollout (Codex Desktop 0.104): a session_meta, then turn_context lines."""


def test_codex_a_null_cli_version_originator_or_turn_model_is_said(tmp_path: Path) -> None:
    """Codex writes ``session_meta.cli_version`` / ``originator`` and a turn's ``model`` as
    strings: a null one read as unknown without a word; now said (a turn's once a file, with
    how many lines), the run as with the field removed."""
    parsed, turns = [], []
    for name in ("absent", "planted"):
        lines = [json.loads(x) for x in CODEX.read_text(encoding="utf-8").splitlines()]
        for no, rec in enumerate(lines, 1):
            keys = ("cli_version", "originator") if rec["type"] == "session_meta" else \
                ("model",) if rec["type"] == "turn_context" else ()
            for key in keys:
                if name == "absent":
                    del rec["payload"][key]
                else:
                    rec["payload"][key] = None
            if rec["type"] == "turn_context" and name == "planted":
                turns.append(no)
        (tmp_path / name).mkdir()
        path = tmp_path / name / CODEX.name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        parsed.append(parse_file(path, tmp_path / name))
    absent, planted = parsed
    assert len(turns) > 1
    assert sorted(_new_issues(absent, planted)) == [
        (1, "session_meta.cli_version is null, not a string (read as empty)"),
        (1, "session_meta.originator is null, not a string (read as empty)"),
        (turns[0], (f"turn_context.model is null, not a string (read as empty) ({len(turns)} "
                   "lines, the first here)"))]
    assert _tables_equal(absent, planted)


def test_openhands_v1_a_null_model_is_said(tmp_path: Path) -> None:
    """The LLM's ``model`` of a real conversation's ``base_state.json`` written as null (the
    SDK writes a string): said, the run as with it removed."""
    parsed = []
    for name, value in (("absent", ...), ("planted", None)):
        folder = copy_fixture(tmp_path / name)
        state = folder / "base_state.json"
        state.write_text(json.dumps(_set(json.loads(state.read_bytes()), ("agent", "llm", "model"),
                                         value)), encoding="utf-8")
        parsed.append(parse_file(folder, tmp_path / name))
    absent, planted = parsed
    assert [why for _, why in _new_issues(absent, planted)] == [
        "base_state.json: agent.llm.model is null, not a string (read as empty)"]
    assert _tables_equal(absent, planted)


def test_gemini_cli_a_subagent_s_null_session_id_is_said(tmp_path: Path) -> None:
    """Gemini CLI writes a session's ``sessionId``: a subagent's null one named its run '' unsaid
    (a number was already said, kept as its JSON)."""
    doc = json.loads((FIXTURES / "gemini_cli" / "session-2025-09-03T16-40-8c1d2e3f.json")
                     .read_bytes())
    doc.update(kind="subagent", sessionId=None)
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="gemini_cli")
    assert [i.reason for i in parsed.issues if "sessionId" in i.reason] == [
        "sessionId is null, not a string (read as empty)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist()[0] == ""


def test_swe_agent_a_null_model_name_is_said(tmp_path: Path) -> None:
    """SWE-agent's ``replay_config`` (a JSON text) names the model as a string: null said."""
    path = SAMPLES / "swe-agent" / "lm_32b__sympy__sympy-21930.traj"
    parsed = []
    for name, value in (("absent", ...), ("planted", None)):
        doc = json.loads(path.read_bytes())
        config = json.loads(doc["replay_config"])
        doc["replay_config"] = json.dumps(_set(config, ("agent", "model", "name"), value))
        planted = tmp_path / f"{name}.traj"
        planted.write_text(json.dumps(doc), encoding="utf-8")
        parsed.append(parse_file(planted, tmp_path, fmt="swe_agent"))
    absent, planted_file = parsed
    assert [why for _, why in _new_issues(absent, planted_file)] == [
        "replay_config.agent.model.name is null, not a string (read as empty)"]
    assert _tables_equal(absent, planted_file)
