"""Outputs that stay where they were asked and inputs never overwritten (issue 23, items 1–5, 22):
a symlink at any component a command writes is refused, never followed; no command writes its
inputs, baseline, tolerances, policies or the cache; an output that cannot be written is one
line and exit 2, before the work.

Each class is tested on layouts a generator builds fresh (``_symlink_cases``,
``_target_cases``, ...), not on the issue's reproductions: a symlink planted at every
component a command writes, every kind of input named as an output.  The other items are in
``test_outputs_trust_caches.py`` (7–8), ``test_outputs_trust_full_disk.py`` (23) and
``test_outputs_trust_run_identity.py`` (6).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.outputs_project import AXIS, SMALL, _invoke, _one_error_line, _snapshot, new_project

# --- items 1–2: a symlink at any component a command writes is refused, never followed --------

@dataclass(frozen=True)
class Command:
    name: str
    args: Callable[[Path], list[str]]
    """The command line, given the project folder."""
    components: tuple[str, ...]
    """Paths (relative to the project) the command creates or replaces."""


COMMANDS = (
    Command("run --out", lambda p: ["run", "logs", "-p", "none", "--out", "o", "-q", "--report"],
            ("o/traces", "o/traces/requests.parquet", "o/summary.json", "o/report_files",
             "o/report.html", "o/report.md")),
    Command("run default out", lambda p: ["run", "logs", "-p", "none", "-q"],
            ("out", "out/none", "out/none/traces", "out/none/summary.json")),
    # a default folder (out, .ctxreplay) is not one the user named: a symlink there (shipped in
    # a cloned repository) was followed, and every command wrote where it pointed
    Command("report default out", lambda p: ["report", "logs", "-p", "none", "-q",
                                             "--max-timelines", "1"], ("out",)),
    Command("sweep default out", lambda p: ["sweep", "logs", "-p", "two-tier-corrected", *AXIS,
                                            "-q", "--jobs", "1", "--no-plots"], ("out",)),
    Command("report", lambda p: ["report", "logs", "-p", "none", "--out", "o", "-q",
                                 "--max-timelines", "1"],
            ("o/report_files", "o/report.html", "o/report.md")),
    Command("sweep", lambda p: ["sweep", "logs", "-p", "two-tier-corrected", *AXIS, "--out", "o",
                                "-q", "--jobs", "1", "--no-plots"],
            ("o/sweep", "o/sweep/sweep.csv", "o/sweep/sweep.parquet", "o/sweep/settings.json",
             ".ctxreplay/sweep_cache")),
    Command("the ingest cache", lambda p: ["calibrate", "logs", "-q", "--json"],
            (".ctxreplay", ".ctxreplay/dataset", ".ctxreplay/dataset/data",
             ".ctxreplay/dataset/manifest.json",
             ".ctxreplay/dataset/index.parquet")),
    Command("check --junit", lambda p: ["check", "logs", "-p", "none", "--baseline", "b/base.json",
                                        "--update-baseline", "-q"],
            ("b/base.json",)),
)
"""(``redact`` names its copies by salted hashes, so no component is known in advance; its
writes go through the same ``replay.atomic_files``.)"""


def _symlink_cases() -> Iterator[tuple[Command, str, bool]]:
    """Every (command, component, whether the victim is a folder) a symlink may be planted at."""
    for command in COMMANDS:
        for component in command.components:
            yield command, component, not Path(component).suffix


@pytest.mark.parametrize(("command", "component", "folder"),
                         list(_symlink_cases()),
                         ids=[f"{c.name}:{comp}" for c, comp, _ in _symlink_cases()])
def test_a_symlink_planted_in_an_output_is_refused_and_never_followed(
        project: Path, command: Command, component: str, folder: bool) -> None:
    victim = project.parent / f"{project.name}-victim"
    victim.mkdir()
    (victim / "holiday.png").write_bytes(b"precious")
    (victim / "requests.parquet").write_bytes(b"precious too")
    link = project / component
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim if folder else victim / "holiday.png")
    before = _snapshot(victim)
    result = _invoke(command.args(project))
    assert result.exit_code == 2 or (command.name == "redact" and result.exit_code == 1), \
        result.output
    assert "symlink" in result.output, result.output
    assert _snapshot(victim) == before  # nothing written there, nothing deleted there
    assert link.is_symlink()
    assert not [p for p in project.rglob("*.tmp*")], "a temporary file was left"


def test_a_named_folder_through_a_default_s_symlink_is_written(project: Path) -> None:
    """The refusal is of a default the user did not name: named, the same folders are written
    (--cache-dir .ctxreplay, --out out/x), and redact, which writes no cache, still runs."""
    victim = project.parent / f"{project.name}-elsewhere"
    victim.mkdir()
    (project / ".ctxreplay").symlink_to(victim)
    (project / "out").symlink_to(victim)
    assert _invoke(["redact", "logs", "--out", "shared", "-q"]).exit_code == 0
    assert _invoke(["run", "logs", "-p", "none", "-q", "--cache-dir", ".ctxreplay",
                    "--out", "out/x"]).exit_code == 0
    assert (victim / "dataset" / "manifest.json").is_file()
    assert (victim / "x" / "summary.json").is_file()


@pytest.mark.parametrize("component", ["o/report.html", "o/report.md", "o/summary.json",
                                       "o/report_files"])
def test_a_symlink_planted_at_a_planned_output_is_refused_before_any_work(
        project: Path, component: str) -> None:
    # every output the command plans is checked before the replay (output_targets), not only at
    # its write: nothing of the run is written, no trace, no summary
    victim = project.parent / f"{project.name}-victim"
    victim.mkdir()
    (project / "o").mkdir()
    (project / component).symlink_to(victim if not Path(component).suffix else victim / "x")
    result = _invoke(["run", "logs", "-p", "none", "--out", "o", "-q", "--report"])
    assert result.exit_code == 2, result.output
    assert f"{Path(component).name}: is a symlink inside the output folder" in result.output
    assert sorted(p.name for p in (project / "o").iterdir()) == [Path(component).name]
    assert not list(victim.iterdir())


def test_a_report_s_stale_figures_are_removed_inside_report_files_only(project: Path) -> None:
    assert _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",
                    "--max-timelines", "1"]).exit_code == 0
    drawn = next((project / "o" / "report_files").glob("*.png"))  # a figure an earlier
    # report drew (marked as a report's) that this one does not draw again
    (project / "o" / "report_files" / "timeline_009_gone.png").write_bytes(drawn.read_bytes())
    (project / "o" / "mine.png").write_bytes(b"mine")
    # a symlink of the user's (to a picture elsewhere) is no figure a report drew: it was
    # unlinked as a stale figure, exit 0; now left as it is
    (project / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\nmine")
    (project / "o" / "report_files" / "holiday.png").symlink_to(project / "photo.png")
    assert _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",
                    "--max-timelines", "1"]).exit_code == 0
    assert not (project / "o" / "report_files" / "timeline_009_gone.png").exists()
    assert (project / "o" / "mine.png").read_bytes() == b"mine"
    assert os.readlink(project / "o" / "report_files" / "holiday.png") == \
        str(project / "photo.png")
    assert (project / "photo.png").read_bytes() == b"\x89PNG\r\n\x1a\nmine"


# --- items 3–5: no command writes its inputs, baseline, tolerances, policies or the cache -----

@pytest.fixture(scope="session")
def checked_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``project`` fixture's folder (its two logs) with what the tests below start from: a
    policy and tolerances file, a dataset ``ds`` of the logs, the project cache (``calibrate``
    ingested into it) with an empty sweep cache, and ``base.json`` (``check
    --update-baseline``).  Made once per worker, copied by each test (``new_project``)."""
    with new_project(tmp_path_factory.mktemp("checked-project") / "project") as folder:
        (folder / "policy.yaml").write_text("extends: none\n")
        (folder / "tol.yaml").write_text("default: {rel: 0.0}\n")
        assert _invoke(["ingest", "logs", "--out", "ds", "-q"]).exit_code == 0
        assert _invoke(["calibrate", "logs", "-q", "--json"]).exit_code == 0  # the cache exists
        (folder / ".ctxreplay" / "sweep_cache").mkdir()
        assert _invoke(["check", "logs", "-p", "none", "--baseline", "base.json",
                        "--update-baseline", "-q"]).exit_code == 0
    return folder


