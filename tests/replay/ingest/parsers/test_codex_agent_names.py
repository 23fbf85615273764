"""Codex's ``session_meta.agent_path`` and ``agent_nickname``: two fields of their own (a
spawned agent's place in the agent tree, ``/root/...``, and the name it is shown by; openai/codex
``SessionMeta``, each left out when unset), both written by a V2 agent's rollout (the 0.146
catalog's, ``tests/fixtures/codex_catalog``).  Each is read and checked whatever the other
holds: the nickname was read only without a path, so a nickname of another type beside a path
went unsaid.  The run's ``agent`` is the path, else the nickname."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.replay.ingest.parsers.test_wrong_types_unsaid import _codex_line, _codex_rollout

_ABSENT = object()
"""A field left out of the session_meta."""

CASES = [
    ("/root/scout", "Euclid", "/root/scout", []),
    ("/root/scout", _ABSENT, "/root/scout", []),
    (_ABSENT, "Euclid", "Euclid", []),
    (_ABSENT, _ABSENT, "", []),
    ("/root/scout", 7, "/root/scout", ["agent_nickname is int"]),
    ("/root/scout", None, "/root/scout", ["agent_nickname is null"]),
    ("/root/scout", ["x"], "/root/scout", ["agent_nickname is list"]),
    (7, "Euclid", "Euclid", ["agent_path is int"]),
    (None, "Euclid", "Euclid", ["agent_path is null"]),
    ({"a": 1}, None, "", ["agent_path is dict", "agent_nickname is null"]),
    ("", "Euclid", "Euclid", []),
]
"""(agent_path, agent_nickname, the run's agent, what is said of each: ``session_meta.<it>
... not a string (read as empty)``)."""


@pytest.mark.parametrize(("path", "nickname", "agent", "said"), CASES, ids=[
    "both", "path", "nickname", "neither", "path-nickname-int", "path-nickname-null",
    "path-nickname-list", "path-int", "path-null", "both-wrong", "path-empty"])
def test_codex_agent_path_and_nickname_are_each_read(tmp_path: Path, path: Any, nickname: Any,
                                                      agent: str, said: list[str]) -> None:
    meta: dict[str, Any] = {"id": "s1", "cli_version": "0.146.0"}
    for key, value in (("agent_path", path), ("agent_nickname", nickname)):
        if value is not _ABSENT:
            meta[key] = value
    parsed = _codex_rollout(tmp_path, [
        _codex_line("session_meta", meta),
        _codex_line("turn_context", {"model": "gpt-5.5"}),
        _codex_line("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "hi"}]}),
    ])
    assert [i.reason for i in parsed.issues if "agent_" in i.reason] == [
        f"session_meta.{s}, not a string (read as empty)" for s in said]
    assert parsed.tables is not None
    assert parsed.tables.runs["agent"].to_pylist() == [agent]
