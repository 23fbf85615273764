"""The need rules read a shell call by its simple commands (``replay.shell_line.commands``, tested
in tests/replay/test_shell_line.py): a file named only by a bookkeeping command (``git add``
across a continuation, a commit message in a heredoc) is not a need, and a file a heredoc
script opens is."""

from __future__ import annotations

import pytest

from replay.ingest.ops import classify
from tests.replay.engine.need_runs import built_run, need_rules


def _needed(command: str) -> bool:
    return bool(need_rules(built_run([("Bash", {"command": command})])))


def test_bookkeeping_across_lines_is_not_a_need_and_a_heredoc_script_is() -> None:
    assert _needed("sed -i 's/1/2/' src/app.py")  # the control: a use of the file
    assert not _needed("git add \\\n  src/app.py")
    assert not _needed("git commit -m \"$(cat <<'EOF'\nrefactor\nsrc/app.py\nEOF\n)\"")
    assert _needed("python - <<EOF\nprint(open('src/app.py').read())\nEOF")


@pytest.mark.parametrize("wrapper", ["", "timeout 30s ", "timeout -s KILL 30 ", "env -i A=1 ",
                                     "sudo -u www ", "nice -n 5 ", "time -p ", "stdbuf -oL ",
                                     "nohup ", "FOO=1 "])
def test_a_command_behind_a_wrapper_with_options_is_read_as_the_ingest_reads_it(
        wrapper: str) -> None:
    """The command's name is found past the wrapper and its options (``replay.shell_line.
    command_start``, the ingest's definition too): a runner that succeeded or a bookkeeping
    command behind ``timeout 30s`` is no need (before, ``30s`` was taken for the command and
    the file named after it for a use), a use of the file behind one still is."""
    assert not _needed(wrapper + "python src/app.py")
    assert not _needed(wrapper + "git add src/app.py")
    assert _needed(wrapper + "diff src/app.py src/old.py")
    assert classify("Bash", {"command": wrapper + "python src/app.py"}).op == "exec"


def _codex_needed(argv: list[str]) -> bool:
    return bool(need_rules(built_run([("shell", {"command": argv, "workdir": "/w"})])))


def test_a_codex_argument_vector_is_unwrapped_as_the_ingest_unwraps_it() -> None:
    """Codex records ``["bash", "-lc", SCRIPT]``: the need rules read SCRIPT (``unwrap_argv``,
    as the ingest does), not ``bash -lc ...`` joined (a runner, ``bash``, whose script names
    nothing: no need was ever found in a Codex shell line)."""
    assert _codex_needed(["bash", "-lc", "diff src/app.py src/old.py"])
    assert _codex_needed(["bash", "-lc", "cd src && diff app.py old.py"])
    assert not _codex_needed(["bash", "-lc", "git add src/app.py"])
    assert _codex_needed(["diff", "src/app.py", "src/old.py"])


def test_a_heredoc_operator_in_quotes_does_not_lift_the_next_lines() -> None:
    """``git log -S "<<EOF"`` opens no heredoc: the next line's command is a command of its
    own, not a body of git's (bookkeeping)."""
    assert _needed('git log --oneline -S "<<EOF"\ndiff src/app.py src/old.py')
    assert not _needed("git log --oneline -S x <<EOF\ndiff src/app.py src/old.py\nEOF")


@pytest.mark.parametrize("key", ["command", "cmd", "code"])
def test_a_shell_call_s_command_is_read_under_the_keys_the_ingest_reads(key: str) -> None:
    """The need rules read a shell call's command under every key the ingest classifies it by
    (``replay.shell_line.COMMAND_KEYS``): a command recorded as ``code`` was classified exec
    by the ingest but read as no command by the need rules (a use of the file went unseen)."""
    def needed(command: str) -> bool:
        return bool(need_rules(built_run([("bash", {key: command})])))

    assert needed("diff src/app.py src/old.py")
    assert not needed("git add src/app.py")
    assert classify("bash", {key: "diff src/app.py src/old.py"}).op == "exec"
