"""Outputs that stay (issue 16 item 7, ``replay.layout``): one project cache (``.ctxreplay/``,
``--cache-dir`` or ``$CTXREPLAY_CACHE_DIR``), ``replay run`` writing ``out/<policy name>/``
(exactly ``--out`` when given), a report folder holding the report only, and the setting a
sweep chose written under its own name with how it was chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from replay.cli import app
from replay.layout import CACHE_ENV
from replay.policy import load_policy
from replay.safe_names import is_segment

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOGS = [str(REPO / "logs" / "write-heavy.jsonl"), str(REPO / "logs" / "explore-rereads.jsonl")]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the current folder, with no cache set in the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CACHE_ENV, raising=False)
    return tmp_path


def _summary(folder: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((folder / "summary.json").read_text())


def test_two_runs_with_different_policies_leave_both_outputs(project: Path) -> None:
    for policy in ("two-tier-corrected", "observation-masking"):
        result = runner.invoke(app, ["run", *LOGS, "-p", policy, "-q", "--json"])
        assert result.exit_code == 0, result.output
    for policy in ("two-tier-corrected", "observation-masking"):
        doc = _summary(project / "out" / policy)
        assert doc["policy"]["name"] == policy and len(doc["runs"]) == len(LOGS)
        assert (project / "out" / policy / "traces" / "requests.parquet").is_file()
    assert sorted(p.name for p in (project / "out").iterdir()) == ["observation-masking",
                                                                   "two-tier-corrected"]
    # one dataset cache for the project, reused by the second command
    assert (project / ".ctxreplay" / "dataset" / "manifest.json").is_file()
    manifest = json.loads((project / ".ctxreplay" / "dataset" / "manifest.json").read_text())
    assert sorted(manifest["entries"]) == sorted(Path(p).name for p in LOGS)


def test_out_is_exactly_the_folder_given_and_the_cache_dir_is_used(project: Path) -> None:
    result = runner.invoke(app, ["run", *LOGS, "-p", "none", "-q", "--out", "mine",
                                 "--cache-dir", "cache"])
    assert result.exit_code == 0, result.output
    assert _summary(project / "mine")["policy"]["name"] == "none"
    assert sorted(p.name for p in (project / "mine").iterdir()) == ["summary.json", "traces"]
    assert (project / "cache" / "dataset" / "manifest.json").is_file()
    assert not (project / "out").exists() and not (project / ".ctxreplay").exists()


def test_the_cache_can_be_set_in_the_environment(project: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(project / "elsewhere"))
    result = runner.invoke(app, ["calibrate", *LOGS, "-q", "--json"])
    assert result.exit_code == 0, result.output
    assert (project / "elsewhere" / "dataset" / "manifest.json").is_file()
    assert not (project / ".ctxreplay").exists()


def test_a_report_folder_holds_the_report_only(project: Path) -> None:
    result = runner.invoke(app, ["report", *LOGS, "-p", "none", "--out", "rep", "-q",
                                 "--max-timelines", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (project / "rep").iterdir()) == ["report.html", "report.md",
                                                                  "report_files"]
    assert (project / ".ctxreplay" / "dataset").is_dir()


@pytest.mark.parametrize("name", ["../../escaped", "a/b", "..", ".hidden", "x\x1b[31m\ny"])
def test_a_policy_name_from_a_file_is_one_folder_under_out(project: Path, name: str) -> None:
    policy = project / "p.yaml"
    policy.write_text(yaml.safe_dump({"extends": "none", "name": name}))
    result = runner.invoke(app, ["run", LOGS[0], "-p", str(policy), "-q"])
    assert result.exit_code == 0, result.output
    (folder,) = list((project / "out").iterdir())
    assert is_segment(folder.name) and (folder / "summary.json").is_file()
    written = {p for p in project.rglob("*")}
    assert all(p == project / "p.yaml" or project / "out" in (p, *p.parents)
               or project / ".ctxreplay" in (p, *p.parents) for p in written)


@pytest.mark.parametrize("name", ["sweep", "report_files", "Report.html"])
def test_a_policy_named_as_another_output_gets_a_folder_of_its_own(project: Path,
                                                                   name: str) -> None:
    """out/ also holds the sweep's folder and, by default, the report: a policy named
    ``sweep`` wrote its traces into out/sweep beside the sweep's tables."""
    policy = project / "p.yaml"
    policy.write_text(yaml.safe_dump({"extends": "none", "name": name}))
    result = runner.invoke(app, ["run", LOGS[0], "-p", str(policy), "-q"])
    assert result.exit_code == 0, result.output
    (folder,) = list((project / "out").iterdir())
    assert folder.name.startswith(f"{name}-") and (folder / "summary.json").is_file()


