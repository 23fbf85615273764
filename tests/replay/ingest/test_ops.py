"""How tool calls are classified (replay.ingest.ops): the parts of a shell line, the todo list."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.prepared import prepare
from replay.engine.tiers.base import _todo_calls
from replay.ingest.ops import _SPLIT, PATCH_FILE, _parts, classify
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize


def test_a_command_of_blanks_splits_like_a_short_one() -> None:
    """Separators are found without a \\s* around them (a long run of blanks made the split
    quadratic: 40,000 blanks took 37 s); the parts read the same."""
    blanks = " " * 200_000
    assert classify("Bash", {"command": f"ls{blanks}x"}) == classify("Bash", {"command": "ls x"})
    assert [p.strip() for p in _SPLIT.split(f"a{blanks}&&{blanks}b ; c\nd || e")] == \
        ["a", "b", "c", "d", "e"]
    assert classify("Bash", {"command": "  cd src &&   cat  a.py ; \n rm b.txt  "}) == \
        classify("Bash", {"command": "cd src && cat a.py; rm b.txt"})


def test_a_todo_list_call_is_the_todo_operation_in_every_harness() -> None:
    """Claude Code's TodoWrite, Codex's update_plan, Gemini CLI's write_todos, OpenCode's
    todowrite: one operation the parsers emit (the tiers knew these names before, #14 item 4)."""
    calls = [("TodoWrite", {"todos": [{"content": "fix", "status": "pending"}]}),
             ("update_plan", {"plan": [{"step": "fix", "status": "in_progress"}]}),
             ("write_todos", {"todos": [{"description": "fix", "status": "pending"}]}),
             ("todowrite", {"todos": []}), ("todo_write", {"todos": []}),
             ("update_plan", '{"plan": []}')]
    for tool, args in calls:
        assert classify(tool, args) == ("todo", ""), tool
    assert classify("TodoRead", {}).op == "other"  # reading the list changes nothing


def test_the_summary_re_inserts_the_calls_the_parsers_marked_todo() -> None:
    """The summarise tier's todo item is found by the operation, whatever the tool's name."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="test", issues=[])
    b.message("user")
    b.text("task")
    for i, tool in enumerate(["Read", "TodoWrite", "Bash", "update_plan", "write_todos"]):
        b.message("assistant")
        b.tool_call(f"c{i}", tool, {"todos": [], "command": "ls", "file_path": "a.py"})
        b.request()
        b.message("tool")
        b.tool_result(f"c{i}", "ok")
    tables = tokenize([b.build()], ("o200k_base",))
    run = prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())
    assert [run.tool[k] for k in _todo_calls(run)] == ["TodoWrite", "update_plan", "write_todos"]
    assert {run.op[k] for k in range(run.n_blocks) if run.tool[k] == "TodoWrite"} == {"todo"}


_SHELLISH = st.lists(st.sampled_from(["a", " ", "&", "|", ";", "\n", ">", "'", "cd", "=", "*"]),
                     max_size=40).map("".join)


@given(_SHELLISH)
def test_parts_of_a_command_line_are_its_split(command: str) -> None:
    """A command line is cut one part at a time (``_parts``: the first meaningful command is
    most often first), into exactly the parts ``_SPLIT.split`` makes."""
    assert list(_parts(command)) == _SPLIT.split(command)


@given(st.lists(st.sampled_from(["*** Begin Patch", "*** Add File: a.py", "*** Update File: b/c.ts",
                                 "*** Delete File: d", "+x", "-*** Add File: no.py", ""]),
                max_size=8))
def test_a_patch_is_classified_by_its_first_file_line(lines: list[str]) -> None:
    """An apply_patch body is classified by its first file line (found by a search that stops
    there, not a scan of every line of the patch): write for an added file, edit otherwise."""
    patch = "\n".join(lines)
    files = PATCH_FILE.findall(patch)
    want = ("edit", "") if not files else \
        ("write" if files[0][0] == "Add" else "edit", files[0][1].strip())
    assert tuple(classify("apply_patch", patch)) == want
