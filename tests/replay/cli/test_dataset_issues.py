"""A dataset opened as it is (`replay run DATASET`, and every command that reads runs) says the
problems its logs had as an ingest that reuses them says them: each issue stored with its entry
and the records of a type the parser does not know.  It said none of them, so `replay ingest`
then `replay run` of the dataset warned of a skipped line once and replayed silently after
(exit 0 even with --strict); found by the end-to-end fuzz campaign (mutated logs through every
command)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

_BROKEN = b'{"type":"assistant","uuid":"zz\n'
_UNKNOWN = b'{"type":"zz_new_kind","uuid":"q1"}\n'


@pytest.fixture(scope="module")
def dataset(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A dataset of one real log with a truncated line and a record of an unknown type
    appended, and the warning its ingest printed (the independent record of its issue)."""
    folder = tmp_path_factory.mktemp("ds")
    log = folder / "s.jsonl"
    data = (samples / "claude-code" / "short.jsonl").read_bytes()
    log.write_bytes(data + _BROKEN + _UNKNOWN)
    got = CliRunner().invoke(app, ["ingest", str(log), "--out", str(folder / "ds"), "-q"])
    assert got.exit_code == 0, got.output
    warned = [line for line in got.stderr.splitlines() if line.startswith("warning: ")]
    line = data.count(b"\n") + 1  # the truncated line's number
    assert len(warned) == 1 and f"s.jsonl:{line}: malformed JSON" in warned[0], got.stderr
    return folder / "ds", warned[0].split("s.jsonl", 1)[1]


@pytest.mark.parametrize("command", [["run", "-p", "none"], ["diff", "-p", "none", "-p", "cline"]])
def test_a_dataset_says_the_issues_and_unknown_records_of_its_logs(
        dataset: tuple[Path, str], command: list[str], tmp_path: Path) -> None:
    ds, issue = dataset
    args = [command[0], str(ds), *command[1:], "--cache-dir", str(tmp_path / "c"), "-q"]
    if command[0] == "run":
        args += ["--out", str(tmp_path / "o")]
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 0, got.output
    assert f"warning: s.jsonl{issue}" in got.stderr
    assert "1 record of a type the parser does not know" in got.stderr
    assert "zz_new_kind x1" in got.stderr
    strict = CliRunner().invoke(app, [*args, "--strict"])
    assert strict.exit_code == 1, strict.output
    assert "inputs: 1 of 1 files failed (s.jsonl); 1 issue; --strict" in strict.stderr


def test_a_report_says_the_problems_its_logs_had(dataset: tuple[Path, str],
                                                 tmp_path: Path) -> None:
    """report.md and report.html are read by people who never saw the ingest's warnings: the
    overview says how many issues and unknown records the logs had, by file."""
    ds, _ = dataset
    got = CliRunner().invoke(app, ["report", str(ds), "-p", "none", "--out", str(tmp_path / "r"),
                                   "--cache-dir", str(tmp_path / "c"), "-q"])
    assert got.exit_code == 0, got.output
    said = ("Inputs: 1 issue(s) and 1 record(s) of a type the parser does not know in 1 log "
            "file(s) when they were parsed (s.jsonl: 1 issue(s), 1 record(s) of an unknown type)")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "r" / name).read_text()
        assert said in text.replace("\\", ""), name  # (markdown escapes punctuation)


