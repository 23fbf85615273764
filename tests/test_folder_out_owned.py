"""``replay report --out DIR``, ``replay sweep --out DIR`` (its ``DIR/sweep``) and ``replay run --report`` overwrite
only files of their fixed names that such a command wrote (``replay.output_targets``
``foreign_files``: ``report_owned``, ``analysis.sweep.to_files.sweep_owned``): a user's own
``report.md``, ``sweep.csv``, a plot of a plot's name, is refused (exit 2, one line naming the
folder and the files, nothing written); the command's own folder is written again, also one an
earlier version wrote (its figures had no ``Software`` text)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.sweep.to_files import sweep_owned
from replay.cli import app
from replay.output_targets import OLD_REPORT_FIGURE, foreign_files, png_marked, report_owned

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
LOG = str(REPO / "logs" / "write-heavy.jsonl")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR my own plot"


def _report(out: Path, tmp: Path) -> object:
    return runner.invoke(app, ["report", LOG, "-p", "none", "--out", str(out), "-q",
                               "--cache-dir", str(tmp / "cache")])


def _sweep(out: Path, tmp: Path, *plots: str) -> object:
    return runner.invoke(app, ["sweep", LOG, "-p", "two-tier-corrected", "--axis",
                               "tiers.1.trigger.at_tokens=60000,80000", "--best",
                               "overshoots_n<=1000", "--jobs", "1", "-q", *plots, "--out",
                               str(out), "--cache-dir", str(tmp / "cache")])


def _run_report(out: Path, tmp: Path) -> object:
    return runner.invoke(app, ["run", LOG, "-p", "none", "--report", "--out", str(out), "-q",
                               "--cache-dir", str(tmp / "cache")])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


def _refused(result: object, out: Path, before: dict[str, bytes], *names: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    line = output.strip().replace("\n", " ")
    assert "did not write" in line and "Nothing was written" in line, output
    assert all(n in line for n in names), output
    assert _files(out) == before


@pytest.mark.parametrize(("command", "planted", "content"), [
    (_report, "report.md", b"# my notes\n"),
    (_report, "report.html", b"<html>mine</html>"),
    (_report, "report_files/chart.png", PNG),  # (a report removes other .png there)
    (_run_report, "report.md", b"# my notes\n"),
    (_run_report, "report_files/old.png", PNG),
    (_sweep, "sweep/sweep.csv", b"a,b\n1,2\n"),
    (_sweep, "sweep/sweep.parquet", b"PAR1 mine PAR1"),
    (_sweep, "sweep/settings.json", b'{"a": 1}'),
    (_sweep, "sweep/chosen.yaml", b"name: mine\n"),
    (_sweep, "sweep/pareto_overshoots_n_vs_tokens_sent.png", PNG),
])
def test_a_users_own_file_is_not_overwritten(tmp_path: Path, command: object, planted: str,
                                             content: bytes) -> None:
    out = tmp_path / "mine"
    (out / planted).parent.mkdir(parents=True, exist_ok=True)
    (out / planted).write_bytes(content)
    (out / "notes.txt").write_text("other names stay")
    _refused(command(out, tmp_path), out, _files(out), str(out),  # type: ignore[operator]
             Path(planted).name)


def test_up_to_three_files_are_named(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    (out / "report_files").mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (out / "report_files" / f"{name}.png").write_bytes(PNG)
    (out / "report.md").write_text("mine\n")
    result = _report(out, tmp_path)
    _refused(result, out, _files(out), "report.md", "report_files/a.png", "report_files/b.png",
             "and 2 more")


def test_a_new_or_empty_folder_and_the_commands_own_are_written(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    for command, out in ((_report, tmp_path / "r"), (_sweep, tmp_path / "s"),
                         (_run_report, tmp_path / "o")):
        for _ in range(2):  # again into its own output
            result = command(out, tmp_path)  # type: ignore[operator]
            assert result.exit_code in (0, 1), result.output
            assert "did not write" not in result.output
    assert (tmp_path / "r" / "report.md").is_file() and (tmp_path / "o" / "report.html").is_file()
    assert (tmp_path / "s" / "sweep" / "chosen.yaml").is_file()
    assert list((tmp_path / "s" / "sweep").glob("pareto_*.png"))
    assert foreign_files(tmp_path / "r", report_owned(tmp_path / "r")) == []
    assert foreign_files(tmp_path / "s" / "sweep", sweep_owned(tmp_path / "s" / "sweep")) == []


def test_an_earlier_versions_figures_are_replaced(tmp_path: Path) -> None:
    """Figures drawn before they carried ``Software``: known as ours beside a report or sweep
    table of ours (alone, an unmarked PNG is not)."""
    for command, out, pattern in ((_report, tmp_path / "r", "report_files/*.png"),
                                  (_sweep, tmp_path / "s", "sweep/*.png")):
        assert command(out, tmp_path).exit_code in (0, 1)  # type: ignore[operator]
        for png in out.glob(pattern):
            png.write_bytes(png.read_bytes().replace(b"tEXtSoftware\x00ctxreplay",
                                                     b"tEXtSoftwarX\x00ctxreplay"))
        assert command(out, tmp_path).exit_code in (0, 1)  # type: ignore[operator]
        alone = tmp_path / f"alone-{out.name}"
        shutil.copytree(out, alone)
        for path in alone.rglob("*"):
            if path.is_file() and path.suffix != ".png":
                path.unlink()
        for png in alone.glob(pattern):
            png.write_bytes(png.read_bytes().replace(b"tEXtSoftware", b"tEXtSoftwarX"))
        owned = report_owned(alone) if out.name == "r" else sweep_owned(alone / "sweep")
        folder = alone if out.name == "r" else alone / "sweep"
        assert len(foreign_files(folder, owned)) == len(list(alone.glob(pattern))) > 0


def test_a_picture_beside_an_earlier_versions_report_is_refused_not_removed(
        tmp_path: Path) -> None:
    """Beside a report of before figures were marked, every PNG in report_files/ was taken as
    that report's: a picture of the user's there was removed as a stale figure, exit 0.  Only
    the names such a report drew are its own; another is refused, left as it is."""
    out = tmp_path / "r"
    assert _report(out, tmp_path).exit_code in (0, 1)  # type: ignore[attr-defined]
    drawn = sorted(out.glob("report_files/*.png"))
    assert drawn and all(OLD_REPORT_FIGURE.fullmatch(p.name) for p in drawn)  # every name
    for png in drawn:  # as an earlier version drew them: unmarked
        png.write_bytes(png.read_bytes().replace(b"tEXtSoftware", b"tEXtSoftwarX"))
    (out / "report_files" / "holiday.png").write_bytes(PNG)
    _refused(_report(out, tmp_path), out, _files(out), "report_files/holiday.png")
    (out / "report_files" / "holiday.png").unlink()
    assert _report(out, tmp_path).exit_code in (0, 1)  # type: ignore[attr-defined]
    assert all(png_marked(p) for p in out.glob("report_files/*.png"))


def _run(out: Path, tmp: Path) -> object:
    return runner.invoke(app, ["run", LOG, "-p", "none", "--out", str(out), "-q",
                               "--cache-dir", str(tmp / "cache")])


@pytest.mark.parametrize(("command", "planted"), [
    (_run, "summary.json"), (_run, "traces/requests.parquet"), (_report, "report.html"),
    (_report, "report.md"), (_run_report, "report.md"), (_sweep, "sweep/sweep.csv"),
    (_sweep, "sweep/chosen.yaml"),
])
def test_a_folder_at_a_files_name_is_refused_before_any_work(tmp_path: Path, command: object,
                                                             planted: str) -> None:
    """A folder of the user's at a file's fixed name (o/summary.json/, o/report.html/) was left
    to the write, which refused it after the work: 'replay run --out o' wrote o/traces/*.parquet
    and then stopped on summary.json (exit 2, a run folder with traces and no summary), a report
    drew its figures first.  Now refused with the other names, before anything is written."""
    out = tmp_path / "mine"
    (out / planted).mkdir(parents=True)
    (out / planted / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    result = command(out, tmp_path)  # type: ignore[operator]
    _refused(result, out, _files(out), str(out), Path(planted).name)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before
