"""Every command's ``--json`` carries what its text output says of its inputs: a line skipped, a
file that failed, a run not replayed for want of a request, a compressed log or a folder link
left out.  They went to stderr only: ``run --json`` printed rows without a trace of the skipped
line, ``runs --json`` had no issue count.  An object-shaped ``--json`` has an ``inputs`` object
(``replay.cli.inputs_said.inputs_doc``: counts and the messages, escaped as JSON does); a list of
rows keeps its shape, each row with ``source_issues_n``, the issues stored for its log file.

The expected counts are made here: the malformed lines planted (counted by reading each line
as JSON), the run with no reply, one compressed log, one folder link."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli import app

_SKIPPED = "sk\x1b[31mipped.jsonl"
"""The file with a malformed line: its name has a terminal escape, escaped in every output."""
_SAID_SKIPPED = "sk\\x1b[31mipped.jsonl"
"""That name as the terminal shows it."""


def _cli(*args: str) -> tuple[int, str, str]:
    got = CliRunner().invoke(app, list(args))
    return got.exit_code, got.stdout, got.stderr


def _doc(stdout: str) -> Any:
    assert "\x1b" not in stdout  # (JSON escapes it: \u001b)
    return json.loads(stdout)


def _malformed(folder: Path) -> dict[str, int]:
    """The independent count: lines of each .jsonl file under ``folder`` that are not JSON."""
    counts = {}
    for path in folder.glob("*.jsonl"):
        bad = 0
        for line in path.read_text().splitlines():
            try:
                json.loads(line)
            except ValueError:
                bad += 1
        counts[path.name] = bad
    return counts


@pytest.fixture(scope="module")
def logs(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """short.jsonl; a copy of it with one malformed line; a prompt with no reply (no request);
    a compressed log and a symlink to a folder (neither read)."""
    root = tmp_path_factory.mktemp("in")
    folder = root / "logs"
    folder.mkdir()
    short = samples / "claude-code" / "short.jsonl"
    shutil.copy(short, folder / "short.jsonl")
    lines = short.read_text().splitlines(keepends=True)
    (folder / _SKIPPED).write_text("".join([*lines[:3], '{"type": "user", "cut\n', *lines[3:]]))
    prompt = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
              "timestamp": "2026-02-10T21:11:56.906Z", "isSidechain": False,
              "message": {"role": "user", "content": "start the server"}}
    (folder / "asked.jsonl").write_text(json.dumps(prompt) + "\n")
    (folder / "old.jsonl.gz").write_bytes(gzip.compress(short.read_bytes()))
    (root / "elsewhere").mkdir()
    (folder / "linked").symlink_to(root / "elsewhere")
    assert _malformed(folder) == {"short.jsonl": 0, _SKIPPED: 1, "asked.jsonl": 0}
    return folder


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _skipped_said(text: str, name: str = _SAID_SKIPPED) -> bool:
    """Whether ``text`` says the planted line was skipped (``name``: the file as shown)."""
    return f"{name}:4: malformed JSON" in text and "(line skipped)" in text


def _inputs_say_the_skipped_line(inputs: dict[str, Any], not_replayed: int | None) -> None:
    assert inputs["issues_n"] == 1  # the one line planted
    assert sum(_skipped_said(m, _SKIPPED) and m.startswith("warning: ")
               for m in inputs["messages"]) == 1
    assert inputs["runs_not_replayed_n"] == not_replayed
    if not_replayed:
        assert any(m.startswith(f"note: {not_replayed} run(s) with no recorded request not "
                                "replayed: asked.jsonl") for m in inputs["messages"])


def test_ingest_json_counts_what_the_walk_and_the_parse_left_out(logs: Path,
                                                                 tmp_path: Path) -> None:
    code, out, err = _cli("ingest", str(logs), "--out", str(tmp_path / "ds"), "-q", "--json")
    assert code == 0, err
    inputs = _doc(out)["inputs"]
    _inputs_say_the_skipped_line(inputs, None)  # (ingest replays nothing: not known, null)
    assert (inputs["files_n"], inputs["files_parsed_n"], inputs["files_failed_n"]) == (3, 3, 0)
    assert inputs["compressed_not_read_n"] == 1 and inputs["symlinks_not_followed_n"] == 1
    messages = " ".join(inputs["messages"])
    assert "1 compressed log file not read" in messages and "old.jsonl.gz" in messages
    assert "1 symlink to a folder not followed" in messages and "linked" in messages
    code, out, err = _cli("ingest", str(logs), "--out", str(tmp_path / "ds"), "-q")
    assert code == 0 and _skipped_said(err), err  # the text says the same
    assert "1 compressed log file not read" in err and "1 symlink to a folder" in err, err


def test_runs_json_rows_count_the_issues_of_their_file(logs: Path, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 0
    code, out, err = _cli("runs", str(ds), "--json")
    assert code == 0, err
    rows = _doc(out)
    assert isinstance(rows, list)
    assert {r["source"]: r["source_issues_n"] for r in rows} == _malformed(logs)
    code, out, err = _cli("runs", str(ds), "--columns", "run,source_issues_n", "--csv")
    assert code == 0 and "source_issues_n" in out.splitlines()[0], err
    assert sorted(line.rsplit(",", 1)[1] for line in out.splitlines()[1:]) == ["0", "0", "1"]


def test_run_json_rows_count_the_issues_and_keep_the_run_not_replayed(logs: Path, cache: Path,
                                                                       tmp_path: Path) -> None:
    args = ["run", str(logs), "-p", "two-tier-corrected", "-q", "--cache-dir", str(cache),
            "--out", str(tmp_path / "o")]
    code, out, err = _cli(*args, "--json")
    assert code == 0, err
    rows = _doc(out)
    assert isinstance(rows, list)  # the shape scripts read
    assert {r["source"]: r["source_issues_n"] for r in rows} == _malformed(logs)
    asked = next(r for r in rows if r["source"] == "asked.jsonl")
    assert asked["note"] == "not replayed: no request" and asked["peak_tokens"] is None
    # summary.json holds the very rows --json printed, the column too (one place makes it)
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["runs"] == rows
    code, out, err = _cli(*args)
    flat = " ".join(err.split())
    assert code == 0 and _skipped_said(flat), err  # the text says both on stderr
    assert "1 run(s) with no recorded request not replayed: asked.jsonl" in flat, err


def test_calibrate_json_rows_and_compactions_object(logs: Path, cache: Path) -> None:
    args = ["calibrate", str(logs), "-q", "--cache-dir", str(cache)]
    code, out, err = _cli(*args, "--json")
    assert code == 0, err
    rows = _doc(out)
    assert isinstance(rows, list)
    assert {r["source"]: r["source_issues_n"] for r in rows} == _malformed(logs)
    # the run with no request is a row (as in `run`): no fit, its figures unknown, not 0
    asked = next(r for r in rows if r["source"] == "asked.jsonl")
    assert (asked["flags"], asked["points"], asked["fit_points"]) == (
        "not replayed: no request", 0, 0)
    assert asked["scale"] is None and asked["held_out_anchored_error"] is None
    note = "1 run(s) with no recorded request not replayed: asked.jsonl"
    assert note in " ".join(err.split()) and note not in out, err  # said on stderr
    code, out, err = _cli(*args)
    assert code == 0 and _skipped_said(err), err
    assert note in " ".join(err.split()), err
    line = next(ln for ln in out.splitlines() if "asked.jsonl" in ln)
    assert "not replayed" in line, out
    code, out, err = _cli(*args, "--compactions", "--json")
    assert code == 0, err
    _inputs_say_the_skipped_line(_doc(out)["inputs"], None)
    assert _skipped_said(_cli(*args, "--compactions")[2])


def test_fidelity_json_has_the_inputs_and_per_run_issues(logs: Path, cache: Path) -> None:
    args = ["fidelity", str(logs), "-q", "--cache-dir", str(cache)]
    code, out, err = _cli(*args, "--json")
    assert code == 0, err
    doc = _doc(out)
    _inputs_say_the_skipped_line(doc["inputs"], None)
    assert {r["run"].split(" ")[0]: r["source_issues_n"] for r in doc["runs"]} == {
        "short.jsonl": 0, _SKIPPED: 1}
    assert _skipped_said(_cli(*args)[2])


def test_check_json_has_the_inputs_both_ways(logs: Path, cache: Path, tmp_path: Path) -> None:
    args = ["check", str(logs), "-p", "none", "-q", "--baseline", str(tmp_path / "b.json"),
            "--cache-dir", str(cache)]
    code, out, err = _cli(*args, "--update-baseline", "--json")
    assert code == 0, err
    _inputs_say_the_skipped_line(_doc(out)["inputs"], 1)
    code, out, err = _cli(*args, "--json")
    assert code == 0, err
    _inputs_say_the_skipped_line(_doc(out)["inputs"], 1)
    code, out, err = _cli(*args)
    assert code == 0 and _skipped_said(" ".join(err.split())), err
    assert "1 run(s) with no recorded request not replayed: asked.jsonl" in " ".join(
        out.split())  # (check's notes follow its verdict on stdout)


def test_sweep_and_diff_json_have_the_inputs(logs: Path, cache: Path, tmp_path: Path) -> None:
    sweep = ["sweep", "-q", str(logs), "-p", "none", "--axis", "server.reserve_tokens=0,4096",
             "--no-plots", "--jobs", "1", "--cache-dir", str(cache), "--out", str(tmp_path)]
    diff = ["diff", "-q", str(logs), "-p", "none", "-p", "observation-masking",
            "--cache-dir", str(cache)]
    for args in (sweep, diff):
        code, out, err = _cli(*args, "--json")
        assert code == 0, err
        doc = _doc(out)
        _inputs_say_the_skipped_line(doc["inputs"], 1)
        assert doc["inputs"]["runs_not_replayed_n"] == len(doc["not_replayed"])
        code, _, err = _cli(*args)
        assert code == 0 and _skipped_said(err), err


def test_a_dataset_opened_as_it_is_says_its_stored_issues_in_json(logs: Path,
                                                                  tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    assert _cli("ingest", str(logs), "--out", str(ds), "-q")[0] == 0
    code, out, err = _cli("diff", "-q", str(ds), "-p", "none", "-p", "observation-masking",
                          "--cache-dir", str(tmp_path / "c"), "--json")
    assert code == 0, err
    inputs = _doc(out)["inputs"]
    _inputs_say_the_skipped_line(inputs, 1)
    # (the dataset's stored issue is at its source name, not the log's path)
    assert (inputs["files_n"], inputs["files_reused_n"], inputs["files_parsed_n"]) == (3, 3, 0)


def test_a_failed_file_is_in_the_json_and_still_exits_1(logs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(logs, folder, symlinks=True)
    (folder / "garbage.jsonl").write_text("garbage\n")
    diff = ["diff", "-q", str(folder), "-p", "none", "-p", "observation-masking",
            "--cache-dir", str(tmp_path / "c")]
    code, out, err = _cli(*diff, "--json")
    assert code == 1, err
    inputs = _doc(out)["inputs"]
    assert inputs["files_failed_n"] == 1 and inputs["files_failed"] == ["garbage.jsonl"]
    summary = "inputs: 1 of 4 files failed (garbage.jsonl); 2 issues"  # (the line, the file)
    assert summary in inputs["messages"]
    code, _, err = _cli(*diff)
    assert code == 1 and summary in err, err
    code, out, err = _cli("run", str(folder), "-p", "none", "-q", "--cache-dir",
                          str(tmp_path / "c"), "--out", str(tmp_path / "o"), "--json")
    assert code == 1 and summary in err, err
    assert isinstance(_doc(out), list)  # (the rows still printed, the list's shape kept)


def test_redact_and_inspect_json_have_the_inputs(logs: Path, tmp_path: Path) -> None:
    code, out, err = _cli("redact", str(logs), "--out", str(tmp_path / "r"), "-q", "--json")
    assert code == 1, err  # (redact never copies a line it cannot read: the file not written)
    inputs = _doc(out)["inputs"]
    assert inputs["compressed_not_read_n"] == 1 and inputs["symlinks_not_followed_n"] == 1
    assert inputs["issues_n"] == 1 and inputs["files_failed"] == [_SKIPPED]
    assert inputs["files_n"] == 3 and inputs["runs_not_replayed_n"] is None
    assert any(m.startswith("warning: ") and ":4: not JSON" in m for m in inputs["messages"])
    code, _, err = _cli("redact", str(logs), "--out", str(tmp_path / "r2"), "-q")
    assert code == 1 and "1 compressed log file not read" in err, err
    assert f"{_SAID_SKIPPED}:4: not JSON" in err, err
    code, out, err = _cli("inspect", str(logs / _SKIPPED), "--json")
    assert code == 0, err
    inputs = _doc(out)["inputs"]
    assert inputs["issues_n"] == 1 and inputs["files_parsed_n"] == 1
    assert [m.split(":4: ")[1] for m in inputs["messages"]] == [
        m.split(":4: ")[1] for m in _doc(out)["issues"] if ":4: " in m]
    code, _, err = _cli("inspect", str(logs / _SKIPPED))
    assert code == 0 and ":4: malformed JSON" in err, err


def test_check_json_keeps_the_not_replayed_note_off_stdout(logs: Path, tmp_path: Path) -> None:
    """check's notes follow its verdict on stdout in text; with --json stdout is the one JSON
    document (the note in it, not after it), both forms, with and without --quiet; with --csv
    the note goes to stderr."""
    args = ["check", str(logs), "-p", "none", "--baseline", str(tmp_path / "b.json"),
            "--cache-dir", str(tmp_path / "c")]
    note = "1 run(s) with no recorded request not replayed: asked.jsonl"
    for extra in (["--update-baseline"], [], ["-q"]):
        code, out, err = _cli(*args, *extra, "--json")
        assert code == 0, err
        doc = json.loads(out)  # the whole of stdout: nothing before or after the document
        assert isinstance(doc, dict) and not any(
            line.startswith("note:") for line in out.splitlines()), out
        assert any(m.startswith(f"note: {note}") for m in doc["inputs"]["messages"])
        if "--update-baseline" in extra:
            assert [s.split(" ")[0] for s in doc["not_replayed"]] == ["asked.jsonl"]
        else:
            assert any(n.startswith(note) for n in doc["notes"]), doc["notes"]
    code, out, err = _cli(*args, "--csv")
    assert code == 0 and note not in out and note in " ".join(err.split()), (out, err)
