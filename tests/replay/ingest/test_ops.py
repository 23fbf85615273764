"""How tool calls are classified (replay.ingest.ops): the parts of a shell line, the todo list."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.engine.prepared import prepare
from replay.engine.tiers.base import _todo_calls
from replay.ingest.ops import (
    _SPLIT,
    PATCH_FILE,
    _parts,
    classify,
    classify_shell,
    shell_reads_part,
)
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


def test_a_redirection_is_not_the_file_a_command_works_on() -> None:
    """``wc -l < f`` reads f (it was recorded as a read of the path "<"); a redirection's
    operator or target is never taken for the file read or edited, written apart from the
    operator or against it (``2>/dev/null``, ``> out``, ``<<EOF``, ``a.py>out``)."""
    shell = [
        ("wc -l < src/a.py", ("read", "src/a.py")),
        ("wc -c<src/a.py", ("read", "src/a.py")),
        ("sed -n 1,5p < notes.txt", ("read", "notes.txt")),
        ("cat 0< a.py", ("read", "a.py")),
        ("cat 3< a.py", ("read", "")),  # another descriptor: not what cat reads
        ("cat 2>/dev/null a.py", ("read", "a.py")),
        ("cat 2> err.txt a.py", ("read", "a.py")),
        ("head -n 3 a.py > /tmp/o.txt", ("read", "a.py")),
        ("tail -f log.txt 2>&1", ("read", "log.txt")),
        ("sed -i 's/a/b/' src/x.py 2>/dev/null", ("edit", "src/x.py")),
        ("sed -i 's/a/b/' src/x.py &> /dev/null", ("edit", "src/x.py")),
        ("cat << 'EOF'\nhello\nEOF", ("read", "")),
        ("cat <<EOF\nhello\nEOF", ("read", "")),
        ("cat > f.py <<EOF\nx\nEOF", ("write", "f.py")),
        ("cat a.py>o.txt", ("write", "o.txt")),
    ]
    for command, want in shell:
        assert tuple(classify("Bash", {"command": command})) == want, command


_REDIRECTIONS = ["2>/dev/null", "2>&1", "> out.log", ">>out.log", "&>/dev/null", "2> err.txt",
                 "< in.txt", "<<<word", "1>&2"]


@given(st.sampled_from(["head -n 5 {}", "tail -20 {}", "nl -ba {}", "wc -l {}", "less {}",
                        "sed -n 2,9p {}", "sed -i s/x/y/ {}", "awk NR==1 {}"]),
       st.sampled_from(["src/app.py", "README.md", "/abs/x.ts"]),
       st.lists(st.sampled_from(_REDIRECTIONS), max_size=3), st.integers(0, 3))
def test_redirections_leave_the_file_operand(template: str, path: str, redirs: list[str],
                                              at: int) -> None:
    """A command with its file written as an operand classifies the same with redirections
    added before or after that operand."""
    words = template.format(path).split()
    at = min(max(at, 1), len(words))
    redirected = " ".join(words[:at] + redirs + words[at:])
    assert classify("Bash", {"command": redirected}) == classify("Bash", {"command": " ".join(words)})


def test_a_command_cut_inside_a_quote_keeps_its_words() -> None:
    """Lines are cut at every newline, so a quoted script that spans lines leaves its command's
    part with an unclosed quote: the words up to the cut are read, unquoted (the path was the
    quoted word, quotes and all)."""
    script = 'bun -e "\nconst x = 1;\nconsole.log(x);\n"'
    shell = [
        (f'cat "/logs/a b.jsonl" | head -1 | {script}', ("read", "/logs/a b.jsonl")),
        ("head -5 'src/app.py' | python -c '\nimport sys\nprint(1)\n'", ("read", "src/app.py")),
        ('wc -l < "notes.txt" \\', ("read", "notes.txt")),
    ]
    for command, want in shell:
        assert tuple(classify("Bash", {"command": command})) == want, command


@given(st.sampled_from(["nl -ba {}", "cat {}", "head -n 5 {}", "sed -n 2,9p {}", "wc -l {}",
                        "grep -n x {}", "ls {}"]),
       st.sampled_from(["src/app.py", "README.md", "'a b.txt'"]),
       st.sampled_from(["head -3", "sed -n 1,3p", "wc -l", "grep 'a|b'"]))
def test_a_pipe_written_without_blanks_is_a_pipe(template: str, path: str, then: str) -> None:
    """``nl -ba a.py|sed -n 1,3p`` reads a.py and is piped, as with blanks around the pipe (the
    path was ``a.py|sed`` and the read taken for a whole one); a quoted ``|`` stays in its word."""
    first = template.format(path)
    spaced, tight = f"{first} | {then}", f"{first}|{then}"
    assert classify("Bash", {"command": tight}) == classify("Bash", {"command": spaced})
    assert shell_reads_part(tight) == shell_reads_part(spaced)


def test_a_quoted_pipe_stays_in_its_word() -> None:
    assert tuple(classify("Bash", {"command": 'cat "a|b.txt"'})) == ("read", "a|b.txt")
    assert tuple(classify("Bash", {"command": "cat 'x|y.md'|head"})) == ("read", "x|y.md")


@pytest.mark.parametrize(("command", "expected"), [
    ("cat 'my file.py'", ("read", "my file.py")),
    ('sed -n "1,20p" "src/a b.py"', ("read", "src/a b.py")),
    ("grep -rn \"def x\" .", ("search", "")),
    ("echo 'unclosed > out.txt", ("write", "out.txt")),  # shlex fails: split on blanks
])
def test_commands_with_quotes_are_classified_on_their_words(command: str,
                                                            expected: tuple[str, str]) -> None:
    assert tuple(classify_shell(command)) == expected
