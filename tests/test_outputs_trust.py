"""Outputs that stay where they were asked, inputs never overwritten, caches checked, output
errors in one line, a full disk losing nothing already computed (issue 23, items 1–8, 22, 23).

Each class is tested on layouts a generator builds fresh (``_symlink_cases``,
``_target_cases``, ``_damages``, ...), not on the issue's reproductions: a symlink planted at
every component a command writes, every kind of input named as an output, every way of
damaging a cache entry.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from replay import atomic_files
from replay.cli import app
from replay.layout import CACHE_ENV

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
SMALL = sorted((REPO / "logs" / "scenarios").glob("*.jsonl"), key=lambda p: p.stat().st_size)[:2]
"""The two smallest generated logs (a few hundred KB): every command is quick on them."""
AXIS = ["--axis", "tiers.1.keep_messages=8,16"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current folder with two logs under ``logs/`` and no cache in the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CACHE_ENV, raising=False)
    (tmp_path / "logs").mkdir()
    for log in SMALL:
        shutil.copy(log, tmp_path / "logs" / log.name)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (symlinks as their target) with a digest of its bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _invoke(args: list[str]) -> Result:
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def _one_error_line(result: Result) -> str:
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


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
            ("out/none", "out/none/traces", "out/none/summary.json")),
    Command("report", lambda p: ["report", "logs", "-p", "none", "--out", "o", "-q",
                                 "--max-timelines", "1"],
            ("o/report_files", "o/report.html", "o/report.md")),
    Command("sweep", lambda p: ["sweep", "logs", "-p", "two-tier-corrected", *AXIS, "--out", "o",
                                "-q", "--jobs", "1", "--no-plots"],
            ("o/sweep", "o/sweep/sweep.csv", "o/sweep/sweep.parquet", "o/sweep/settings.json",
             ".ctxreplay/sweep_cache")),
    Command("the ingest cache", lambda p: ["calibrate", "logs", "-q", "--json"],
            (".ctxreplay/dataset", ".ctxreplay/dataset/data", ".ctxreplay/dataset/manifest.json",
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


def test_a_report_s_stale_figures_are_removed_inside_report_files_only(project: Path) -> None:
    assert _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",
                    "--max-timelines", "1"]).exit_code == 0
    (project / "o" / "report_files" / "stale.png").write_bytes(b"old")
    (project / "o" / "mine.png").write_bytes(b"mine")
    assert _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",
                    "--max-timelines", "1"]).exit_code == 0
    assert not (project / "o" / "report_files" / "stale.png").exists()
    assert (project / "o" / "mine.png").read_bytes() == b"mine"


# --- items 3–5: no command writes its inputs, baseline, tolerances, policies or the cache -----

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
        project: Path, case: str, args: list[str], said: str) -> None:
    (project / "policy.yaml").write_text("extends: none\n")
    (project / "tol.yaml").write_text("default: {rel: 0.0}\n")
    if "dataset" in case:
        assert _invoke(["ingest", "logs", "--out", "ds", "-q"]).exit_code == 0
    assert _invoke(["calibrate", "logs", "-q", "--json"]).exit_code == 0  # the cache exists
    (project / ".ctxreplay" / "sweep_cache").mkdir()
    assert _invoke(["check", "logs", "-p", "none", "--baseline", "base.json",
                    "--update-baseline", "-q"]).exit_code == 0
    cache_before = _snapshot(project / ".ctxreplay")
    before = _snapshot(project)
    result = _invoke(args)
    assert result.exit_code == 2, (case, result.output)
    line = _one_error_line(result)
    assert said in line
    assert _snapshot(project) == before  # refused before any work: nothing written or read
    assert _snapshot(project / ".ctxreplay") == cache_before


# --- item 22: an output that cannot be written is one line and exit 2, before the work --------

@pytest.mark.parametrize("target", ["a folder", "/proc/version", "/proc/new.xml",
                                    "under a file", "read-only"])
@pytest.mark.parametrize("option", ["--junit", "--markdown", "--baseline"])
def test_an_unwritable_check_output_is_a_usage_error(project: Path, target: str, option: str,
                                                     request: pytest.FixtureRequest) -> None:
    assert _invoke(["check", "logs", "-p", "none", "--baseline", "base.json",
                    "--update-baseline", "-q"]).exit_code == 0
    (project / "dir").mkdir()
    (project / "afile").write_text("x")
    path = {"a folder": "dir", "under a file": "afile/x.xml"}.get(target, target)
    if target == "read-only":
        path = str(request.getfixturevalue("read_only_dir") / "x.xml")
    extra = ["--update-baseline"] if option == "--baseline" else []
    args = ["check", "logs", "-p", "none", "--baseline", "base.json", option, path, "-q", *extra]
    if option == "--baseline":
        args = ["check", "logs", "-p", "none", "--baseline", path, "-q", *extra]
    shutil.rmtree(project / ".ctxreplay")
    result = _invoke(args)
    assert result.exit_code == 2, result.output
    _one_error_line(result)
    assert not (project / ".ctxreplay").exists()  # before any work: nothing ingested


# --- items 7–8: cache entries carry a checksum and the key they answer -----------------------

def _run_json(args: list[str]) -> list[dict[str, object]]:
    result = _invoke([*args, "--json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def _damages(seed: int) -> Iterator[tuple[str, Callable[[Path], None]]]:
    """Ways a store's entries get damaged, each drawn with ``seed`` (which entry, where cut)."""
    rng = random.Random(seed)

    def entries(ds: Path) -> list[Path]:
        return sorted(p for p in (ds / "data").iterdir() if p.is_dir())

    def truncate(ds: Path) -> None:
        e = rng.choice(entries(ds))
        f = e / rng.choice(["requests.parquet", "messages.parquet", "runs.parquet"])
        f.write_bytes(f.read_bytes()[:rng.randrange(0, f.stat().st_size)])

    def swap_folders(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        a.rename(ds / "tmp")
        b.rename(a)
        (ds / "tmp").rename(b)

    def swap_file(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        name = rng.choice(["requests.parquet", "messages.parquet", "runs.parquet",
                           "events.parquet"])
        shutil.copy(a / name, b / name)

    def flip_byte(ds: Path) -> None:
        f = rng.choice(entries(ds)) / "requests.parquet"
        data = bytearray(f.read_bytes())
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        f.write_bytes(bytes(data))

    def remove_file(ds: Path) -> None:
        (rng.choice(entries(ds)) / "messages.parquet").unlink()

    def symlinked_entry(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        shutil.rmtree(b)
        b.symlink_to(a)

    yield from [("truncate", truncate), ("swap folders", swap_folders),
                ("swap a file", swap_file), ("flip a bit", flip_byte),
                ("remove a file", remove_file), ("symlinked entry", symlinked_entry)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("damage", [name for name, _ in _damages(0)])
def test_a_damaged_store_entry_is_parsed_again_with_a_line_and_the_same_figures(
        project: Path, damage: str, seed: int) -> None:
    for log in sorted((REPO / "logs" / "scenarios").glob("*.jsonl"))[:4]:
        shutil.copy(log, project / "logs" / log.name)
    clean = _run_json(["run", "logs", "-p", "none", "-q", "--out", "a"])
    dict(_damages(seed))[damage](project / ".ctxreplay" / "dataset")
    result = _invoke(["run", "logs", "-p", "none", "-q", "--out", "b", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == clean  # no wrong number
    assert "parsed again" in result.output
    again = _invoke(["ingest", "logs", "--out", ".ctxreplay/dataset", "--json"])
    assert json.loads(again.stdout)["repaired"] == []  # the first command repaired it


@pytest.mark.parametrize("damage", [name for name, _ in _damages(0)])
def test_a_dataset_given_directly_with_a_damaged_entry_is_refused_in_one_line(
        project: Path, damage: str) -> None:
    for log in sorted((REPO / "logs" / "scenarios").glob("*.jsonl"))[:3]:
        shutil.copy(log, project / "logs" / log.name)
    assert _invoke(["ingest", "logs", "--out", "ds", "-q"]).exit_code == 0
    dict(_damages(3))[damage](project / "ds")
    result = _invoke(["run", "ds", "-p", "none", "-q", "--out", "o"])
    assert result.exit_code == 2, result.output
    assert "ingest" in _one_error_line(result)  # says how to repair it
    repaired = _invoke(["ingest", "logs", "--out", "ds", "--json", "-q"])
    assert len(json.loads(repaired.stdout)["repaired"]) >= 1
    assert _invoke(["run", "ds", "-p", "none", "-q", "--out", "o"]).exit_code == 0


def _sweep(extra: list[str] = ()) -> dict[str, object]:  # type: ignore[assignment]
    result = _invoke(["sweep", "logs", "-p", "two-tier-corrected", *AXIS, "--out", "o", "-q",
                      "--jobs", "1", "--no-plots", "--json", *extra])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def _sweep_table(project: Path) -> list[dict[str, object]]:
    rows = pq.read_table(project / "o" / "sweep" / "sweep.parquet").to_pylist()
    return sorted(rows, key=lambda r: (str(r["run_id"]), str(r["setting"])))


def _sweep_damages(rng: random.Random) -> Iterator[tuple[str, Callable[[list[Path]], None]]]:
    def copy_over(files: list[Path]) -> None:
        a, b = rng.sample(files, 2)
        shutil.copy(a, b)

    def copy_fixing_key(files: list[Path]) -> None:  # the key column made to fit
        a, b = rng.sample(files, 2)
        ta, tb = pq.read_table(a), pq.read_table(b)
        col = ta.schema.get_field_index("run_key")
        fixed = ta.set_column(col, "run_key", tb.column("run_key"))
        pq.write_table(fixed.replace_schema_metadata({
            **(ta.schema.metadata or {}), **{k: v for k, v in (tb.schema.metadata or {}).items()
                                             if k != b"ctxreplay.checksum"}}), b)

    def edit_metric(files: list[Path]) -> None:
        f = rng.choice(files)
        t = pq.read_table(f)
        col = t.schema.get_field_index("tokens_sent")
        values = [v + 1 for v in t.column("tokens_sent").to_pylist()]
        pq.write_table(t.set_column(col, t.schema.field(col), [values]), f)

    def truncate(files: list[Path]) -> None:
        f = rng.choice(files)
        f.write_bytes(f.read_bytes()[:rng.randrange(f.stat().st_size)])

    yield from [("copy over another", copy_over), ("copy, key fixed", copy_fixing_key),
                ("edit a metric", edit_metric), ("truncate", truncate)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("damage", [name for name, _ in _sweep_damages(random.Random(0))])
def test_a_damaged_sweep_cache_file_is_dropped_said_and_replayed(project: Path, damage: str,
                                                                 seed: int) -> None:
    first = _sweep()
    assert first["reused"] == 0 and first["cache_dropped"] == 0
    clean = _sweep_table(project)
    files = sorted((project / ".ctxreplay" / "sweep_cache").glob("*.parquet"))
    dict(_sweep_damages(random.Random(seed)))[damage](files)
    again = _sweep()
    assert again["cache_dropped"] == 1
    n_settings = again["settings"]
    assert again["computed"] == n_settings and again["reused"] == first["computed"] - n_settings
    assert _sweep_table(project) == clean  # no run twice, none missing, no edited value
    assert _sweep()["cache_dropped"] == 0  # rewritten


# --- item 23: a full disk keeps what was computed and leaves no temporary file --------------

@pytest.mark.parametrize("n_files", [1, 2])
def test_a_full_disk_while_storing_the_sweep_cache_keeps_the_results(
        project: Path, monkeypatch: pytest.MonkeyPatch, n_files: int) -> None:
    _invoke(["calibrate", "logs", "-q", "--json"])  # the dataset written before the disk fills
    clean = _sweep(["--no-cache"])
    monkeypatch.setattr("analysis.sweep.cache.atomic_write_bytes", _failing_after(n_files))
    result = _invoke(["sweep", "logs", "-p", "two-tier-corrected", *AXIS, "--out", "o2", "-q",
                      "--jobs", "1", "--no-plots", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["best"] == clean["best"]
    assert doc["cache_unwritten"] == max(0, len(SMALL) - n_files + 1)
    assert "not stored" in result.output and "No space left" in result.output
    assert not [p for p in project.rglob("*.tmp*")]


def _failing_after(n: int) -> Callable[..., None]:
    """``atomic_write_bytes`` on a disk that fills at the ``n``-th file: that write stops
    half-way with ENOSPC (its temporary file begun), and so does every later one."""
    count = [0]
    real = atomic_files.atomic_write_bytes

    def write(path: Path, data: bytes, *, within: Path) -> None:
        count[0] += 1
        if count[0] >= n:
            with atomic_files.atomic_stream(path, within=within) as f:
                f.write(data[:10])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data, within=within)
    return write


@pytest.mark.parametrize("n_files", [1, 3])
def test_a_full_disk_while_drawing_a_report_leaves_no_temporary_file(
        project: Path, monkeypatch: pytest.MonkeyPatch, n_files: int) -> None:
    _invoke(["calibrate", "logs", "-q", "--json"])
    monkeypatch.setattr("analysis.report.build.atomic_write_bytes", _failing_after(n_files))
    result = _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",
                      "--max-timelines", "2"])
    assert result.exit_code == 2, result.output
    assert "No space left" in _one_error_line(result)
    assert not [p for p in project.rglob("*.tmp*")]
    written = list((project / "o" / "report_files").glob("*.png"))
    assert len(written) == n_files - 1  # the figures written before stay, whole
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_a_full_disk_while_redacting_leaves_no_partial_copy(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("replay.redact.archive.atomic_write_bytes", _failing_after(1))
    result = _invoke(["redact", "logs", "--out", "r"])
    assert result.exit_code == 1, result.output
    assert "No space left" in result.output
    assert not [p for p in (project / "r").rglob("*") if p.is_file()]


# --- item 6: identical bytes at two paths are two runs, never merged -------------------------

def _identity_layouts() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(id, [(path, how)]) — paths made from ``logs/a.jsonl`` by copy, hard link or symlink,
    beside it or in a subfolder, drawn from a seeded generator."""
    rng = random.Random(23)
    hows = ["copy", "hardlink", "symlink"]
    for n in (1, 2, 3):
        for _ in range(2):
            made = [(f"{rng.choice(['', 'sub/', 'deep/er/'])}{how}-{i}.jsonl", how)
                    for i, how in enumerate(rng.choices(hows, k=n))]
            yield "+".join(h for _, h in made) + f"-{len(made)}", made


@pytest.mark.parametrize(("case", "made"), list(_identity_layouts()),
                         ids=[c for c, _ in _identity_layouts()])
def test_identical_logs_at_several_paths_are_several_runs(project: Path, case: str,
                                                          made: list[tuple[str, str]]) -> None:
    logs = project / "logs"
    for p in logs.iterdir():
        p.unlink()
    original = logs / "a.jsonl"
    shutil.copy(SMALL[0], original)
    for rel, how in made:
        path = logs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        {"copy": lambda p: shutil.copy(original, p), "hardlink": lambda p: os.link(original, p),
         "symlink": lambda p: p.symlink_to(original)}[how](path)
    paths = sorted(["a.jsonl", *(rel for rel, _ in made)])
    rows = _run_json(["run", "logs", "-p", "none", "-q", "--out", "o"])
    assert sorted(str(r["run"]).split(" — ")[0] for r in rows) == paths  # one run per path
    stored = json.loads((project / "o" / "summary.json").read_text())["runs"]
    assert len({r["run_id"] for r in stored}) == len(paths)
    assert len({r["tokens_sent"] for r in rows}) == 1  # each its own full figures
    assert _invoke(["check", "logs", "-p", "none", "--baseline", "b.json", "--update-baseline",
                    "-q"]).exit_code == 0
    runs = json.loads((project / "b.json").read_text())["runs"]
    assert sorted(runs) == paths
    # a later edit of one file changes that run only: never a false regression on the others
    victim = logs / "a.jsonl"
    victim.unlink()  # a hard link or symlink to it keeps the old bytes / dangles: a new file
    shutil.copy(SMALL[1], victim)
    result = _invoke(["check", "logs", "-p", "none", "--baseline", "b.json", "-q"])
    assert result.exit_code == 0, result.output  # no false regression on the other copies
    changed = {"a.jsonl", *(rel for rel, how in made if how == "symlink")}
    same = len(paths) - len(changed)
    assert f"PASS — {same} run{'' if same == 1 else 's'} ×" in result.output, result.output
    assert f"{len(changed)} changed log" in result.output
