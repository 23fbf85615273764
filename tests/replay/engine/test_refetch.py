"""What fetching a block again returns (replay.engine.refetch): a file whole as known by then."""

from __future__ import annotations

from typing import Any

from replay.engine.prepared import PreparedRun, prepare
from replay.engine.refetch import reads_part, refetch_block
from replay.ingest.parsers.builder import RunBuilder, Source
from replay.ingest.run_tables import tokenize


def _run(steps: list[tuple[str, str, dict[str, Any], str]]) -> PreparedRun:
    """One request per step: (call id, tool, arguments, result text)."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="t", issues=[])
    b.message("user")
    b.text("task")
    for cid, tool, args, result in steps:
        b.message("assistant")
        b.tool_call(cid, tool, args)
        b.request()
        b.message("tool")
        b.tool_result(cid, result)
    b.message("assistant")
    b.text("done")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


def test_a_reread_returns_the_file_whole_as_known_by_then() -> None:
    run = _run([
        ("a1", "Read", {"file_path": "src/a.py"}, "whole a " * 50),
        ("a2", "Read", {"file_path": "src/a.py", "offset": 10, "limit": 5}, "part of a " * 5),
        ("b1", "Read", {"file_path": "src/b.py", "limit": 3}, "b " * 5),
        ("b2", "Read", {"file_path": "src/b.py", "offset": 40, "limit": 30}, "more b " * 30),
        ("b3", "Read", {"file_path": "src/b.py", "offset": 90, "limit": 2}, "b " * 3),
        ("w", "Write", {"file_path": "src/a.py", "content": "new a " * 80}, "written"),
        ("g", "Grep", {"pattern": "x"}, "src/a.py:1: x"),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    call = {run.call_id[k]: k for k in range(run.n_blocks) if run.kind[k] == "tool_call"}
    end = run.n_blocks
    # a part read of a file read whole before: the whole read; after the write: the write
    assert refetch_block(run, result["a2"], result["a2"] + 1) == result["a1"]
    assert refetch_block(run, result["a2"], end) == call["w"]
    assert refetch_block(run, result["a1"], result["a1"] + 1) == result["a1"]
    # only parts read: the largest part known by then, never a later one
    assert refetch_block(run, result["b1"], result["b1"] + 1) == result["b1"]
    assert refetch_block(run, result["b1"], end) == result["b2"]
    assert refetch_block(run, result["b3"], result["b3"] + 1) == result["b2"]
    # not a read of a file: its own result
    assert refetch_block(run, result["g"], end) == result["g"]


def test_a_read_of_part_of_a_file() -> None:
    run = _run([
        ("r1", "Read", {"file_path": "a.py"}, "x"),
        ("r2", "Read", {"file_path": "a.py", "limit": 5}, "x"),
        ("r3", "str_replace_editor", {"command": "view", "path": "a.py", "view_range": [1, 9]}, "x"),
        ("s1", "Bash", {"command": "head -20 a.py"}, "x"),
        ("s2", "Bash", {"command": "cat a.py"}, "x"),
        ("s3", "Bash", {"command": "/usr/bin/tail -n 5 a.py"}, "x"),
    ])
    call = {run.call_id[k]: k for k in range(run.n_blocks) if run.kind[k] == "tool_call"}
    assert {c: reads_part(run, k) for c, k in call.items()} == {
        "r1": False, "r2": True, "r3": True, "s1": True, "s2": False, "s3": True}
