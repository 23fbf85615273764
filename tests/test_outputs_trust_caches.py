"""Cache entries carry a checksum and the key they answer (issue 23, items 7–8): every way of
damaging a store entry or a sweep cache file, drawn by a seeded generator, is found, said, and
computed again, with the same figures.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.outputs_project import (
    AXIS,
    REPO,
    _invoke,
    _one_error_line,
    _run_json,
    _sweep,
    new_project,
)


def _damages(seed: int) -> Iterator[tuple[str, Callable[[Path], None]]]:
    """Ways a store's entries get damaged, each drawn with ``seed`` (which entry, where cut)."""
    rng = random.Random(seed)

    def entries(ds: Path) -> list[Path]:  # one Parquet file an entry
        return sorted(p for p in (ds / "data").iterdir() if p.is_file())

    def truncate(ds: Path) -> None:
        f = rng.choice(entries(ds))
        f.write_bytes(f.read_bytes()[:rng.randrange(0, f.stat().st_size)])

    def swap_entries(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        a.rename(ds / "tmp")
        b.rename(a)
        (ds / "tmp").rename(b)

    def copy_over(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        shutil.copy(a, b)

    def flip_byte(ds: Path) -> None:
        f = rng.choice(entries(ds))
        data = bytearray(f.read_bytes())
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        f.write_bytes(bytes(data))

    def remove_file(ds: Path) -> None:
        rng.choice(entries(ds)).unlink()

    def symlinked_entry(ds: Path) -> None:
        a, b = rng.sample(entries(ds), 2)
        b.unlink()
        b.symlink_to(a)

    yield from [("truncate", truncate), ("swap entries", swap_entries),
                ("copy one over another", copy_over), ("flip a bit", flip_byte),
                ("remove a file", remove_file), ("symlinked entry", symlinked_entry)]


@pytest.fixture(scope="session")
def ran_project(tmp_path_factory: pytest.TempPathFactory,
                ) -> tuple[Path, list[dict[str, object]]]:
    """A project with the first four scenario logs after ``run -p none --out a`` (which
    ingested them into the project cache), and that run's rows: made once per worker, copied
    by each test (``new_project``)."""
    with new_project(tmp_path_factory.mktemp("ran-project") / "project") as folder:
        for log in sorted((REPO / "logs" / "scenarios").glob("*.jsonl"))[:4]:
            shutil.copy(log, folder / "logs" / log.name)
        clean = _run_json(["run", "logs", "-p", "none", "-q", "--out", "a"])
    return folder, clean


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("damage", [name for name, _ in _damages(0)])
def test_a_damaged_store_entry_is_parsed_again_with_a_line_and_the_same_figures(
        project: Path, ran_project: tuple[Path, list[dict[str, object]]], damage: str,
        seed: int) -> None:
    ran, clean = ran_project
    shutil.copytree(ran, project, symlinks=True, dirs_exist_ok=True)
    dict(_damages(seed))[damage](project / ".ctxreplay" / "dataset")
    result = _invoke(["run", "logs", "-p", "none", "-q", "--out", "b", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == clean  # no wrong number
    assert "parsed again" in result.output
    again = _invoke(["ingest", "logs", "--out", ".ctxreplay/dataset", "--json"])
    assert json.loads(again.stdout)["repaired"] == []  # the first command repaired it


@pytest.fixture(scope="session")
def ingested_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the first three scenario logs ingested into the dataset ``ds``: made
    once per worker, copied by each test (``new_project``)."""
    with new_project(tmp_path_factory.mktemp("ingested-project") / "project") as folder:
        for log in sorted((REPO / "logs" / "scenarios").glob("*.jsonl"))[:3]:
            shutil.copy(log, folder / "logs" / log.name)
        assert _invoke(["ingest", "logs", "--out", "ds", "-q"]).exit_code == 0
    return folder


@pytest.mark.parametrize("damage", [name for name, _ in _damages(0)])
def test_a_dataset_given_directly_with_a_damaged_entry_is_refused_in_one_line(
        project: Path, ingested_project: Path, damage: str) -> None:
    shutil.copytree(ingested_project, project, symlinks=True, dirs_exist_ok=True)
    dict(_damages(3))[damage](project / "ds")
    result = _invoke(["run", "ds", "-p", "none", "-q", "--out", "o"])
    assert result.exit_code == 1, result.output  # an input that failed, not a usage error
    assert "ingest" in _one_error_line(result)  # says how to repair it
    assert not (project / "o").exists()  # the folder it made is gone again
    repaired = _invoke(["ingest", "logs", "--out", "ds", "--json", "-q"])
    assert len(json.loads(repaired.stdout)["repaired"]) >= 1
    assert _invoke(["run", "ds", "-p", "none", "-q", "--out", "o"]).exit_code == 0


def _cut_to_100_bytes(f: Path) -> None:
    f.write_bytes(f.read_bytes()[:100])


@pytest.mark.parametrize("damage", [Path.unlink, _cut_to_100_bytes], ids=["deleted", "cut"])
@pytest.mark.parametrize("command", [
    ["run", "ds", "-p", "none", "--out", "o"],
    ["run", "ds", "-p", "none", "--report", "--out", "o/deeper"],
    ["report", "ds", "-p", "none", "--out", "o"],
    ["sweep", "ds", "-p", "two-tier-corrected", *AXIS, "--out", "o", "--jobs", "1"],
    ["diff", "ds", "-p", "none", "-p", "claude-code"],
    ["check", "ds", "-p", "none", "--baseline", "o/b.json", "--update-baseline"],
    ["sql", "select count(*) from runs", "ds"],
], ids=["run", "run-report", "report", "sweep", "diff", "check", "sql"])
def test_a_damaged_entry_fails_every_command_as_an_input_leaving_no_folder(
        project: Path, ingested_project: Path, command: list[str],
        damage: Callable[[Path], None]) -> None:
    """One entry of a dataset deleted or cut: every command that reads the entries exits 1 (an
    input failed), names the entry's file and its log in one line, and leaves nothing of its
    own behind (its --out, the project cache's sweep_cache)."""
    shutil.copytree(ingested_project, project, symlinks=True, dirs_exist_ok=True)
    manifest = json.loads((project / "ds" / "manifest.json").read_text())["entries"]
    source, entry = sorted(manifest.items())[1]  # the middle one of three: one read before it
    damage(project / "ds" / "data" / f"{entry['key']}.parquet")
    before = sorted(project.rglob("*"))
    result = _invoke([*command, "-q"] if command[0] != "sql" else command)
    assert result.exit_code == 1, result.output
    line = _one_error_line(result).replace("\n", "")
    assert entry["key"] in line and source in line, line
    assert sorted(project.rglob("*")) == before


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


def test_a_sweep_cache_file_planted_as_a_symlink_is_not_followed_and_loses_nothing(
        project: Path, swept_project: tuple[Path, dict[str, object], list[dict[str, object]]],
        ) -> None:
    """A symlink at a cache file's name (to the very file, elsewhere) was read through and its
    rows reused; and where a file had to be rewritten, the refusal to write through the link
    ended the sweep with exit 2, every row computed lost.  Now the link is a damaged file
    (dropped, rows replayed, said) and the rows it cannot take are unwritten (said), exit 0,
    the table complete; the file it points at is untouched."""
    swept, first, clean = swept_project
    shutil.copytree(swept, project, symlinks=True, dirs_exist_ok=True)
    target = min((project / ".ctxreplay" / "sweep_cache").glob("*.parquet"))
    elsewhere = project.parent / "elsewhere.parquet"
    target.rename(elsewhere)
    target.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    again = _sweep()
    assert again["cache_dropped"] == 1 and again["cache_unwritten"] == 1
    assert again["reused"] == first["computed"] - again["settings"]
    assert _sweep_table(project) == clean
    assert target.is_symlink() and elsewhere.read_bytes() == before


@pytest.fixture(scope="session")
def swept_project(tmp_path_factory: pytest.TempPathFactory,
                  ) -> tuple[Path, dict[str, object], list[dict[str, object]]]:
    """A project after its first sweep (``_sweep``), with that sweep's ``--json`` document and
    its table: made once per worker, copied by each test (``new_project``)."""
    with new_project(tmp_path_factory.mktemp("swept-project") / "project") as folder:
        first = _sweep()
        clean = _sweep_table(folder)
    return folder, first, clean


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("damage", [name for name, _ in _sweep_damages(random.Random(0))])
def test_a_damaged_sweep_cache_file_is_dropped_said_and_replayed(
        project: Path, swept_project: tuple[Path, dict[str, object], list[dict[str, object]]],
        damage: str, seed: int) -> None:
    swept, first, clean = swept_project
    shutil.copytree(swept, project, symlinks=True, dirs_exist_ok=True)
    assert first["reused"] == 0 and first["cache_dropped"] == 0
    files = sorted((project / ".ctxreplay" / "sweep_cache").glob("*.parquet"))
    dict(_sweep_damages(random.Random(seed)))[damage](files)
    again = _sweep()
    assert again["cache_dropped"] == 1
    n_settings = again["settings"]
    assert again["computed"] == n_settings and again["reused"] == first["computed"] - n_settings
    assert _sweep_table(project) == clean  # no run twice, none missing, no edited value
    assert _sweep()["cache_dropped"] == 0  # rewritten
