"""How tool calls are classified (replay.ingest.ops): the operation of a tool call (a todo list,
a patch, a command behind a wrapper, a search), the first command of a shell line as the need
rules cut it, and the fast paths that classify a line by its first name as its cut does.

Not here: how the words of a command are read for its file (redirections, quotes, heredocs:
tests/replay/ingest/test_ops_shell_words.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.prepared import prepare
from replay.engine.tiers.base import _todo_calls
from replay.ingest import ops
from replay.ingest._build import BUILD as INGEST_BUILD
from replay.ingest.ops import (
    PATCH_FILE,
    _first_command,
    classify,
    classify_shell,
    shell_reads_part,
)
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from replay.shell_line import WRAPPERS, commands, shell_words
from tests.pure_rerun import ran_pure


def test_a_command_of_blanks_splits_like_a_short_one() -> None:
    """Separators are found without a \\s* around them (a long run of blanks made the split
    quadratic: 40,000 blanks took 37 s); the parts read the same."""
    blanks = " " * 200_000
    assert classify("Bash", {"command": f"ls{blanks}x"}) == classify("Bash", {"command": "ls x"})
    assert [c.text.strip() for c in commands(f"a{blanks}&&{blanks}b ; c\nd || e")] == \
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


_COMMANDS = ["cat a.py", "sed -n 1,5p 'x;y.txt'", "cd 'd d'", "echo 'a && b'", "env", "FOO=1",
             'head -3 "a|b.md"', "nl -ba c.py", "cat > o.txt <<'EOF'\nls x.py; rm y\nEOF",
             "python - <<EOF\ncat z.py\nEOF", "wc -l < in.txt 2>/dev/null", "git add \\\n f.py",
             "timeout 5 grep -n x 'q\nr.py'", "echo hi > 'n;m.txt'"]
_LINES = st.tuples(st.sampled_from(_COMMANDS), st.lists(st.tuples(
    st.sampled_from([" && ", " || ", "; ", " | ", "|", "\n"]), st.sampled_from(_COMMANDS)),
    max_size=4)).map(lambda t: t[0] + "".join(s + c for s, c in t[1]))


@settings(max_examples=300, deadline=None)
@given(_LINES)
def test_the_ingest_reads_a_command_the_engine_cuts(line: str) -> None:
    """The ingest and the need rules cut a line the same way: the command the classifier reads
    is one of the simple commands ``replay.shell_line.commands`` gives the need rules (the first
    of its pipeline, its words those of that command after any wrappers), and it is piped
    exactly when that command is; never a piece of a quoted string or a heredoc's body (the
    words read are the command's after its wrappers, or only its name when that is all the
    classifier needs)."""
    first = _first_command(line)
    cut = list(commands(line))
    if first is None:
        return
    words, _, piped, _ = first
    starts = [k for k, c in enumerate(cut) if k == 0 or not cut[k - 1].piped]
    found = [k for k in starts if cut[k].piped == piped and (words and _after_wrappers(
        shell_words(cut[k].text.strip()), words) or not words and piped)]
    assert found, (line, words, piped, [c.text for c in cut])


def _after_wrappers(cut: list[str], read: list[str]) -> bool:
    """Whether ``read`` are the words of ``cut`` from its command's name on, or its name."""
    at = len(cut) - len(read)
    return cut[at:] == read or read[0] in cut and read == [read[0]]


def _source_of(function: str) -> str:
    """The source of ``replay/ingest/ops.py``'s ``function``, read from the file (compiled,
    ``inspect.getsource`` has no code object to follow)."""
    text = (Path(__file__).resolve().parents[3] / "replay" / "ingest" / "ops.py").read_text()
    (node,) = [n for n in ast.parse(text).body
               if isinstance(n, ast.FunctionDef) and n.name == function]
    return ast.get_source_segment(text, node) or ""


_NAMES = sorted({*ops._READERS, *ops._SEARCHERS, *ops._LISTERS, *ops._WRITERS, *WRAPPERS,
                 *ops._SKIPPED, *re.findall(r'"([\w.-]+)"', _source_of("_classify_words")),
                 "npm", "/usr/bin/cat", "./run.sh", "x"})
"""Command names, not read from ``_TOLD_APART``: every name ``_classify_words`` writes."""


_TAILS = ["", "grep x a.py", "-n 1,5p a.py", "-i s/a/b/ a.py", "a.py > o.txt", "-exec rm {} ;",
          "-c 'print(1)'", "a.py | head", "'x y.txt' < in.md", "FOO=1 cat a.py", "-- b.md && ls",
          "\xa0cat a.py", "\ncat a.py"]