def _target_cases() -> Iterator[tuple[str, list[str], str]]:
    """(case id, command line, what the refusal names) for every kind of thing a command reads
    named as one of its outputs."""
    check = ["check", "logs", "-p", "policy.yaml", "--baseline", "base.json",
             "--tolerances", "tol.yaml", "-q"]
    kinds = {"a log": "logs/" + SMALL[0].name, "a file under the input folder": "logs/new.xml",
             "the input folder": "logs", "the baseline": "base.json",
             "the tolerances": "tol.yaml", "a policy file": "policy.yaml",
             "the cache's dataset": ".ctxreplay/dataset",
             "a file in the cache": ".ctxreplay/dataset/manifest.json",
             "the sweep cache": ".ctxreplay/sweep_cache/x.xml"}
    for kind, target in kinds.items():
        for option in ("--junit", "--markdown"):
            yield f"check {option} = {kind}", [*check, option, target], "error:"
        if kind not in ("the baseline",):
            yield (f"check --update-baseline with the baseline = {kind}",
                   ["check", "logs", "-p", "policy.yaml", "--tolerances", "tol.yaml",
                    "--baseline", target, "--update-baseline", "-q"], "error:")
    yield "check --junit = --markdown", [*check, "--junit", "x.xml", "--markdown", "x.xml"], \
        "error:"
    for folder in ("logs", "logs/sub", ".ctxreplay/dataset", ".ctxreplay/sweep_cache",
                   ".ctxreplay/dataset/data"):
        yield f"run --out {folder}", ["run", "logs", "-p", "none", "--out", folder, "-q"], \
            "error:"
        yield f"report --out {folder}", ["report", "logs", "-p", "none", "--out", folder,
                                         "-q"], "error:"
        yield f"sweep --out {folder}", ["sweep", "logs", "-p", "two-tier-corrected", *AXIS,
                                        "--out", folder, "-q"], "error:"
        yield f"redact --out {folder}", ["redact", "logs", "--out", folder], "error:"
    yield "ingest --out the input folder", ["ingest", "logs", "--out", "logs"], "error:"
    yield "ingest --out holding the input", ["ingest", "logs", "--out", "."], "error:"
    yield "run a dataset --out itself", ["run", "ds", "-p", "none", "--out", "ds", "-q"], \
        "error:"