def test_a_reused_file_failed_by_strict_is_counted_once(samples: Path, tmp_path: Path) -> None:
    """`ingest --strict` over files already in the dataset, one of them with a stored issue:
    that file was counted reused and failed both ('2 reused from cache, 1 failed', 'inputs: 1
    of 3 files failed' for two files).  Now it is one file, failed; the dataset given as it is
    says the same (the one definition of a reused entry's report, ``ingest_report.report_reused``)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "s.jsonl").write_bytes((samples / "claude-code" / "short.jsonl").read_bytes()
                                   + _BROKEN)
    clean = next(p for p in sorted((samples / "claude-code").glob("*.jsonl"))
                 if p.name != "short.jsonl")
    (logs / "clean.jsonl").write_bytes(clean.read_bytes())
    ds = tmp_path / "ds"
    first = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(ds), "-q"])
    assert first.exit_code == 0, first.output
    assert first.stderr.count("warning: ") == 1, first.stderr  # only s.jsonl has an issue
    again = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(ds), "-q", "--strict"])
    assert again.exit_code == 1, again.output
    said = " ".join(again.output.split())
    assert "from 0 files parsed, 1 reused from cache, 1 failed" in said
    assert "inputs: 1 of 2 files failed (s.jsonl); 1 issue; --strict" in said
    opened = CliRunner().invoke(app, ["run", str(ds), "-p", "none", "--strict", "-q",
                                      "--out", str(tmp_path / "o"),
                                      "--cache-dir", str(tmp_path / "c")])
    assert opened.exit_code == 1, opened.output
    assert "inputs: 1 of 2 files failed (s.jsonl); 1 issue; --strict" in " ".join(
        opened.stderr.split())


@pytest.fixture(scope="module")
def traced(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A project cache holding a log with a truncated line (named with a terminal escape) and
    a clean one, and `replay run` traces of each under two policies (out/<log>-<policy>);
    with the warning the ingest printed of the broken one (the independent record)."""
    folder = tmp_path_factory.mktemp("traced")
    logs = folder / "logs"
    logs.mkdir()
    data = (samples / "claude-code" / "short.jsonl").read_bytes()
    (logs / "s\x1b[31m.jsonl").write_bytes(data + _BROKEN)
    clean = next(p for p in sorted((samples / "claude-code").glob("*.jsonl"))
                 if p.name != "short.jsonl")
    (logs / "clean.jsonl").write_bytes(clean.read_bytes())
    cache, warned = folder / "c", ""
    for name in ("s\x1b[31m.jsonl", "clean.jsonl"):
        for policy in ("none", "cline"):
            got = CliRunner().invoke(app, ["run", str(logs / name), "-p", policy, "-q",
                                           "--cache-dir", str(cache),
                                           "--out", str(folder / f"{name[0]}-{policy}")])
            assert got.exit_code == 0, got.output
            warned = warned or next((line for line in got.stderr.splitlines()
                                     if line.startswith("warning: ")), "")
    assert "malformed JSON" in warned and "\x1b" not in warned, warned
    return folder, cache, warned.split(".jsonl", 1)[1]


@pytest.mark.parametrize("beside", [False, True], ids=["cache", "beside"])
@pytest.mark.parametrize("command", ["diff", "report"])
def test_traces_say_the_stored_issues_of_their_runs_logs(
        traced: tuple[Path, Path, str], command: str, beside: bool, tmp_path: Path) -> None:
    """`diff --traces A B` and `report --traces` without --data read the runs from a dataset
    they find (the project cache's, or DIR/dataset beside the first traces), opened as it is:
    they said nothing of the issues its logs had, while `diff DATASET` says them (above).  Now
    they say those of the runs traced (not of other files in the cache), escaped, and exit 1
    with --strict before any work."""
    folder, cache, issue = traced
    if beside:  # the cache's dataset copied beside the traces, the cache given empty
        shutil.copytree(cache / "dataset", folder / "s-none" / "dataset", dirs_exist_ok=True)
        cache = tmp_path / "empty"

    def args(name: str, out: str = "r") -> list[str]:
        got = ["--traces", str(folder / f"{name}-none"), str(folder / f"{name}-cline")]
        return [command, *(got if command == "diff" else got[:2]), "--cache-dir", str(cache),
                "-q", *(["--out", str(tmp_path / out), "--max-timelines", "0"]
                        if command == "report" else [])]

    got = CliRunner().invoke(app, args("s"))
    assert got.exit_code == 0, got.output
    assert got.stderr.count("warning: ") == 1, got.stderr
    assert f"warning: s\\x1b[31m.jsonl{issue}" in got.stderr, got.stderr
    assert "\x1b" not in got.stderr
    strict = CliRunner().invoke(app, [*args("s", "strict"), "--strict"])
    assert strict.exit_code == 1, strict.output
    assert "inputs: 1 of 1 files failed (s\\x1b[31m.jsonl); 1 issue; --strict" in " ".join(
        strict.stderr.split())
    assert "b: " not in strict.stdout and not (tmp_path / "strict" / "report.md").exists()
    if not beside:  # the cache also holds s.jsonl: the clean file's traces say nothing
        other = CliRunner().invoke(app, [*args("c"), "--strict"])
        assert other.exit_code == 0, other.output
        assert "warning" not in other.stderr and "issue" not in other.stderr, other.stderr
