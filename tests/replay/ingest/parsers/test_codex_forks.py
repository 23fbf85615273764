"""Codex forks and spawned subagents (``tests/fixtures/codex``): a fork links its parent's run
and skips the parent's replayed session_meta, a fork without its parent beside it says so, a
subagent spawned from a rollout of another day folder links its parent and names its agent.

Not here: the fixtures' counts against a plain walk, coverage, compactions
(``test_codex_fixtures.py``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import codex
from replay.ingest.parsers.source import Source
from tests.replay.ingest.parsers.codex_fixture_files import FILES, FIXTURES, parse_fixture


def _run_id(sha256: str, source: str) -> str:
    """The first run's id of the file with these bytes stored as ``source`` (content and
    path, issue 23 item 6), computed here apart from the parser."""
    return f"{sha256[:16]}-{hashlib.sha1(source.encode()).hexdigest()[:8]}-0"


def test_fork_links_its_parent_and_skips_the_replayed_meta() -> None:
    day = "sessions/2026/09/02/"
    parent, fork = sorted(f for f in FILES if f.startswith(day))
    sha = hashlib.sha256((FIXTURES / parent).read_bytes()).hexdigest()
    prun, *_ = parse_fixture(parent)
    frun, fmsgs, _, src = parse_fixture(fork)
    assert prun["parent_run_id"] == ""
    assert frun["parent_run_id"] == _run_id(sha, parent) == prun["run_id"]
    assert src.coverage.by_type()["session_meta"] == {"modelled": 1, "skipped": 1}
    assert sum(m["role"] == "system" for m in fmsgs) == 1  # one system prompt, not two


def test_fork_without_its_parent_says_so(tmp_path: Path) -> None:
    fork = next(f for f in FILES if f.endswith("0b.jsonl"))
    path = tmp_path / "rollout-x.jsonl"
    path.write_bytes((FIXTURES / fork).read_bytes())
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data, sha256="0" * 64)
    run = codex.parse(src, [])[0].run
    assert run["parent_run_id"] == ""
    assert src.coverage.by_type()["session_meta/parent (rollout not found beside this file)"] == {
        "unknown": 1}


def test_spawned_subagent_links_its_parent_and_names_its_agent(tmp_path: Path) -> None:
    day = "sessions/2026/09/02/"
    parent = next(f for f in FILES if f.startswith(day) and f.endswith("0a.jsonl"))
    folder = tmp_path / day
    folder.mkdir(parents=True)
    (folder / Path(parent).name).write_bytes((FIXTURES / parent).read_bytes())
    pid = "01a03000-0000-7000-8000-00000000000a"
    meta = {"session_id": "01a03000-0000-7000-8000-0000000000cc", "cli_version": "0.148.1",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": pid, "depth": 1,
                                                     "agent_path": "/root/worker"}}},
            "agent_path": "/root/worker", "base_instructions": {"text": "You are a worker."}}
    lines = [{"timestamp": "t", "type": "session_meta", "payload": meta},
             {"timestamp": "t", "type": "response_item", "payload": {
                 "type": "message", "role": "user", "content": [{"type": "input_text",
                                                                 "text": "count files"}]}},
             {"timestamp": "t", "type": "response_item", "payload": {
                 "type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                      "text": "3"}]}}]
    other = tmp_path / "sessions/2026/09/03"  # a later day folder of the same sessions tree
    other.mkdir(parents=True)
    child = other / "rollout-2026-09-03T10-00-00-01a03000-0000-7000-8000-0000000000cc.jsonl"
    child.write_text("".join(json.dumps(x) + "\n" for x in lines))
    parsed = parse_file(child, tmp_path)
    assert parsed.tables is not None and parsed.issues == ()
    run = parsed.tables.runs.to_pylist()[0]
    sha = hashlib.sha256((FIXTURES / parent).read_bytes()).hexdigest()
    assert run["parent_run_id"] == _run_id(sha, parent)  # stored relative to tmp_path
    assert run["agent"] == "/root/worker"


def _child_of(parent_id: str) -> str:
    """A subagent rollout spawned by session ``parent_id`` (its lines, as Codex writes them)."""
    meta = {"session_id": "01a03000-0000-7000-8000-0000000000dd", "cli_version": "0.148.1",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": parent_id,
                                                     "depth": 1, "agent_path": "/root/w"}}}}
    lines = [{"timestamp": "t", "type": "session_meta", "payload": meta},
             {"timestamp": "t", "type": "response_item", "payload": {
                 "type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "count files"}]}}]
    return "".join(json.dumps(x) + "\n" for x in lines)


def test_parent_looked_for_in_a_sessions_tree_only(tmp_path: Path) -> None:
    """Three folders up is searched only from a ``YYYY/MM/DD`` day folder: a file elsewhere
    (``logs/a/b/``) does not have every folder three levels under ``logs/``'s parent read."""
    day = "sessions/2026/09/02/"
    parent = next(f for f in FILES if f.startswith(day) and f.endswith("0a.jsonl"))
    pid = "01a03000-0000-7000-8000-00000000000a"
    elsewhere = tmp_path / "home/other/x"  # the parent lies three levels under tmp_path
    elsewhere.mkdir(parents=True)
    (elsewhere / Path(parent).name).write_bytes((FIXTURES / parent).read_bytes())
    logs = tmp_path / "logs/a/b"
    logs.mkdir(parents=True)
    child = logs / "rollout-2026-09-03T10-00-00-01a03000-0000-7000-8000-0000000000dd.jsonl"
    child.write_text(_child_of(pid))
    parsed = parse_file(child, tmp_path / "logs")
    assert parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["parent_run_id"] == ""
    # the same two files in a sessions tree's day folders: linked
    tree = tmp_path / "t/sessions"
    (tree / "2026/09/02").mkdir(parents=True)
    (tree / "2026/09/02" / Path(parent).name).write_bytes((FIXTURES / parent).read_bytes())
    (tree / "2026/09/03").mkdir(parents=True)
    moved = tree / "2026/09/03" / child.name
    moved.write_text(_child_of(pid))
    parsed = parse_file(moved, tmp_path / "t")
    assert parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["parent_run_id"] != ""


def test_parent_folder_gone_while_searched_is_not_found(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder removed (or unreadable) while the parent is looked for: not found, said as
    not found, never an error out of the parse."""
    day = tmp_path / "sessions/2026/09/03"
    day.mkdir(parents=True)
    child = day / "rollout-2026-09-03T10-00-00-01a03000-0000-7000-8000-0000000000dd.jsonl"
    child.write_text(_child_of("01a03000-0000-7000-8000-00000000000a"))

    def gone(self: Path, pattern: str) -> Any:
        raise FileNotFoundError(2, "No such file or directory", str(self))

    monkeypatch.setattr(Path, "glob", gone)
    parsed = parse_file(child, tmp_path)
    assert parsed.tables is not None and parsed.issues == ()
    assert parsed.tables.runs.to_pylist()[0]["parent_run_id"] == ""
