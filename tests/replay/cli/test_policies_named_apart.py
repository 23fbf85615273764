"""Two policies of one name given with ``-p`` are refused alike by ``replay check``, ``report``
and ``diff`` (``replay.policy.refuse_shared_names``), exit 2, before any log is read: check
refused them where report and diff made up ``name #2`` for the second (a name that changed
with the order given)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

LOG = Path(__file__).resolve().parents[3] / "logs" / "compacting-session.jsonl"


def _args(command: str, tmp_path: Path, policies: list[str]) -> list[str]:
    args = [command, str(LOG), *(a for p in policies for a in ("-p", p)),
            "--cache-dir", str(tmp_path / "cache"), "-q"]
    if command == "check":
        args += ["--baseline", str(tmp_path / "b.json"), "--update-baseline"]
    if command == "report":
        args += ["--out", str(tmp_path / "rep")]
    return args


def _named(tmp_path: Path, file: str, name: str, extends: str) -> str:
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: {name}\nextends: {extends}\n")
    return str(path)


@pytest.mark.parametrize("command", ["check", "report", "diff"])
@pytest.mark.parametrize("given", ["preset twice", "two files of one name"])
def test_two_policies_of_one_name_are_refused_by_every_command(
        tmp_path: Path, command: str, given: str) -> None:
    policies = ["none", "none"] if given == "preset twice" else [
        _named(tmp_path, "v1/mine.yaml", "mine", "none"),
        _named(tmp_path, "v2/mine.yaml", "mine", "two-tier-corrected")]
    name = "none" if given == "preset twice" else "mine"
    done = CliRunner().invoke(app, _args(command, tmp_path, policies))
    err = " ".join(done.stderr.split())
    assert done.exit_code == 2, err
    assert f"error: two policies are named '{name}'; name each once" in err
    assert not (tmp_path / "cache").exists()  # refused before any log was read
    assert not (tmp_path / "rep").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("command", ["check", "report", "diff"])
def test_policies_named_apart_are_taken(tmp_path: Path, command: str) -> None:
    """The same two policies with names of their own: each command runs them."""
    policies = [_named(tmp_path, "v1/mine.yaml", "mine", "none"),
                _named(tmp_path, "v2/mine.yaml", "mine-2", "two-tier-corrected")]
    done = CliRunner().invoke(app, _args(command, tmp_path, policies))
    assert done.exit_code == 0, done.stderr
