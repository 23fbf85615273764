"""What fetching a block again returns (replay.engine.refetch): a file whole as known by then,
edits applied, as its reads render it."""

from __future__ import annotations

from replay.engine.refetch import (
    AS_LOST_BEFORE,
    PARTS_ONLY,
    UNAPPLIED_EDITS,
    file_contents,
    reads_part,
    refetch,
)
from tests.built_runs import COMPACT, built_run


def test_a_reread_returns_the_file_whole_as_known_by_then() -> None:
    run = built_run([
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
    end = run.n_blocks

    def block(b: int, before: int) -> int:
        return refetch(run, b, before).block

    # a part read of a file read whole before: the whole read (exactly its characters)
    assert refetch(run, result["a2"], result["a2"] + 1) == refetch(run, result["a1"], end - 20)
    assert block(result["a2"], result["a2"] + 1) == result["a1"]
    assert refetch(run, result["a1"], result["a1"] + 1).chars == run.n_chars[result["a1"]]
    # after the write: the written text (no line numbers in these reads), sized by the newest
    # read result of the file
    got = refetch(run, result["a2"], end)
    assert (got.block, got.chars) == (result["a2"], len("new a " * 80))
    # only parts read: the largest part known by then, never a later one
    assert block(result["b1"], result["b1"] + 1) == result["b1"]
    assert block(result["b1"], end) == result["b2"]
    assert block(result["b3"], result["b3"] + 1) == result["b2"]
    # not a read of a file: its own result
    assert refetch(run, result["g"], end) == refetch(run, result["g"], result["g"] + 1)
    assert block(result["g"], end) == result["g"]


NUMBERED = "".join(f"{i:6d}→line {i}\n" for i in range(1, 11))
"""A file of ten lines as Claude Code's Read renders it (a 6-wide line number and an arrow)."""


def test_edits_since_the_whole_read_are_applied() -> None:
    run = built_run([
        ("r", "Read", {"file_path": "a.py"}, NUMBERED),
        ("e1", "Edit", {"file_path": "a.py", "old_string": "line 3", "new_string": "x\ny\nz"}, "ok"),
        ("e2", "MultiEdit", {"file_path": "a.py", "edits": [
            {"old_string": "line 10", "new_string": ""},
            {"old_string": "line 4", "new_string": "line 4 longer"}]}, "ok"),
        ("e3", "Edit", {"file_path": "a.py", "patch": "@@ -1 +1 @@"}, "ok"),
        ("p", "Read", {"file_path": "a.py", "offset": 2, "limit": 1}, "     2→line 2\n"),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    call = {run.call_id[k]: k for k in range(run.n_blocks) if run.kind[k] == "tool_call"}
    r, n = result["r"], run.n_chars[result["r"]]
    assert refetch(run, r, call["e1"]).chars == n  # nothing edited yet: the read as it was
    # e1: 6 characters replaced by 5 and two more lines, each rendered with a 7-character prefix
    assert refetch(run, r, call["e1"] + 1) == type(refetch(run, r, r + 1))(r, n - 1 + 2 * 7)
    # e2: -7 and +7 characters
    assert refetch(run, r, call["e2"] + 1).chars == n - 1 + 2 * 7 - 7 + 7
    # a part read changes nothing known about the whole file
    assert refetch(run, result["p"], run.n_blocks).chars == n - 1 + 14
    got = refetch(run, r, run.n_blocks)
    assert got.scaled(run, 1000) == (1000 * got.chars + n // 2) // n
    # an edit without a replaced/new pair is not applied, and counted from where it is
    assert got == refetch(run, r, call["e3"])
    contents = file_contents(run)
    assert contents.edits_unapplied == 1
    assert contents.unapplied_before(r, call["e3"]) == 0
    assert contents.unapplied_before(result["p"], call["e3"] + 1) == 1
    assert refetch(run, r, r + 1).scaled(run, 1234) == 1234  # unchanged: the count itself


def test_a_write_is_rendered_as_the_files_reads_render_it() -> None:
    text = "a\nb\nc\n"
    run = built_run([
        ("r", "Read", {"file_path": "a.py"}, NUMBERED),
        ("w", "Write", {"file_path": "a.py", "content": text}, "ok"),
        ("n", "Write", {"file_path": "new.py", "content": text}, "ok"),
        ("p", "Read", {"file_path": "new.py", "limit": 1}, "a"),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    got = refetch(run, result["r"], run.n_blocks)
    assert (got.block, got.chars) == (result["r"], len(text) + 3 * 7)
    # written before its only read, which shows no line numbers: the text as written, and the
    # write stays the whole content (a part read after it is not)
    got = refetch(run, result["p"], run.n_blocks)
    assert (got.block, got.chars) == (result["p"], len(text))


def test_a_read_of_part_of_a_file() -> None:
    run = built_run([
        ("r1", "Read", {"file_path": "a.py"}, "x"),
        ("r2", "Read", {"file_path": "a.py", "limit": 5}, "x"),
        ("r3", "str_replace_editor", {"command": "view", "path": "a.py", "view_range": [1, 9]}, "x"),
        ("s1", "Bash", {"command": "head -20 a.py"}, "x"),
        ("s2", "Bash", {"command": "cat a.py"}, "x"),
        ("s3", "Bash", {"command": "/usr/bin/tail -n 5 a.py"}, "x"),
        ("s4", "Bash", {"command": "cd /repo && nl -ba a.py | sed -n '583,600p'"}, "x"),
        ("c1", "shell", {"command": ["bash", "-lc", "sed -n '1,200p' a.py"]}, "x"),
        ("c2", "shell", {"command": ["bash", "-lc", "cat -n a.py"]}, "x"),
        ("c3", "shell", {"command": ["/bin/bash", "-c", "cat a.py | grep def"]}, "x"),
        ("x1", "exec_command", {"cmd": "head -5 a.py"}, "x"),
        # under the keys the ingest reads a command from (shell_line.COMMAND_KEYS), ``code`` too
        ("x2", "run_code", {"code": "tail -3 a.py"}, "x"),
    ])
    call = {run.call_id[k]: k for k in range(run.n_blocks) if run.kind[k] == "tool_call"}
    assert {c: reads_part(run, k) for c, k in call.items()} == {
        "r1": False, "r2": True, "r3": True, "s1": True, "s2": False, "s3": True, "s4": True,
        "c1": True, "c2": False, "c3": True, "x1": True, "x2": True}


def test_an_edit_not_applied_counts_only_until_the_file_is_read_whole_again() -> None:
    run = built_run([
        ("r", "Read", {"file_path": "a.py"}, NUMBERED),
        ("e", "Edit", {"file_path": "a.py", "patch": "@@ -1 +1 @@"}, "ok"),
        ("r2", "Read", {"file_path": "a.py"}, NUMBERED),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    call = {run.call_id[k]: k for k in range(run.n_blocks) if run.kind[k] == "tool_call"}
    contents = file_contents(run)
    assert contents.edits_unapplied == 1
    # between the edit and the new whole read, the re-read's size misses the edit
    assert contents.unapplied_before(result["r"], call["e"] + 1) == 1
    assert contents.estimate(result["r"], call["e"] + 1) == UNAPPLIED_EDITS
    assert contents.estimate(result["r"], call["e"]) == ""  # before the edit: exact
    # the second whole read shows the file as edited: nothing left unapplied
    assert refetch(run, result["r"], run.n_blocks).block == result["r2"]
    assert contents.unapplied_before(result["r"], run.n_blocks) == 0
    assert contents.estimate(result["r"], run.n_blocks) == ""


def test_a_file_only_read_in_parts_is_a_lower_bound_until_read_whole() -> None:
    run = built_run([
        ("p", "Read", {"file_path": "a.py", "offset": 10, "limit": 5}, NUMBERED),
        ("s", "Bash", {"command": "sed -n '1,3p' a.py"}, "x"),
        ("w", "Read", {"file_path": "a.py"}, NUMBERED),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    contents = file_contents(run)
    assert contents.estimate(result["p"], result["s"] + 1) == PARTS_ONLY
    assert contents.estimate(result["p"], result["w"] + 1) == ""


def test_a_file_the_agent_read_in_part_after_losing_it_is_re_read_in_part() -> None:
    """The agent's own habit with the file: the last time it read the file without a copy in
    its recorded context (after a compaction), it read a part; a re-read after the next loss
    returns that part.  A part read while the file is in context changes nothing, and a later
    whole read after a loss gives the whole file back."""
    run = built_run([
        ("a", "Read", {"file_path": "a.py"}, NUMBERED),
        ("b", "Read", {"file_path": "a.py", "offset": 2, "limit": 2}, NUMBERED[:30]),  # in context
        COMPACT,
        ("c", "Read", {"file_path": "a.py", "offset": 4, "limit": 3}, NUMBERED[30:70]),  # lost
        COMPACT,
        ("d", "Read", {"file_path": "a.py"}, NUMBERED),  # lost again: read whole
        COMPACT,
        ("x", "Read", {"file_path": "x.py"}, NUMBERED),
    ])
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    contents = file_contents(run)
    a, c, d = result["a"], result["c"], result["d"]
    whole = refetch(run, a, a + 1)
    assert (whole.block, whole.chars) == (a, run.n_chars[a])
    assert refetch(run, a, c) == whole and contents.estimate(a, c) == ""  # in-context part: no
    got = refetch(run, a, c + 1)
    assert (got.block, got.chars) == (c, run.n_chars[c])
    assert got.scaled(run, run.tokens["o200k_base"][c]) == run.tokens["o200k_base"][c]
    assert contents.estimate(a, c + 1) == AS_LOST_BEFORE
    # read whole after the next loss: the file whole again
    assert refetch(run, a, d + 1) == refetch(run, d, d + 1)
    assert refetch(run, a, d + 1).block == d and contents.estimate(a, d + 1) == ""
    # a file never lost keeps its whole size
    assert refetch(run, result["x"], run.n_blocks).block == result["x"]
