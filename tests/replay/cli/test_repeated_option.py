"""An option of one value given twice is a usage error (exit 2), on every command: click keeps
the last value without a word, so ``replay run logs -p none -p claude-code`` replayed
claude-code alone, exit 0 (``report``, ``diff`` and ``check`` take ``-p`` again and again, and
so a user does), and ``--out a --out b`` wrote b.  The options are taken from the app, so a
command or an option added later is checked too."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()
LOG = Path(__file__).resolve().parents[3] / "logs" / "compacting-session.jsonl"
_COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
ONE_VALUE = sorted((name, p.opts[0]) for name, cmd in _COMMANDS.items() for p in cmd.params
                   if p.param_type_name == "option" and not p.is_flag and not p.count
                   and not p.multiple and p.nargs == 1)


def test_the_options_checked_include_the_ones_users_repeat() -> None:
    assert {("run", "--policy"), ("run", "--out"), ("sweep", "--policy"), ("sql", "--limit"),
            ("check", "--baseline"), ("redact", "--out")} <= set(ONE_VALUE)


@pytest.mark.parametrize(("name", "option"), ONE_VALUE)
def test_an_option_of_one_value_given_twice_is_a_usage_error(
        name: str, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # (where a command that took the option would write)
    result = runner.invoke(app, [name, option, "a", option, "b"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "given more than once, but it takes one value" in said, said
    assert option in said


def test_run_with_two_policies_replays_neither(tmp_path: Path) -> None:
    out = tmp_path / "o"
    for argv in (["-p", "none", "-p", "claude-code"], ["-pnone", "--policy=claude-code"],
                 ["-qp", "none", "-p", "claude-code"]):
        result = runner.invoke(app, ["run", str(LOG), *argv, "--out", str(out),
                                     "--cache-dir", str(tmp_path / "c")])
        assert result.exit_code == 2, (argv, result.output)
        assert "'--policy / -p'" in " ".join(result.output.split()) or \
            "'-p / --policy'" in " ".join(result.output.split()), result.output
    assert not out.exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize("argv", [
    ["run", str(LOG), "-p", "none", "-q", "-q"],  # a flag twice: the same
    ["sql", "SELECT '-p', '--limit'", "--limit", "1", "--", "-p"],  # values and after --
    ["report", str(LOG), "-p", "none", "-p", "claude-code"],  # an option of many values
])
def test_what_is_not_an_option_of_one_value_twice_is_left_to_the_command(
        argv: list[str], tmp_path: Path) -> None:
    result = runner.invoke(app, [*argv, "--cache-dir", str(tmp_path / "c")]
                           if argv[0] != "sql" else argv)
    assert "given more than once" not in result.output, result.output
