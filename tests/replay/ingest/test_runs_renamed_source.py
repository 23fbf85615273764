"""``replay runs`` and ``replay run`` agree on a dataset whose manifest names a log other than
its runs' ``source`` (the manifest edited by hand): ``runs`` looked each run's entry up by the
run's own source, called it "not in the manifest" and said a replay of it fails (exit 1),
while ``replay run`` replayed it. Each run's entry is the manifest entry that holds it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.batch import ingest
from replay.ingest.run_listing import run_listing
from replay.ingest.store import coverage_lines, entry_file

LOGS = Path(__file__).resolve().parents[3] / "logs"
runner = CliRunner()


def _renamed(tmp_path: Path) -> tuple[Path, str]:
    """A dataset of two logs, the manifest's name of the first changed by hand; that name."""
    ds = tmp_path / "ds"
    ingest([LOGS / "compacting-session.jsonl", LOGS / "write-heavy.jsonl"], ds)
    path = ds / "manifest.json"
    manifest = json.loads(path.read_text())
    entries = manifest["entries"]
    old = next(s for s in entries if s.endswith("compacting-session.jsonl"))
    new = old.replace("compacting-session", "renamed-by-hand")
    manifest["entries"] = {new if s == old else s: e for s, e in entries.items()}
    path.write_text(json.dumps(manifest))
    return ds, new


def _run_is_replayed(ds: Path, tmp_path: Path) -> int:
    return runner.invoke(app, ["run", str(ds), "-p", "none", "--out", str(tmp_path / "o"),
                               "-q"]).exit_code


def test_an_entry_the_manifest_names_otherwise_is_listed_as_there(tmp_path: Path) -> None:
    ds, new = _renamed(tmp_path)
    assert _run_is_replayed(ds, tmp_path) == 0
    listed = run_listing(ds)
    assert listed["entry"].to_pylist() == ["ok"] * listed.num_rows == ["ok", "ok"]
    # the runs are named by the manifest (the name they were parsed under beside it); the
    # coverage is their entry's
    assert sorted(Path(s).name for s in listed["source"].to_pylist()) == [
        "renamed-by-hand.jsonl", "write-heavy.jsonl"]
    assert sorted(Path(s).name for s in listed["stored_source"].to_pylist()) == [
        "compacting-session.jsonl", "write-heavy.jsonl"]
    by_source = dict(zip(listed["source"].to_pylist(), listed["coverage"].to_pylist()))
    assert by_source[new] == coverage_lines(ds)[new]
    done = runner.invoke(app, ["runs", str(ds)])
    assert done.exit_code == 0, done.output
    assert "not in the manifest" not in done.output and "fails" not in done.output


def test_its_entry_gone_both_say_it_fails(tmp_path: Path) -> None:
    ds, new = _renamed(tmp_path)
    entry_file(ds, json.loads((ds / "manifest.json").read_text())["entries"][new]["key"]
               ).unlink()
    assert _run_is_replayed(ds, tmp_path) == 1
    done = runner.invoke(app, ["runs", str(ds)])
    text = " ".join(done.output.split())
    assert done.exit_code == 1 and "renamed-by-hand.jsonl: missing" in text, text
    assert sorted(run_listing(ds)["entry"].to_pylist()) == ["missing", "ok"]
