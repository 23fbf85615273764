"""A file renamed in the dataset's manifest by hand is still taken by its old name where a
user names it: ``--run OLD`` (diff, report) selects its runs when no run has that name now and
it was one file's, and says the new name; a baseline keyed by the old name still compares its
runs (``analysis.check.renamed``), and says so.  ``--run OLD`` ended in "names no replayable
run" (exit 2), and the check held the run as a "missing run" and a "new run", not compared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.batch import ingest

LOGS = Path(__file__).resolve().parents[3] / "logs"
OLD, NEW = "compacting-session.jsonl", "renamed-by-hand.jsonl"
runner = CliRunner()


def _rename(ds: Path, rename: dict[str, str]) -> None:
    path = ds / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["entries"] = {rename.get(s, s): e for s, e in manifest["entries"].items()}
    path.write_text(json.dumps(manifest))


def _dataset(tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    ingest([LOGS / OLD, LOGS / "write-heavy.jsonl"], ds)
    return ds


def _invoke(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def _diff_runs(ds: Path, *run: str) -> tuple[set[str], str]:
    done = _invoke("diff", str(ds), "-q", "-p", "none", "-p", "two-tier-corrected",
                   *(a for r in run for a in ("--run", r)), "--json")
    rows = json.loads(done.stdout)["rows"]
    return {r["run"].split(" — ")[0] for r in rows if r["scope"] == "run"}, \
        " ".join(done.stderr.split())


def test_run_takes_a_renamed_files_old_name_and_says_the_new(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    _rename(ds, {OLD: NEW})
    shown, said = _diff_runs(ds, OLD)
    assert shown == {NEW}  # the run of that file only, named by the manifest
    assert f"note: --run '{OLD}': the name its file was ingested under; the dataset's " \
           f"manifest now names it '{NEW}'" in said
    shown, said = _diff_runs(ds, NEW)  # the present name: as before, nothing said
    assert shown == {NEW} and "--run" not in said
    # traces read back take it alike
    out = {p: tmp_path / p for p in ("a", "b")}
    for name, policy in (("a", "none"), ("b", "two-tier-corrected")):
        _invoke("run", str(ds), "-p", policy, "--out", str(out[name]), "-q")
    done = _invoke("diff", "--traces", str(out["a"]), str(out["b"]), "--data", str(ds),
                   "--run", OLD, "--json")
    assert {r["run"].split(" — ")[0] for r in json.loads(done.stdout)["rows"]
            if r["scope"] == "run"} == {NEW}
    assert f"manifest now names it '{NEW}'" in " ".join(done.stderr.split())


def test_a_present_name_wins_and_an_old_name_of_two_files_is_refused(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    _rename(ds, {OLD: "one.jsonl"})
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(LOGS / "test-fix-loop.jsonl", other / OLD)  # another file of the old name
    ingest([other / OLD], ds)
    shown, said = _diff_runs(ds, OLD)
    assert shown == {OLD} and "--run" not in said  # the file named so now, not the renamed one
    _rename(ds, {OLD: "two.jsonl"})
    done = _invoke("diff", str(ds), "-q", "-p", "none", "-p", "two-tier-corrected", "--run",
                   OLD, code=2)
    said = " ".join(done.output.split())
    assert f"--run '{OLD}' names no run by its present name, and was the name of 2 files now " \
           "named one.jsonl, two.jsonl in the manifest" in said


def test_a_baseline_keyed_by_the_old_name_still_compares_the_run(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    baseline = tmp_path / "b.json"
    _invoke("check", str(ds), "-p", "none", "--baseline", str(baseline), "--update-baseline",
            "-q")
    _rename(ds, {OLD: NEW})
    done = _invoke("check", str(ds), "-p", "none", "--baseline", str(baseline), "-q", "--json")
    got = json.loads(done.stdout)
    assert got["verdict"].startswith("check: PASS — 2 runs × 1 policy"), got["verdict"]
    assert not any("missing run" in n or "new run" in n for n in got["notes"]), got["notes"]
    assert any(f"compared with the baseline's runs of their old name ({OLD} → {NEW})" in n
               for n in got["notes"]), got["notes"]
    # updated, the baseline keys it by the manifest's name; checked again, nothing is said
    _invoke("check", str(ds), "-p", "none", "--baseline", str(baseline), "--update-baseline",
            "-q")
    assert NEW in json.loads(baseline.read_text())["runs"]
    got = json.loads(_invoke("check", str(ds), "-p", "none", "--baseline", str(baseline), "-q",
                             "--json").stdout)
    assert not any("old name" in n for n in got["notes"]), got["notes"]
