"""``replay synth --out DIR`` overwrites only files it wrote: ``synth --out .`` in a project
replaced the user's own ``README.md`` (and a log of a scenario's name), exit 0.  Now a folder
holding one of the names synth writes is written only when it is a folder synth wrote (its
``README.md`` begins with synth's header); else exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.synth.embedded import CORPUS

_ONE = CORPUS[0].name


def _synth(out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["synth", "--out", str(out), "--only", _ONE])
    return result.exit_code, result.output


@pytest.mark.parametrize("mine", ["README.md", f"{_ONE}.jsonl", "readme_link"])
def test_a_user_s_file_of_a_name_synth_writes_is_not_overwritten(tmp_path: Path,
                                                                   mine: str) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("# Recorded runs (synthetic)\nmine\n")
    if mine == "readme_link":  # (a symlink to a README of synth's header is not synth's own)
        (proj / "README.md").symlink_to(elsewhere)
    else:
        (proj / mine).write_text("mine\n")
    before = sorted(os.listdir(proj))
    code, output = _synth(proj)
    assert code == 2, output
    assert "not written by `replay synth`" in " ".join(output.split())
    assert sorted(os.listdir(proj)) == before
    if mine != "readme_link":
        assert (proj / mine).read_text() == "mine\n"
    assert elsewhere.read_text() == "# Recorded runs (synthetic)\nmine\n"


def test_a_new_folder_a_folder_of_other_names_and_synth_s_own_are_written(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("mine\n")  # (no name synth writes: left as it is)
    assert _synth(proj)[0] == 0 and (proj / f"{_ONE}.jsonl").is_file()
    assert _synth(proj)[0] == 0  # its own folder: regenerated
    assert (proj / "notes.txt").read_text() == "mine\n"
    assert _synth(tmp_path / "new")[0] == 0


def test_its_default_logs_folder_is_not_followed_when_a_symlink(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``replay synth`` with no --out writes ``logs``: a repository cloned with ``logs`` a
    symlink to a folder outside it had synth write its logs and README there, exit 0, as run,
    report and sweep wrote through an ``out`` symlink before their defaults were checked
    (``replay.layout.unnamed``).  Now exit 2, nothing written; named, the folder is written."""
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "logs").symlink_to(victim)
    monkeypatch.chdir(proj)
    result = CliRunner().invoke(app, ["synth", "--only", _ONE])
    assert result.exit_code == 2, result.output
    assert "logs: a symlink (to " in result.output and "not named by you" in result.output
    assert list(victim.iterdir()) == []
    assert _synth(Path("logs"))[0] == 0 and (victim / f"{_ONE}.jsonl").is_file()