@pytest.mark.parametrize(("case", "args", "said"), list(_target_cases()),
                         ids=[c for c, _, _ in _target_cases()])
def test_an_output_that_is_an_input_the_baseline_or_the_cache_is_refused_before_any_work(
        project: Path, checked_project: Path, case: str, args: list[str], said: str) -> None:
    def dataset_only_if_named(folder: str, names: list[str]) -> list[str]:
        return ["ds"] if Path(folder) == checked_project and "dataset" not in case else []

    shutil.copytree(checked_project, project, symlinks=True, dirs_exist_ok=True,
                    ignore=dataset_only_if_named)
    cache_before = _snapshot(project / ".ctxreplay")
    before = _snapshot(project)
    result = _invoke(args)
    assert result.exit_code == 2, (case, result.output)
    line = _one_error_line(result)
    assert said in line
    assert _snapshot(project) == before  # refused before any work: nothing written or read
    assert _snapshot(project / ".ctxreplay") == cache_before


# --- the project cache's dataset is, or holds, an input ---------------------------------------

_READERS = {
    "run": ["run", "-p", "none", "-q"], "calibrate": ["calibrate", "-q"],
    "fidelity": ["fidelity", "-q"], "report": ["report", "-p", "none", "--out", "r", "-q"],
    "diff": ["diff", "-p", "none", "-p", "two-tier-corrected", "-q"],
    "check": ["check", "-p", "none", "--baseline", "b.json", "--update-baseline", "-q"],
    "sweep": ["sweep", "-p", "two-tier-corrected", *AXIS, "-q"], "sql": ["sql", "select 1"]}
"""Every command that ingests its logs into the project cache, without its PATHS."""


@pytest.mark.parametrize("given", ["the folder", "a log in it"])
@pytest.mark.parametrize("command", list(_READERS))
def test_a_cache_whose_dataset_is_or_holds_an_input_is_refused(project: Path, command: str,
                                                              given: str) -> None:
    """Before: ``--cache-dir X`` with the logs in ``X/dataset`` wrote the manifest, index and
    entries among the logs (exit 0), and from then on that folder was read as a dataset: its
    logs skipped, new ones never read."""
    (project / "X" / "dataset").mkdir(parents=True)
    log = shutil.copy(SMALL[0], project / "X" / "dataset" / SMALL[0].name)
    before = _snapshot(project)
    path = "X/dataset" if given == "the folder" else str(Path(log).relative_to(project))
    name, *rest = _READERS[command]
    argv = [name, *rest, path] if command == "sql" else [name, path, *rest]
    result = _invoke([*argv, "--cache-dir", "X"])
    assert result.exit_code == 2, result.output
    assert "project cache's dataset" in _one_error_line(result)
    assert _snapshot(project) == before


# --- item 22: an output that cannot be written is one line and exit 2, before the work --------

@pytest.mark.parametrize("target", ["a folder", "/proc/version", "/proc/new.xml",
                                    "under a file", "read-only"])
@pytest.mark.parametrize("option", ["--junit", "--markdown", "--baseline"])
def test_an_unwritable_check_output_is_a_usage_error(project: Path, checked_project: Path,
                                                     target: str, option: str,
                                                     request: pytest.FixtureRequest) -> None:
    shutil.copy(checked_project / "base.json", project / "base.json")  # the project's baseline
    (project / "dir").mkdir()
    (project / "afile").write_text("x")
    path = {"a folder": "dir", "under a file": "afile/x.xml"}.get(target, target)
    if target == "read-only":
        path = str(request.getfixturevalue("read_only_dir") / "x.xml")
    extra = ["--update-baseline"] if option == "--baseline" else []
    args = ["check", "logs", "-p", "none", "--baseline", "base.json", option, path, "-q", *extra]
    if option == "--baseline":
        args = ["check", "logs", "-p", "none", "--baseline", path, "-q", *extra]
    assert not (project / ".ctxreplay").exists()  # the baseline was made in another folder
    result = _invoke(args)
    assert result.exit_code == 2, result.output
    _one_error_line(result)
    assert not (project / ".ctxreplay").exists()  # before any work: nothing ingested
