"""tests/conftest.py's session-wide arrangements: each test starts with the process-wide
settings the session started with, whatever the tests before it on the same worker imported
(its teardown hook); typer's ``CliRunner`` builds the app's click command once."""

from __future__ import annotations

import sys

import pytest

from replay.ingest.parsers.json_depth import MAX_DEPTH, check_each
from tests import conftest


def test_a_raised_recursion_limit_is_the_sessions_again_after_the_test(
        request: pytest.FixtureRequest) -> None:
    assert conftest.RECURSION_LIMIT <= MAX_DEPTH  # the parsers' plain path on this Python
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(3000)  # as `import jedi` does (nbclient -> IPython -> jedi)
        conftest.pytest_runtest_teardown(request.node)
        assert sys.getrecursionlimit() == conftest.RECURSION_LIMIT
        assert sys.version_info >= (3, 12) or not check_each()  # texts decoded unmeasured
    finally:
        sys.setrecursionlimit(before)


def test_the_cli_runner_builds_the_apps_command_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from replay.cli import app

    built: list[object] = []
    build = conftest._build_command
    monkeypatch.setattr(conftest, "_COMMANDS", {})
    monkeypatch.setattr(conftest, "_build_command", lambda a: built.append(a) or build(a))
    runner = CliRunner()
    assert [runner.invoke(app, ["--version"]).exit_code for _ in range(2)] == [0, 0]
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2
    assert built == [app]  # typer's CliRunner calls the cache: built once, invoked thrice
