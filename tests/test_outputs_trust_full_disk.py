"""A full disk keeps what was computed and leaves no temporary file (issue 23, item 23): the sweep
cache, a report's figures and redacted copies, written on a disk that fills at the n-th file;
and a block of work that fails leaves no empty folder it made.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from replay import atomic_files
from tests.outputs_project import AXIS, SMALL, _invoke, _one_error_line, _sweep


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
    result = _invoke(["report", "logs", "-p", "none", "--out", "o", "-q",  # 5 figures, no
                      "--max-timelines", "0"])  # timeline: the disk fills at the 1st or 3rd
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


@pytest.mark.parametrize("fails", [True, False])
def test_a_failed_block_removes_the_empty_folders_it_made_and_only_those(tmp_path: Path,
                                                                        fails: bool) -> None:
    """``no_new_folder_left_on_failure``: the folders made inside it (a named folder with its
    parents, folders below it, one made by a write) go again when it fails, unless a file was
    kept in one; folders that were there before stay, and so does everything when it ends
    well."""
    (tmp_path / "old" / "empty").mkdir(parents=True)
    made = [tmp_path / "a" / "b" / "c" / "traces", tmp_path / "old" / "new" / "sub",
            tmp_path / "old" / "empty" / "x"]
    try:
        with atomic_files.no_new_folder_left_on_failure():
            atomic_files.make_output_dir(tmp_path / "a" / "b", "c", "traces")
            atomic_files.make_output_dir(tmp_path / "old", "new", "sub")
            atomic_files.atomic_write_bytes(tmp_path / "old" / "kept" / "f", b"1",
                                            within=tmp_path / "old")
            with atomic_files.folder_fd(tmp_path / "old" / "empty", ("x",)):
                pass
            assert all(p.is_dir() for p in made)
            if fails:
                raise OSError("a damaged entry met after the folders were made")
    except OSError:
        assert fails
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    if fails:
        assert left == ["old", "old/empty", "old/kept", "old/kept/f"]
    else:
        assert all(p.is_dir() for p in made) and (tmp_path / "old" / "kept" / "f").is_file()


def test_a_failed_block_never_removes_a_folder_through_a_parent_swapped_for_a_symlink(
        tmp_path: Path) -> None:
    """A folder made below the named one is removed only where it was made, found again one
    folder at a time without following a symlink: when its parent is renamed and a symlink to
    another folder put in its place before the block fails, the symlink's target, which holds an
    empty folder of the same name, is left alone (and so is the symlink); the folders made that
    can still be reached so go."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "traces").mkdir(parents=True)
    named = tmp_path / "out"
    with pytest.raises(OSError, match="damaged"), atomic_files.no_new_folder_left_on_failure():
        atomic_files.make_output_dir(named, "policy", "traces")
        atomic_files.make_output_dir(named, "other", "deep")
        (named / "policy").rename(named / "moved")
        (named / "policy").symlink_to(elsewhere, target_is_directory=True)
        raise OSError("a damaged entry met after the folders were made")
    assert (elsewhere / "traces").is_dir()
    assert (named / "policy").is_symlink()
    assert not (named / "other").exists()
