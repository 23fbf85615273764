"""The need rules read a shell call by its simple commands (``replay.shell_line.commands``, tested
in tests/replay/test_shell_line.py): a file named only by a bookkeeping command (``git add``
across a continuation, a commit message in a heredoc) is not a need, and a file a heredoc
script opens is."""

from __future__ import annotations

from tests.replay.engine.need_runs import built_run, need_rules


def _needed(command: str) -> bool:
    return bool(need_rules(built_run([("Bash", {"command": command})])))


def test_bookkeeping_across_lines_is_not_a_need_and_a_heredoc_script_is() -> None:
    assert _needed("sed -i 's/1/2/' src/app.py")  # the control: a use of the file
    assert not _needed("git add \\\n  src/app.py")
    assert not _needed("git commit -m \"$(cat <<'EOF'\nrefactor\nsrc/app.py\nEOF\n)\"")
    assert _needed("python - <<EOF\nprint(open('src/app.py').read())\nEOF")
