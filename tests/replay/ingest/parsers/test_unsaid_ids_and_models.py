"""Ids and models of the wrong type the parsers replaced or dropped without a word (a call id
made up, a response's model read as none, a subagent's id or a fork's parent passed over): each
now kept as its JSON where it names something, and said.  Real logs with one value planted,
each compared with the same log with the field removed, or with the planted value's JSON
written as a string: the tables are equal and the planted value adds the issues expected.
Run-level fields and nulls: ``test_unsaid_fallbacks.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file
from tests.replay.ingest.parsers.openhands_v1_fixtures import copy_fixture
from tests.replay.ingest.parsers.test_parse_claude_code_fork import FORK, PARENT, _rec
from tests.replay.ingest.parsers.test_unsaid_fallbacks import SHORT, _new_issues, _tables_equal
from tests.replay.ingest.parsers.test_wrong_types_run_fields import SAMPLES
from tests.replay.ingest.parsers.test_wrong_types_unsaid import FIXTURES, _held

SUBAGENT = FIXTURES / "claude_code" / "agent-a7be2f0.jsonl"
"""A real Claude Code 2.1.39 subagent transcript (``agentId`` on its records)."""


@pytest.mark.parametrize("value", [7, ["a"], {"a": 1}, None], ids=repr)
def test_claude_code_an_agent_id_of_another_type_is_said(tmp_path: Path, value: Any) -> None:
    """A subagent's ``agentId`` of another type was passed over unsaid (its run then named by
    the file): now said once, the run as without it.  A null too (Claude Code leaves the key out
    of a record of no subagent, never null): the decoder read it as absent, unsaid."""
    lines = [json.loads(x) for x in SUBAGENT.read_text(encoding="utf-8").splitlines()]
    with_id = [no for no, rec in enumerate(lines, 1) if "agentId" in rec]
    parsed = []
    for name in ("absent", "planted"):
        for no in with_id:
            if name == "absent":
                del lines[no - 1]["agentId"]
            else:
                lines[no - 1]["agentId"] = value
        (tmp_path / name).mkdir()
        path = tmp_path / name / SUBAGENT.name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        parsed.append(parse_file(path, tmp_path / name))
    absent, planted = parsed
    first = min(no for no in with_id if lines[no - 1]["type"] in ("user", "assistant"))
    assert _new_issues(absent, planted) == [
        (first, f"agentId is {_held(value)}, not a string (read as empty)")]
    assert _tables_equal(absent, planted)


def test_claude_code_a_fork_s_parent_id_of_another_type_is_said(tmp_path: Path) -> None:
    """A forked session's ``forkedFrom.sessionId`` of another type linked the fork to no parent
    without a word: said now."""
    parent = [_rec("user", "u1", None, PARENT, "plan it"),
              _rec("assistant", "a1", "u1", PARENT, "plan")]
    fork = [dict(r, sessionId=FORK, forkedFrom={"sessionId": 12, "messageUuid": r["uuid"]})
            for r in parent]
    fork += [_rec("user", "u3", "a1", FORK, "try another way"),
             _rec("assistant", "a3", "u3", FORK, "tried")]
    path = tmp_path / f"{FORK}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in fork), encoding="utf-8")
    parsed = parse_file(path, tmp_path)
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (1, "forkedFrom.sessionId is int, not a string (read as empty)")]
    assert parsed.tables is not None
    assert parsed.tables.runs["parent_run_id"].to_pylist() == [""]


OPENHANDS = SAMPLES / "openhands" / "basic.json"
"""A real OpenHands V0 trajectory: an ``edit`` action (event 3) and its observation (event 4)
share one ``tool_call_id``."""


@pytest.mark.parametrize("value", [5, ["a"], {"a": 1}, 1.5], ids=repr)
def test_openhands_a_call_id_of_another_type_is_kept_as_its_json_and_said(
        tmp_path: Path, value: Any) -> None:
    """An action whose ``tool_call_id`` was no string lost its response without a word (a
    generated id, a message and a request of its own), an observation's was Python's ``str``:
    both now read it as its JSON (the run as with that JSON written as a string), said once
    each."""
    parsed = []
    for name, v in (("as_text", json.dumps(value)), ("planted", value)):
        events = json.loads(OPENHANDS.read_bytes())
        for ev in events[1:3]:
            ev["tool_call_metadata"]["tool_call_id"] = v
        (tmp_path / name).mkdir()
        path = tmp_path / name / OPENHANDS.name
        path.write_text(json.dumps(events), encoding="utf-8")
        parsed.append(parse_file(path, tmp_path / name, fmt="openhands"))
    as_text, planted = parsed
    why = f"tool_call_metadata.tool_call_id is {_held(value)}, not a string (kept as its JSON)"
    assert [i.reason.split(": ", 1)[1] for i in planted.issues
            if i not in as_text.issues] == [why, why]
    assert _tables_equal(as_text, planted)


@pytest.mark.parametrize("value", [5, ["m"], {"a": 1}], ids=repr)
@pytest.mark.parametrize("key", ["model", "id"])
def test_claude_code_a_response_s_model_or_id_of_another_type_is_said(
        tmp_path: Path, key: str, value: Any) -> None:
    """A response's ``message.model`` (``message.id``) of another type was read as none unsaid
    (as ATIF's and Inspect's request models are said; an id only counted among the records
    'with no message.id'): now one issue at its record."""
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    parsed = []
    for name in ("absent", "planted"):
        if name == "absent":
            del lines[4]["message"][key]
        else:
            lines[4]["message"][key] = value
        (tmp_path / name).mkdir()
        path = tmp_path / name / SHORT.name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        parsed.append(parse_file(path, tmp_path / name))
    absent, planted = parsed
    assert _new_issues(absent, planted) == [
        (5, f"message.{key} is {_held(value)}, not a string (read as empty)")]
    assert _tables_equal(absent, planted)


def test_claude_code_a_response_s_null_model_is_said(tmp_path: Path) -> None:
    """A response's ``message.model`` that is null was read as none unsaid, as if absent (the
    API writes a string; ``<synthetic>`` for the harness's own records): now said as another
    type is, the run as with the model removed."""
    test_claude_code_a_response_s_model_or_id_of_another_type_is_said(tmp_path, "model", None)


def _planted_pair(tmp_path: Path, path: Path, plant: Any, fmt: str,
                  name: str | None = None) -> tuple[ParsedFile, ParsedFile]:
    """The JSON document ``path`` changed by ``plant(doc, value)`` with ``...`` (remove the
    field) and with ``5``, each parsed as ``fmt`` (saved as ``name``, default ``path``'s)."""
    parsed = []
    for folder, value in (("absent", ...), ("planted", 5)):
        doc = json.loads(path.read_bytes())
        plant(doc, value)
        (tmp_path / folder).mkdir(parents=True)
        copy = tmp_path / folder / (name or path.name)
        copy.write_text(json.dumps(doc), encoding="utf-8")
        parsed.append(parse_file(copy, tmp_path / folder, fmt=fmt))
    return parsed[0], parsed[1]


def _drop_or_set(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is ...:
        obj.pop(key, None)
    else:
        obj[key] = value


REQUEST_MODELS = [
    ("mini_swe_agent", FIXTURES / "mini_swe_agent" / "astropy__astropy-12907.traj.json",
     lambda d, v: _drop_or_set(d["messages"][2]["extra"]["response"], "model", v),
     "response.model"),
    ("opencode", FIXTURES / "opencode" / "agentlogs-all-tools.export.json",
     lambda d, v: _drop_or_set(d["messages"][1]["info"], "modelID", v), "modelID"),
    ("openhands", OPENHANDS,
     lambda d, v: _drop_or_set(d[1]["tool_call_metadata"]["model_response"], "model", v),
     "model_response.model"),
]
"""(format, a real log, how to set its first response's model, the field's name)."""


@pytest.mark.parametrize(("fmt", "path", "plant", "field"), REQUEST_MODELS,
                         ids=[c[0] for c in REQUEST_MODELS])
def test_a_request_s_model_of_another_type_is_said(tmp_path: Path, fmt: str, path: Path,
                                                   plant: Any, field: str) -> None:
    """A response's model of another type was read as none unsaid by mini-swe-agent, opencode
    and OpenHands V0 (ATIF, Inspect, Gemini CLI, chat and Claude Code say it): one issue now,
    the request as with the model removed."""
    absent, planted = _planted_pair(tmp_path, path, plant, fmt)
    assert [why.split(": ", 1)[1] for _, why in _new_issues(absent, planted)] == [
        f"{field} is int, not a string (read as empty)"]
    assert _tables_equal(absent, planted)


def test_openhands_v1_a_usage_s_model_of_another_type_is_said(tmp_path: Path) -> None:
    parsed = []
    for name, value in (("absent", ...), ("planted", ["m"])):
        folder = copy_fixture(tmp_path / name)
        state = folder / "base_state.json"
        doc = json.loads(state.read_bytes())
        for usage in doc["stats"]["usage_to_metrics"]["agent"]["token_usages"][:2]:
            _drop_or_set(usage, "model", value)
        state.write_text(json.dumps(doc), encoding="utf-8")
        parsed.append(parse_file(folder, tmp_path / name))
    absent, planted = parsed
    assert [why for _, why in _new_issues(absent, planted)] == [
        ("base_state.json: 2 token usage record(s) name a model that is no string, read as none "
        "(first: model is list, not a string (read as empty))")]
    assert _tables_equal(absent, planted)


@pytest.mark.parametrize("value", [5, ["a"], {"a": 1}], ids=repr)
def test_mini_swe_agent_a_call_id_of_another_type_is_kept_as_its_json_and_said(
        tmp_path: Path, value: Any) -> None:
    """A tool call's ``id`` and its result's ``tool_call_id`` of another type were replaced by a
    made-up ``call-2-0`` without a word: now their JSON (the run as with that JSON written as
    a string), said once each, at the message's line."""
    path = FIXTURES / "mini_swe_agent" / "astropy__astropy-12907.traj.json"
    parsed = []
    for name, v in (("as_text", json.dumps(value)), ("planted", value)):
        doc = json.loads(path.read_bytes())
        doc["messages"][2]["tool_calls"][0]["id"] = doc["messages"][3]["tool_call_id"] = v
        (tmp_path / name).mkdir()
        copy = tmp_path / name / path.name
        copy.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        parsed.append(parse_file(copy, tmp_path / name, fmt="mini_swe_agent"))
    as_text, planted = parsed
    held = _held(value)
    said = _new_issues(as_text, planted)
    assert [why for _, why in said] == [
        f"message 2: tool_calls[0].id is {held}, not a string (kept as its JSON)",
        f"message 3: tool_call_id is {held}, not a string (kept as its JSON)"]
    assert all(line > 0 for line, _ in said)
    assert _tables_equal(as_text, planted)


def test_openhands_a_response_model_of_another_type_is_said_at_its_event(tmp_path: Path) -> None:
    events = json.loads(OPENHANDS.read_bytes())
    events[1]["tool_call_metadata"]["model_response"]["model"] = 5
    path = tmp_path / OPENHANDS.name
    path.write_text(json.dumps(events, indent=1), encoding="utf-8")
    said = [(i.line, i.reason) for i in parse_file(path, tmp_path, fmt="openhands").issues]
    assert len(said) == 1 and said[0][0] > 0


@pytest.mark.parametrize("value", [5, ["a"]], ids=repr)
def test_swe_agent_a_history_call_id_of_another_type_is_kept_as_its_json_and_said(
        tmp_path: Path, value: Any) -> None:
    """The history's tool call id of another type became a made-up ``call-<step>`` without a
    word: now its JSON (the run as with that JSON written as a string), said once."""
    path = SAMPLES / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj"
    parsed = []
    for name, v in (("as_text", json.dumps(value)), ("planted", value)):
        doc = json.loads(path.read_bytes())
        doc["history"][2]["tool_calls"][0]["id"] = v
        (tmp_path / name).mkdir()
        copy = tmp_path / name / path.name
        copy.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        parsed.append(parse_file(copy, tmp_path / name, fmt="swe_agent"))
    as_text, planted = parsed
    said = _new_issues(as_text, planted)
    assert [why.split(": ", 1)[1] for _, why in said] == [
        f"history: tool_calls id is {_held(value)}, not a string (kept as its JSON)"]
    assert _tables_equal(as_text, planted)
