"""How the need rules cut a shell command into the commands that use a file
(``shell_commands.simple_commands``): continuations, quotes and heredocs as the shell reads
them, so a file named only by a bookkeeping command (``git add``, a commit message) is not a
need, and a file a heredoc script opens is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.shell_commands import simple_commands
from tests.replay.engine.need_runs import built_run, need_rules


def test_continuation_lines_stay_in_their_command() -> None:
    assert [p.split() for p in simple_commands("git add \\\n  a.py \\\n  b.py && pytest t.py")] \
        == [["git", "add", "a.py", "b.py"], ["pytest", "t.py"]]


def test_a_heredoc_body_belongs_to_the_command_holding_its_operator() -> None:
    commit = "git commit -m \"$(cat <<'EOF'\nFix a.py; refactor b.py\n\nEOF\n)\" && git push"
    parts = simple_commands(commit)
    assert len(parts) == 2 and parts[0].split()[0] == "git" and "a.py;" in parts[0]
    script = simple_commands("python - <<EOF\nopen('x.py').read()\nEOF\necho done")
    assert [p.split()[0] for p in script] == ["python", "echo"] and "x.py" in script[0]
    tabbed = simple_commands("cat > f.py <<-END\n\tprint(1)\n\tEND\nrm f.py")
    assert [p.split()[0] for p in tabbed] == ["cat", "rm"]


def test_quoted_separators_do_not_cut() -> None:
    assert [p.strip() for p in simple_commands("echo 'a; b' | grep \"c|d\" ; ls x.py")] == \
        ["echo 'a; b'", 'grep "c|d"', "ls x.py"]
    assert simple_commands('echo "two\nlines" && ls') == ['echo "two\nlines" ', " ls"]
    assert simple_commands("cat <<< 'x.py' && cmd 2>&1") == ["cat <<< 'x.py' ", " cmd 2>&1"]
    assert simple_commands('echo "unbalanced ; x.py') == ['echo "unbalanced ; x.py']


_WORD = st.from_regex(r"[a-z][a-z0-9_./-]{0,8}", fullmatch=True)
_SIMPLE = st.lists(_WORD, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=50, deadline=None)
@given(st.lists(_SIMPLE, min_size=1, max_size=6),
       st.lists(st.sampled_from([" && ", " || ", "; ", " | ", "\n"]), min_size=5, max_size=5))
def test_plain_commands_come_back_as_written(commands: list[str], seps: list[str]) -> None:
    """Without quotes or heredocs, the cut is exactly at the separators."""
    line = commands[0] + "".join(s + c for s, c in zip(seps, commands[1:]))
    assert [p.strip() for p in simple_commands(line)] == commands


def _needed(command: str) -> bool:
    return bool(need_rules(built_run([("Bash", {"command": command})])))


def test_bookkeeping_across_lines_is_not_a_need_and_a_heredoc_script_is() -> None:
    assert _needed("sed -i 's/1/2/' src/app.py")  # the control: a use of the file
    assert not _needed("git add \\\n  src/app.py")
    assert not _needed("git commit -m \"$(cat <<'EOF'\nrefactor\nsrc/app.py\nEOF\n)\"")
    assert _needed("python - <<EOF\nprint(open('src/app.py').read())\nEOF")
