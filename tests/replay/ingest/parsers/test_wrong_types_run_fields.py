"""Run-level fields of the wrong type (an agent's name or version, a task, a run's model, a
title, a subagent's id) that parsers read as empty without a word: each is now one issue naming
the field and what it held, the run read as if the field were absent.  Real documents with one
value planted; the per-message cases are in ``test_wrong_types_unsaid.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from tests.replay.ingest.parsers.test_wrong_types_unsaid import (
    FIXTURES,
    _claude,
    _codex_line,
    _codex_rollout,
    _held,
)

SAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample"
RUN_FIELDS: list[tuple[str, Path, tuple[str, ...], str]] = [
    # (format, a real document, where its run-level field is, how the issue names it)
    *[("atif", FIXTURES / "atif" / "terminus2-timeout.trajectory.json", keys, ".".join(keys))
      for keys in (("agent", "name"), ("agent", "version"), ("agent", "model_name"),
                   ("schema_version",))],
    *[("inspect_ai", FIXTURES / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json", keys,
       ".".join(keys))
      for keys in (("eval", "task"), ("eval", "model"), ("eval", "packages", "inspect_ai"))],
    *[("opencode", FIXTURES / "opencode" / "agentlogs-all-tools.export.json", keys, ".".join(keys))
      for keys in (("info", "title"), ("info", "version"))],
    *[("mini_swe_agent", FIXTURES / "mini_swe_agent" / "astropy__astropy-12907.traj.json", keys,
       ".".join(keys))
      for keys in (("info", "mini_version"), ("info", "config", "model", "model_name"))],
    ("swe_agent", SAMPLES / "swe-agent" / "lm_32b__sympy__sympy-21930.traj",
     ("info", "swe_agent_version"), "info.swe_agent_version"),
    ("gemini_cli", FIXTURES / "gemini_cli" / "session-2025-09-03T16-40-8c1d2e3f.json", ("kind",),
     "kind"),
]


def _set(doc: dict[str, Any], keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    """``doc`` with the field at ``keys`` set to ``value`` (removed when it is ``...``)."""
    *outer, last = keys
    at = doc
    for k in outer:
        at = at[k]
    if value is ...:
        at.pop(last, None)
    else:
        at[last] = value
    return doc


@pytest.mark.parametrize("value", [5, ["x"], {"a": 1}, True], ids=repr)
@pytest.mark.parametrize(("fmt", "path", "keys", "field"), RUN_FIELDS,
                         ids=[f"{c[0]}:{'.'.join(c[2])}" for c in RUN_FIELDS])
def test_a_run_level_field_of_another_type_reads_as_absent_and_is_said_once(
        tmp_path: Path, fmt: str, path: Path, keys: tuple[str, ...], field: str,
        value: Any) -> None:
    """An agent's name, a version, a task, a run's model or title written as a number (a list,
    an object) was read as '' without a word, or worse (``mini-swe-agent 5``): now the run
    reads as if the field were absent, with one issue naming it and what it held."""
    parsed = {}
    for name, v in (("absent", ...), ("planted", value)):
        planted = tmp_path / f"{name}{path.suffix}"
        planted.write_text(json.dumps(_set(json.loads(path.read_bytes()), keys, v)),
                           encoding="utf-8")
        parsed[name] = parse_file(planted, tmp_path, fmt=fmt)
    absent, after = parsed["absent"], parsed["planted"]
    assert [i.reason for i in after.issues if i not in absent.issues] == [
        f"{field} is {_held(value)}, not a string (read as empty)"]
    assert absent.tables is not None and after.tables is not None
    assert after.tables.runs.drop(["source", "run_id", "sha256"]).equals(
        absent.tables.runs.drop(["source", "run_id", "sha256"]))


def test_claude_code_a_version_or_title_of_another_type_is_said_once(tmp_path: Path) -> None:
    """Claude Code repeats ``version`` on its records: one of another type was passed over
    unsaid (a number on every line: the run's harness 'claude-code', no word)."""
    path = _claude(tmp_path, "out")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    for rec in lines:
        rec["version"] = 2
    lines.append({"type": "custom-title", "customTitle": ["t"], "sessionId": "s1"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    parsed = parse_file(path, tmp_path)
    assert [(i.line, i.reason) for i in parsed.issues] == [
        (1, "version is int, not a string (read as empty)"),
        (5, "customTitle is list, not a string (read as empty)")]
    assert parsed.tables is not None
    assert parsed.tables.runs["harness"].to_pylist() == ["claude-code"]
    assert parsed.tables.runs["title"].to_pylist() == ["list the files"]


def test_codex_an_agent_path_of_another_type_is_said_the_nickname_kept(tmp_path: Path) -> None:
    lines = [
        _codex_line("session_meta", {"id": "s1", "cli_version": "0.149.0", "agent_path": 7,
                                     "agent_nickname": "scout"}),
        _codex_line("turn_context", {"model": "gpt-5.5"}),
        _codex_line("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "hi"}]}),
    ]
    parsed = _codex_rollout(tmp_path, lines)
    assert [i.reason for i in parsed.issues if "agent_path" in i.reason] == [
        "session_meta.agent_path is int, not a string (read as empty)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist() == ["scout"]


def test_chat_a_top_level_model_of_another_type_is_said(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"model": 4, "messages": [
        {"role": "user", "content": "hi"}]}), encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="chat")
    assert [i.reason for i in parsed.issues] == ["model is int, not a string (read as empty)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["model"].to_pylist() == [""]


def test_a_subagent_s_id_of_another_type_is_said_and_kept_as_its_json(tmp_path: Path) -> None:
    """A subagent's id names its run (``agent``): one written as a number was read as '',
    unsaid; now its JSON, said with the subagent's place (ATIF; Gemini CLI's ``sessionId``)."""
    steps = [{"step_id": 1, "source": "user", "message": "look"},
             {"step_id": 2, "source": "agent", "message": "seen"}]
    atif_doc = {"schema_version": "ATIF-v1.7", "agent": {"name": "a"}, "steps": steps,
                "subagent_trajectories": [{"trajectory_id": 7, "agent": {"name": 3},
                                           "steps": steps}]}
    path = tmp_path / "t.trajectory.json"
    path.write_text(json.dumps(atif_doc), encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="atif")
    assert [i.reason for i in parsed.issues] == [
        "subagent_trajectories[0].agent.name is int, not a string (read as empty)",
        "subagent_trajectories[0].trajectory_id is int, not a string (kept as its JSON)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist() == ["", "7"]
    gemini = json.loads((FIXTURES / "gemini_cli" / "session-2025-09-03T16-40-8c1d2e3f.json")
                        .read_bytes())
    gemini.update(kind="subagent", sessionId=["s"])
    path = tmp_path / "session.json"
    path.write_text(json.dumps(gemini), encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="gemini_cli")
    assert [i.reason for i in parsed.issues if "sessionId" in i.reason] == [
        "sessionId is list, not a string (kept as its JSON)"]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist()[0] == '["s"]'