def test_the_chosen_setting_has_its_own_name_and_says_how_it_was_chosen(project: Path) -> None:
    result = runner.invoke(app, ["sweep", *LOGS, "-p", "two-tier-corrected", "--axis",
                                 "tiers.1.trigger.at_tokens=60000,80000", "--best",
                                 "overshoots_n<=1000", "--minimise", "tokens_sent", "--jobs", "1",
                                 "--no-plots", "-q", "--json"])
    assert result.exit_code == 0, result.output
    best = json.loads(result.stdout)["best"][0]
    path = project / "out" / "sweep" / "chosen.yaml"
    text = path.read_text()
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert any("tiers.1.trigger.at_tokens = 60000, 80000" in c for c in comments)
    assert any("overshoots_n<=1000" in c for c in comments)
    assert any("least tokens_sent" in c for c in comments)
    assert any(f"tiers.1.trigger.at_tokens={best['tiers.1.trigger.at_tokens']}" in c
               for c in comments)
    chosen = load_policy(path)
    assert chosen.name == f"two-tier-corrected-{best['setting'][:8]}"
    assert chosen.tiers[1].trigger.at_tokens == best["tiers.1.trigger.at_tokens"]
    # replayed, it writes beside the base policy's outputs, not over them
    for policy in ("two-tier-corrected", str(path)):
        assert runner.invoke(app, ["run", *LOGS, "-p", policy, "-q"]).exit_code == 0
    assert {p.name for p in (project / "out").iterdir()} == {"sweep", "two-tier-corrected",
                                                             chosen.name}
    assert (project / ".ctxreplay" / "sweep_cache").is_dir()
    assert not (project / "out" / "sweep_cache").exists()
    assert not (project / "out" / "dataset").exists()



@pytest.mark.parametrize("option", ["-p", "--grid"])
def test_a_sweep_never_overwrites_its_own_policy_or_grid(project: Path, option: str) -> None:
    """The setting a sweep chose is a policy to sweep again (``-p out/sweep/chosen.yaml``):
    the next sweep into the same ``--out`` wrote its own chosen.yaml over the policy it read;
    a grid kept in the sweep folder is an input as well.  Refused before any work, unchanged."""
    axis = ["--axis", "tiers.1.trigger.at_tokens=60000,80000"]
    first = runner.invoke(app, ["sweep", *LOGS, "-p", "two-tier-corrected", *axis, "--jobs", "1",
                                "--no-plots", "-q"])
    assert first.exit_code == 0, first.output
    chosen = project / "out" / "sweep" / "chosen.yaml"
    grid = project / "out" / "sweep" / "grid.yaml"
    grid.write_text("grid:\n  tiers.1.trigger.at_tokens: [50000, 70000]\n")
    before = {p: p.read_bytes() for p in (chosen, grid)}
    args = (["-p", str(chosen), *axis] if option == "-p"
            else ["-p", "two-tier-corrected", "--grid", str(grid)])
    again = runner.invoke(app, ["sweep", *LOGS, *args, "--jobs", "1", "--no-plots", "-q"])
    assert again.exit_code == 2, again.output
    assert "holds" in again.stderr, again.stderr
    assert {p: p.read_bytes() for p in (chosen, grid)} == before

def test_check_keeps_its_ingest_in_the_project_cache(project: Path) -> None:
    result = runner.invoke(app, ["check", *LOGS, "-p", "none", "--baseline", "b.json",
                                 "--update-baseline", "-q"])
    assert result.exit_code == 0, result.output
    assert (project / ".ctxreplay" / "dataset" / "manifest.json").is_file()
    assert sorted(p.name for p in project.iterdir()) == [".ctxreplay", "b.json"]
