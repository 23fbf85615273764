"""``[tool.ctxreplay]`` defaults for ``replay check``: a bare ``replay check`` in a project that
has them (``replay.config``; issue 16 item 11)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.config import find_config, read_config
from replay.errors import ConfigError

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "logs" / "scenarios" / "reserve-long-turn.jsonl"

PYPROJECT = """\
[project]
name = "my-agent"

[tool.ctxreplay]
archive = "ci/archive"
policies = ["ci/my-policy.yaml", "two-tier-corrected"]
baseline = "ci/baseline.json"
provider = "openai"
out = ".ctxreplay"
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project folder with an archive of one log, a policy and the config; cwd inside it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "ci" / "archive").mkdir(parents=True)
    shutil.copy(LOG, tmp_path / "ci" / "archive" / LOG.name)
    (tmp_path / "ci" / "my-policy.yaml").write_text("extends: two-tier-corrected\nname: mine\n"
                                                    "server: {window_tokens: 120000}\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "src").mkdir()
    old = Path.cwd()
    os.chdir(tmp_path / "src")  # a sub-folder: the config is found above
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def test_the_config_is_read_with_paths_relative_to_it(project: Path) -> None:
    cfg = find_config(Path.cwd())
    assert cfg is not None and cfg.source == project / "pyproject.toml"
    assert cfg.archive == (project / "ci" / "archive",)
    assert cfg.policies == (str(project / "ci" / "my-policy.yaml"), "two-tier-corrected")
    assert cfg.baseline == project / "ci" / "baseline.json" and cfg.provider == "openai"


def test_a_bare_check_records_then_passes(project: Path) -> None:
    first = runner.invoke(app, ["check", "--update-baseline", "-q"])
    assert first.exit_code == 0, first.output
    assert (project / "ci" / "baseline.json").is_file()
    assert (project / ".ctxreplay" / "dataset").is_dir()  # the config's out, not ./out
    assert not (project / "src" / "out").exists()
    again = runner.invoke(app, ["check", "-q"])
    assert again.exit_code == 0, again.output
    assert "check: PASS — 1 run × 2 policies" in again.output
    assert f"defaults from {project / 'pyproject.toml'}" in again.output


def test_the_command_line_wins_over_the_config(project: Path) -> None:
    assert runner.invoke(app, ["check", "--update-baseline", "-q"]).exit_code == 0
    other = runner.invoke(app, ["check", "-q", "-p", "claude-code"])
    assert other.exit_code == 2 and "claude-code" in other.output  # not in that baseline


def test_without_a_config_check_names_what_is_missing(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2
    assert "PATHS" in result.output and "--baseline" in result.output
    assert "tool.ctxreplay" in result.output


def test_a_typo_in_the_config_is_refused_with_the_key(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.ctxreplay]\nbaselin = "b.json"\n')
    with pytest.raises(ConfigError) as err:
        read_config(path)
    assert "tool.ctxreplay.baselin" in str(err.value) and "baseline" in str(err.value)
    path.write_text('[tool.ctxreplay]\npolicies = "two-tier-corrected"\n')
    with pytest.raises(ConfigError, match="policies: expected a list"):
        read_config(path)


@pytest.mark.parametrize(("text", "key"), [
    ('archive = ""', "archive"),  # was the config's folder: the whole project read as logs
    ('archive = ["logs", ""]', "archive"),
    ('provider = ""', "provider"),  # was no provider at all, without a word
])
def test_an_empty_path_or_name_in_the_config_is_refused(tmp_path: Path, text: str,
                                                        key: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[tool.ctxreplay]\n{text}\n')
    with pytest.raises(ConfigError, match=f"tool.ctxreplay.{key}: expected"):
        read_config(path)


@pytest.mark.parametrize("value", ["[" * 50_000 + "]" * 50_000, "{a=" * 5_000 + "1" + "}" * 5_000],
                         ids=["arrays", "inline tables"])
def test_a_config_nested_too_deeply_is_one_line_and_exit_2(tmp_path: Path, value: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """tomllib parses nesting recursively: a cloned project's pyproject.toml with a deep array
    anywhere (not only in [tool.ctxreplay]) made every bare check a RecursionError traceback."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\nx = {value}\n')
    with pytest.raises(ConfigError, match="nested too deeply"):
        find_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2 and "invalid TOML: nested too deeply" in result.output


def test_ctxreplay_toml_takes_top_level_keys(tmp_path: Path) -> None:
    (tmp_path / "ctxreplay.toml").write_text('baseline = "b.json"\nstrict_logs = true\n')
    cfg = read_config(tmp_path / "ctxreplay.toml")
    assert cfg is not None and cfg.baseline == tmp_path / "b.json" and cfg.strict_logs is True


def test_a_pyproject_without_the_table_is_no_config(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(tmp_path) is None


def test_the_readme_example_is_a_valid_config(tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text().split("### Defaults in pyproject.toml", 1)[1]
    (tmp_path / "pyproject.toml").write_text(text.split("```toml\n", 1)[1].split("```", 1)[0])
    cfg = read_config(tmp_path / "pyproject.toml")
    assert cfg is not None and cfg.archive and cfg.policies and cfg.baseline


@pytest.mark.parametrize("key", ["out", "baseline"])
@pytest.mark.parametrize("value", ["../elsewhere", "/tmp/ctxreplay-victim", "sub/../../up",
                                   "link/x"])
def test_a_config_cannot_make_check_write_outside_its_project(tmp_path: Path, key: str,
                                                              value: str) -> None:
    """What check writes (the ingest cache, an updated baseline) stays inside the folder of the
    config file, also through a symlink: a cloned repository's settings cannot aim it
    elsewhere.  Reading (archive, tolerances) may go anywhere."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "link").symlink_to(tmp_path)
    path = project / "pyproject.toml"
    path.write_text(f'[tool.ctxreplay]\n{key} = "{value}"\n')
    with pytest.raises(ConfigError, match=f"tool.ctxreplay.{key}: .* is outside the project"):
        read_config(path)
    path.write_text(f'[tool.ctxreplay]\n{key} = "ci/{key}"\narchive = "../logs"\n')
    cfg = read_config(path)
    assert cfg is not None and getattr(cfg, key) == project / "ci" / key