@pytest.mark.parametrize("lead", ["", " ", "\x0b", "\t"])
def test_a_plain_command_name_read_alone_classifies_as_its_words_do(lead: str) -> None:
    """A long command whose plain name ``_classify_words`` does not tell apart is classified
    from its name alone (its arguments are not cut into words): the same as from all its
    words, for every name it tells apart and a few it does not, so the set of names told apart
    (``_TOLD_APART``) is complete."""
    for name in _NAMES:
        for tail in _TAILS:
            line = lead + name + " " * 200 + tail  # long: read by its name when it can be
            fast = (classify_shell(line), shell_reads_part(line))
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(ops, "_PLAIN_HEAD", re.compile(r"(?!)"))
                assert (classify_shell(line), shell_reads_part(line)) == fast, line


_PIECES = [*_NAMES, " ", " ", "\t", "\r", "\n", "a.py", "-n 1,5p", ";", "&&", "||", "|", "&",
           "\\\n", "#", "(", ")", "{", "}", "=", "A=1 ", "$x", "'q'", '"d d"', "\\",
           "<<EOF\nx\nEOF\n", ">", "> o.txt", "<", "`", "\xa0", "\x0b", "[REDACTED_ARGUMENTS]",
           "apply_patch", "*** Begin Patch\n*** Add File: n.py\n"]
"""Pieces of command lines: names told apart and not, blanks the shell splits at and others,
separators, quotes, escapes, continuations, heredocs, redirections, assignments."""


_AFTER = ["", " ", "\t", "\r", "\n", ";", "&&", "||", "|", "&", "=", "'", '"', "\\", "\\\n",
          "<", ">", "#", "(", "$", "`", "\xa0", "\x0b", "x", "/"]
"""What may follow a line's first name directly."""


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", " ", "\n", "\t", "\r", "\n \n", "\xa0", ";", "A=1 ", "x=y\t"]),
       st.sampled_from(_NAMES), st.sampled_from(_AFTER),
       st.lists(st.sampled_from(_PIECES), max_size=6))
def test_a_line_read_by_its_first_name_classifies_as_its_cut_does(
        lead: str, name: str, after: str, pieces: list[str]) -> None:
    """A line whose first word is a plain name ``_classify_words`` does not tell apart is
    ``exec`` without being cut (``_LINE_HEAD``): the same operation and path as the cut into
    commands and words finds, whatever comes before the name, right after it and later."""
    line = lead + name + after + "".join(pieces)
    fast = (classify_shell(line), shell_reads_part(line))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "_LINE_HEAD", re.compile(r"(?!)"))
        assert (classify_shell(line), shell_reads_part(line)) == fast, repr(line)


_WRAPPED = ["timeout 30s ", "timeout -s KILL 30 ", "env -i A=1 ", "sudo -u www ", "sudo -E ",
            "nice -n 5 ", "time -p ", "stdbuf -oL ", "nohup ", "FOO=1 BAR=2 "]
"""Wrappers with their options (and assignments) before a command, as recorded calls write
them."""


@pytest.mark.parametrize("wrapper", _WRAPPED)
def test_a_command_behind_a_wrapper_with_options_is_classified_as_the_command(
        wrapper: str) -> None:
    """``timeout 30s cat f`` reads f as ``cat f`` does (the wrapper's options and duration are
    not the command), as a Claude Code Bash call and a Codex shell call alike."""
    for command, want in (("cat src/app.py", ("read", "src/app.py")),
                          ("sed -i 's/a/b/' src/app.py", ("edit", "src/app.py")),
                          ("ls src", ("list", "src"))):
        assert tuple(classify("Bash", {"command": wrapper + command})) == want, wrapper
        assert tuple(classify("shell", {"command": ["bash", "-lc", wrapper + command]})) == want


@pytest.mark.parametrize("line", ["grep -n x a.py 2>/dev/null", "rg -S 'a|b' src > hits.txt",
                                  "cd d && /usr/bin/egrep -c x < in.txt | wc -l"])
def test_a_search_is_told_without_reading_its_operands(line: str, request: pytest.FixtureRequest,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A searcher is a search whatever its operands (no redirection or file of it changes
    that): they are not read.  (Compiled, ``classify`` calls ``_operands`` straight: run
    where it is pure.)"""
    if ran_pure(request, INGEST_BUILD.compiled):
        return
    def unread(*_: object) -> None:
        raise AssertionError("operands read")

    monkeypatch.setattr(ops, "_operands", unread)
    assert ops.classify("bash", {"command": line}) == ("search", "")
