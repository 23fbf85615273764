"""The README is the front door: every command is documented there and has help text."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from replay.cli import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands() -> dict:  # type: ignore[type-arg]
    return get_command(app).commands  # type: ignore[attr-defined,no-any-return]


def test_every_command_has_help_and_is_in_the_readme() -> None:
    for name, cmd in _commands().items():
        assert cmd.help, f"`replay {name}` has no help text"
        assert f"replay {name}" in README, f"`replay {name}` is not in the README"
        for param in cmd.params:
            if param.param_type_name == "option":
                assert param.help, f"`replay {name} {param.opts[0]}` has no help text"


def test_readme_states_the_two_commands_and_ci_runs_the_test_one() -> None:
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    commands = [line for line in blocks[0].splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[1] in ci
    assert "logs/" in commands[0]


def test_every_preset_is_in_the_readme() -> None:
    from replay.policy import presets

    for name in presets():
        assert f"`{name}`" in README, name
