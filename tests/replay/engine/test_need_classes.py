"""The need rules' exceptions (replay.engine.needs): naming a file is not using what it says
when a program runs it, a subagent is handed it, a turn-ending report names it, a finished
subagent's notice names it, or the name is of a file in another directory.  Each example has
its control: the same file used in the way the rule counts."""

from __future__ import annotations

from tests.replay.engine.need_runs import built_run, need_rules

ABS = "/home/u/repo/src/app.py"


def _bash(command: str) -> list[str]:
    return need_rules(built_run([("Bash", {"command": command})]))


def test_running_building_or_testing_a_file_is_not_a_need() -> None:
    for command in ("python src/app.py", "python3.12 src/app.py --flag", "bun test src/app.py",
                    "cd /tmp && pytest -q src/app.py 2>&1 | tail -5", "bun build src/app.py",
                    "npx tsc --noEmit src/app.py"):
        assert _bash(command) == [], command
    assert _bash("grep -n main src/app.py") == ["searches-file"]  # control: looks inside it
    assert _bash("make && diff src/app.py b.py && python src/app.py") == ["uses-path"]


def test_a_failing_run_of_a_file_is_a_need() -> None:
    run = built_run([("Bash", {"command": "python src/app.py"})], failing=frozenset({"Bash"}))
    assert need_rules(run) == ["uses-path"]


def test_a_subagent_prompt_naming_a_file_is_not_a_need() -> None:
    prompt = {"description": "review", "prompt": "Review src/app.py for bugs"}
    assert need_rules(built_run([("Task", prompt)])) == []
    assert need_rules(built_run([("Other", prompt)])) == ["uses-path"]  # control


def test_a_turn_ending_report_naming_a_file_is_not_a_need() -> None:
    report = "Done. Here's a summary of the changes:\n- `src/app.py`: main returns 1"
    assert need_rules(built_run([report])) == []
    working = "Now let me register it in `app.py`:"
    assert need_rules(built_run([working, ("Bash", {"command": "make"})])) == ["mentions-file"]


def test_a_finished_subagents_notice_names_only_its_output_file() -> None:
    notice = ("<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n"
              "<result>I changed src/app.py and src/util.py</result>\n</task-notification>")
    assert need_rules(built_run(["ok"], ["ok"], users={1: notice})) == []
    output = "<bash-notification>\n<output-file>/tmp/t/a1.output</output-file>\n</bash-notification>"
    run = built_run(["ok"], ["ok"], read="/tmp/t/a1.output", users={1: output})
    assert need_rules(run, "/tmp/t/a1.output") == ["notified-file"]
    said = "Please look at src/app.py again"
    assert need_rules(built_run(["ok"], ["ok"], users={1: said})) == ["notified-file"]


def test_a_file_of_the_same_name_in_another_directory_is_another_file() -> None:
    def rules(command: str) -> list[str]:
        return need_rules(built_run([("Bash", {"command": command})], read=ABS), ABS)

    assert rules("grep -n main /home/u/other/src/app.py") == []
    assert rules("cd /home/u/other && make && diff src/app.py b.py") == []
    assert rules("cd /home/u/repo && make && diff src/app.py b.py") == ["uses-path"]
    assert rules("grep -n main src/app.py") == ["searches-file"]  # relative: the same file
    assert rules("grep -n main app.py") == ["searches-file"]  # a bare name: no directory said
    glob = built_run([("Glob", {"pattern": "**/app.py"})], read=ABS)  # a glob's tail: a name
    assert need_rules(glob, ABS) == ["searches-file"]
    escaped = built_run([("Other", {"prompt": "see:\nsrc/app.py"})], read=ABS)  # JSON's \n
    assert need_rules(escaped, ABS) == ["uses-path"]
    text = built_run(["Compare /home/u/other/src/app.py", ("Bash", {"command": "make"})],
                     read=ABS)
    assert need_rules(text, ABS) == []
