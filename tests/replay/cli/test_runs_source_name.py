"""Every command names a run by the manifest's name of its file (``replay.ingest.source_name``),
also after the manifest was edited by hand: ``replay runs`` named it by the name stored when
the file was parsed while ``runs``' own entry note and ``replay run``'s errors used the
manifest's.  ``runs`` keeps the stored name as ``stored_source`` only when some differ, and
says so; a name from disk reaches the terminal escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.batch import ingest

LOGS = Path(__file__).resolve().parents[3] / "logs"
HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\u202etxt.lnosj"
"""A manifest name with an OSC title, a screen clear, a bell and a bidi override."""
runner = CliRunner()


def _dataset(tmp_path: Path, rename: dict[str, str]) -> Path:
    """Two logs ingested, the manifest's names of some changed by hand (old file name → new)."""
    ds = tmp_path / "ds"
    ingest([LOGS / "compacting-session.jsonl", LOGS / "write-heavy.jsonl"], ds)
    path = ds / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["entries"] = {rename.get(s, s): e for s, e in manifest["entries"].items()}
    path.write_text(json.dumps(manifest))
    return ds


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _rows(*args: str) -> dict[str, dict[str, Any]]:
    """run id → its row of a command's --json."""
    rows = json.loads(_invoke(*args, "--json").stdout)
    return {r["run_id"]: r for r in rows}


def _both(ds: Path, tmp_path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    return _rows("runs", str(ds)), _rows("run", str(ds), "-p", "none", "-q",
                                         "--out", str(tmp_path / "o"))


def test_a_renamed_entry_is_named_by_the_manifest_everywhere(tmp_path: Path) -> None:
    new = "renamed-by-hand.jsonl"
    ds = _dataset(tmp_path, {"compacting-session.jsonl": new})
    listed, replayed = _both(ds, tmp_path)
    assert listed.keys() == replayed.keys() and len(listed) == 2
    for rid, row in listed.items():
        assert (row["source"], row["run"]) == (replayed[rid]["source"], replayed[rid]["run"])
    by_source = {r["source"]: r for r in listed.values()}
    assert sorted(by_source) == [new, "write-heavy.jsonl"]
    assert by_source[new]["run"].startswith(new + " — ")
    assert by_source[new]["stored_source"] == "compacting-session.jsonl"
    assert by_source["write-heavy.jsonl"]["stored_source"] == "write-heavy.jsonl"
    done = _invoke("runs", str(ds))
    table = done.stdout
    assert new in table and "compacting-session" not in table
    note = " ".join(done.stderr.split())
    assert "1 run(s) of 1 file(s)" in note and f"compacting-session.jsonl → {new}" in note
    # diff --run takes the manifest's name and labels the run as runs does
    diff = json.loads(_invoke("diff", str(ds), "-q", "-p", "none", "-p", "two-tier-corrected",
                              "--run", new, "--json").stdout)
    per_run = [r for r in diff["rows"] if r["scope"] == "run"]
    assert per_run and {(r["run_id"], r["run"]) for r in per_run} == {
        (rid, row["run"]) for rid, row in listed.items() if row["source"] == new}


def test_no_stored_source_when_no_name_differs(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, {})
    listed, replayed = _both(ds, tmp_path)
    assert all("stored_source" not in r for r in listed.values())
    assert {r["source"] for r in listed.values()} == {"compacting-session.jsonl",
                                                      "write-heavy.jsonl"}
    assert all(r["run"] == replayed[rid]["run"] for rid, r in listed.items())
    assert "manifest's name" not in _invoke("runs", str(ds)).stderr


def test_a_hostile_manifest_name_is_the_same_name_and_never_raw_on_screen(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, {"compacting-session.jsonl": HOSTILE})
    listed, replayed = _both(ds, tmp_path)
    hostile = [rid for rid, r in listed.items() if r["source"] == HOSTILE]
    assert len(hostile) == 1
    rid = hostile[0]
    assert replayed[rid]["source"] == HOSTILE and replayed[rid]["run"] == listed[rid]["run"]
    assert listed[rid]["run"].startswith(HOSTILE)
    for args in (["runs", str(ds)], ["runs", str(ds), "--wide"]):
        done = _invoke(*args)
        shown = done.stdout + done.stderr
        assert not any(c in shown for c in "\x1b\x07\u202e"), repr(shown)
        assert "\\x1b]0;pwned\\x07" in shown and "\\u202e" in shown
    done = _invoke("run", str(ds), "-p", "none", "--out", str(tmp_path / "t"))
    assert not any(c in done.stdout + done.stderr for c in "\x1b\x07\u202e")
