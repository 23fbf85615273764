"""A file that fails at ingest is recorded in the dataset's manifest (``failed``: source ->
why, ``replay.ingest.failed_inputs``), and every command that opens the dataset as it is says
so: `replay ingest logs/ --out ds` reported the failure (exit 1), but `replay run ds` then
replayed the other files without a word, its totals silently lacking the file.  A later
ingest that reads the file forgets it; a store of inputs that all ingest has no record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

_ODD = "b\x1b[31m.jsonl"
"""A failing file's name with a terminal escape: said escaped, as every name from the disk."""
_UNKNOWN = "unknown format (no parser recognised it"


def _cli(*args: str) -> tuple[int, str, str]:
    got = CliRunner().invoke(app, list(args))
    return got.exit_code, got.stdout, " ".join(got.stderr.split())


def _logs(folder: Path, samples: Path) -> Path:
    """Two real logs and two that fail (text that is no log, one named with an escape)."""
    logs = folder / "logs"
    logs.mkdir()
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(samples / "claude-code" / name, logs / name)
    (logs / "bad.jsonl").write_text("garbage\n")
    (logs / _ODD).write_text("not a log either\n")
    return logs


def test_a_dataset_says_the_files_that_failed_at_its_ingest(samples: Path,
                                                            tmp_path: Path) -> None:
    logs, ds = _logs(tmp_path, samples), tmp_path / "ds"
    code, _, err = _cli("ingest", str(logs), "--out", str(ds), "-q")
    assert code == 1 and "inputs: 2 of 4 files failed" in err, err
    recorded = json.loads((ds / "manifest.json").read_text())["failed"]
    assert sorted(recorded) == ["b\x1b[31m.jsonl", "bad.jsonl"]  # the files made to fail
    assert all(why.startswith(_UNKNOWN) for why in recorded.values()), recorded
    said = (f"warning: 2 input files failed at ingest (b\\x1b[31m.jsonl: {_UNKNOWN}")
    run = ["run", str(ds), "-p", "none", "-q", "--out", str(tmp_path / "o"),
           "--cache-dir", str(tmp_path / "c")]
    code, _, err = _cli(*run)
    assert code == 0, err
    assert said in err and f"; bad.jsonl: {_UNKNOWN}" in err and "\x1b" not in err, err
    assert "): the dataset lacks their runs; `replay ingest` of the logs once fixed adds them" \
        in err
    code, _, err = _cli(*run, "--strict")
    assert code == 1 and said in err, err
    assert "inputs: 2 of 4 files failed (b\\x1b[31m.jsonl, bad.jsonl)" in err, err
    code, out, err = _cli("runs", str(ds))
    assert code == 0 and said in err and "short.jsonl" in out, err
    code, _, err = _cli("diff", str(ds), "-p", "none", "-p", "cline", "-q", "--strict",
                        "--cache-dir", str(tmp_path / "c"))
    assert code == 1 and said in err, err
    code, _, err = _cli("report", str(ds), "-p", "none", "-q", "--out", str(tmp_path / "r"),
                        "--cache-dir", str(tmp_path / "c"), "--max-timelines", "0")
    assert code == 0, err
    for name in ("report.md", "report.html"):  # read by people who never saw the warning
        text = (tmp_path / "r" / name).read_text()
        assert "\x1b" not in text, name
        assert "Inputs: 2 input files failed at ingest (b" in text.replace("\\", ""), name


def test_an_ingest_that_reads_the_file_forgets_it(samples: Path, tmp_path: Path) -> None:
    """Fixed and ingested again, a file's record goes (one not given keeps its own), and the
    manifest is then byte for byte that of a dataset where nothing ever failed."""
    logs, ds = _logs(tmp_path, samples), tmp_path / "ds"
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 1
    for name, sample in (("bad.jsonl", "short.jsonl"), (_ODD, "tool_heavy.jsonl")):
        (logs / name).write_text((samples / "claude-code" / sample).read_text() + "\n")
    code, _, err = _cli("ingest", str(logs / "bad.jsonl"), "--out", str(ds), "-q")
    assert code == 0, err
    doc = json.loads((ds / "manifest.json").read_text())
    assert list(doc["failed"]) == [_ODD] and "bad.jsonl" in doc["entries"]
    code, _, err = _cli("ingest", str(logs), "--out", str(ds), "-q")
    assert code == 0, err
    assert "failed" not in json.loads((ds / "manifest.json").read_text())
    fresh = tmp_path / "fresh"
    assert _cli("ingest", str(logs), "--out", str(fresh), "-q")[0] == 0
    assert (ds / "manifest.json").read_bytes() == (fresh / "manifest.json").read_bytes()
    code, _, err = _cli("run", str(ds), "-p", "none", "-q", "--strict", "--out",
                        str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"))
    assert code == 0 and "failed" not in err, err


def test_a_file_that_fails_again_is_said_held_as_ingested_before(samples: Path,
                                                                 tmp_path: Path) -> None:
    """A file that fails keeps the entry of its version ingested before: the dataset holds
    that version, and says so."""
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(samples / "claude-code" / "short.jsonl", logs / "s.jsonl")
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 0
    (logs / "s.jsonl").write_text("garbage\n")
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 1
    code, _, err = _cli("run", str(ds), "-p", "none", "-q", "--out", str(tmp_path / "o"),
                        "--cache-dir", str(tmp_path / "c"))
    assert code == 0, err
    assert (f"warning: 1 input file failed at ingest (s.jsonl: {_UNKNOWN}") in err
    assert ("): the dataset lacks its runs (of s.jsonl it holds the version ingested before); "
            "`replay ingest` of the log once fixed adds them") in err, err


def test_a_file_refused_by_strict_is_recorded_so(samples: Path, tmp_path: Path) -> None:
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    data = (samples / "claude-code" / "short.jsonl").read_bytes()
    (logs / "s.jsonl").write_bytes(data + b'{"type":"assistant","uuid":"zz\n')
    assert _cli("ingest", str(logs), "--out", str(ds), "-q", "--strict")[0] == 1
    line = data.count(b"\n") + 1  # the truncated line's number
    why = json.loads((ds / "manifest.json").read_text())["failed"]["s.jsonl"]
    assert why.startswith(f"under --strict, line {line}: malformed JSON"), why


@pytest.mark.parametrize("failed", ['["s.jsonl"]', '{"s.jsonl": 3}', '{"": "x"}'])
def test_a_crafted_record_is_a_damaged_dataset(samples: Path, tmp_path: Path,
                                               failed: str) -> None:
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(samples / "claude-code" / "short.jsonl", logs / "s.jsonl")
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 0
    text = (ds / "manifest.json").read_text()
    (ds / "manifest.json").write_text(text[:text.rindex("}")] + f', "failed": {failed}}}')
    code, _, err = _cli("run", str(ds), "-p", "none", "-q", "--out", str(tmp_path / "o"),
                        "--cache-dir", str(tmp_path / "c"))
    assert code == 1 and "corrupt manifest (failed is not {source: reason})" in err, err


def test_a_failed_file_kept_with_a_stored_issue_is_counted_once(samples: Path,
                                                                tmp_path: Path) -> None:
    """A file whose version ingested before had an issue, then failing: --strict fails it for
    both, and counts it once."""
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    data = (samples / "claude-code" / "short.jsonl").read_bytes()
    (logs / "s.jsonl").write_bytes(data + b'{"type":"assistant","uuid":"zz\n')
    shutil.copy(samples / "claude-code" / "tool_heavy.jsonl", logs / "t.jsonl")
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 0
    (logs / "s.jsonl").write_text("garbage\n")
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 1
    code, _, err = _cli("run", str(ds), "-p", "none", "-q", "--strict", "--out",
                        str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"))
    assert code == 1, err
    assert "inputs: 1 of 2 files failed (s.jsonl); 1 issue; --strict" in err, err
