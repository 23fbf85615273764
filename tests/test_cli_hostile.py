"""The CLI against hostile input: strings from files and paths never act as rich markup or
terminal control, and every command that reads logs exits 1 when an input file failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
MARKUP = "[bold red]M[/]"


def _chat_log(path: Path, *, model: str = "gpt-x", tool: str = "bash", n_calls: int = 4) -> Path:
    """A small chat-completions log: one run of ``n_calls`` tool calls."""
    msgs: list[dict[str, object]] = [{"role": "system", "content": "sys"},
                                     {"role": "user", "content": "do [bold]x[/] please"}]
    for i in range(n_calls):
        msgs.append({"role": "assistant", "content": "ok", "model": model, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": tool, "arguments": json.dumps({"command": f"ls {i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 40})
    msgs.append({"role": "assistant", "content": "done", "model": model})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": msgs}))
    return path


def _broken(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("this is not a log\n")
    return path


# --- item 3: markup and control characters ---------------------------------------------

@pytest.mark.parametrize("as_json", [False, True])
def test_markup_in_a_path_and_in_log_strings_is_printed_as_written(tmp_path: Path,
                                                                    as_json: bool) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json", model=MARKUP, tool="[/]")
    _broken(logs / "d[" / "]x.jsonl")  # the path holds "[/]"
    out = tmp_path / "out"
    args = ["run", "-p", "none", str(logs), "--out", str(out), "-q"]
    result = runner.invoke(app, args + (["--json"] if as_json else []))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1
    assert "d[/]x.jsonl" in result.stderr
    if as_json:
        assert [r["source"] for r in json.loads(result.stdout)] == ["good.json"]
    listed = runner.invoke(app, ["runs", str(out / "dataset")] + (["--json"] if as_json else []))
    assert listed.exit_code == 0, listed.output
    assert MARKUP in listed.stdout  # not restyled to "M"


def test_markup_in_a_policy_path_does_not_crash_the_error(tmp_path: Path) -> None:
    policy = tmp_path / "[" / "]p[bold].yaml"
    policy.parent.mkdir()
    policy.write_text("server: {window_tokens: 0}\n")
    result = runner.invoke(app, ["show-policy", str(policy)])
    assert result.exit_code == 2
    assert "[/]p[bold].yaml" in result.stderr


def test_control_characters_in_names_are_shown_escaped(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json", model="m\x1b[2J\x1b]0;owned\x07\u202egnp.exe")
    _broken(logs / "evil\x1b[31m\nname.jsonl")
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "-p", "none", str(logs), "--out", str(out), "-q"])
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "evil\\x1b[31m\\nname.jsonl" in result.stderr
    listed = runner.invoke(app, ["runs", str(out / "dataset")])
    assert "\x1b" not in listed.stdout and "\u202e" not in listed.stdout
    assert "m\\x1b[2J\\x1b]0;owned\\x07\\u202egnp.exe" in listed.stdout


# --- item 4: exit codes of every command that reads logs -------------------------------

def _baseline(tmp_path: Path, logs: Path) -> Path:
    baseline = tmp_path / "baseline.json"
    made = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                               "--update-baseline", "--out", str(tmp_path / "b"), "-q"])
    assert made.exit_code == 0, made.output
    return baseline


def _command(name: str, logs: Path, out: Path, baseline: Path | None) -> list[str]:
    return {
        "run": ["run", "-p", "none", str(logs), "--out", str(out)],
        "report": ["report", "-p", "none", str(logs), "--out", str(out), "--max-timelines", "1"],
        "diff": ["diff", "-p", "none", "-p", "observation-masking", str(logs), "--out", str(out)],
        "calibrate": ["calibrate", str(logs), "--out", str(out)],
        "check": ["check", "-p", "none", str(logs), "--baseline", str(baseline), "--out",
                  str(out)],
        "sweep": ["sweep", "-p", "observation-masking", str(logs), "--out", str(out), "--axis",
                  "tiers.0.protect.tool_results=1,2", "--jobs", "1", "--no-plots"],
        "ingest": ["ingest", str(logs), "--out", str(out)],
    }[name] + ["-q"]


COMMANDS = ["run", "report", "diff", "calibrate", "check", "sweep", "ingest"]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_failed_input_file_exits_1_with_a_summary(tmp_path: Path, name: str) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json")
    baseline = _baseline(tmp_path, logs) if name == "check" else None
    _broken(logs / "broken.jsonl")
    result = runner.invoke(app, _command(name, logs, tmp_path / "out", baseline))
    assert result.exit_code == 1, result.output
    assert "inputs: 1 of 2 files failed (broken.jsonl); 1 issue" in result.stderr.splitlines()


@pytest.mark.parametrize("name", COMMANDS)
def test_all_inputs_good_exits_0(tmp_path: Path, name: str) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json")
    baseline = _baseline(tmp_path, logs) if name == "check" else None
    result = runner.invoke(app, _command(name, logs, tmp_path / "out", baseline))
    assert result.exit_code == 0, result.output
    assert "inputs:" not in result.stderr


def _log_with_a_bad_line(path: Path) -> Path:
    """A Claude Code log that parses with one issue (a malformed line in the middle)."""
    lines = (REPO / "logs" / "write-heavy.jsonl").read_text().splitlines()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*lines[:40], "not json {", *lines[40:60]]) + "\n")
    return path


@pytest.mark.parametrize("name", COMMANDS)
def test_strict_stops_at_the_first_issue_and_exits_1(tmp_path: Path, name: str) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json")
    baseline = _baseline(tmp_path, logs) if name == "check" else None
    _log_with_a_bad_line(logs / "a-issue.jsonl")  # sorted first: the ingest stops there
    args = _command(name, logs, tmp_path / "out", baseline)
    lenient = runner.invoke(app, args, catch_exceptions=False)
    assert "a-issue.jsonl:41: malformed JSON" in lenient.stderr
    if name != "check":  # check: the new run is reported, not compared, and passes
        assert lenient.exit_code == 0, lenient.output
    strict = runner.invoke(app, [*args, "--strict", "--out", str(tmp_path / "strict")])
    assert strict.exit_code == 1, strict.output
    assert "--strict: stopped at the first file with a problem" in strict.stderr
    assert not (tmp_path / "strict" / "traces").exists()
    assert not (tmp_path / "strict" / "report.html").exists()


@pytest.mark.parametrize("name", [c for c in COMMANDS if c not in ("ingest", "check")])
def test_no_run_left_is_said_and_exits_1_instead_of_an_empty_table(tmp_path: Path,
                                                                   name: str) -> None:
    logs = tmp_path / "logs"
    _broken(logs / "a.jsonl")
    _broken(logs / "b.jsonl")
    result = runner.invoke(app, _command(name, logs, tmp_path / "out", None))
    assert result.exit_code == 1, result.output
    assert "no runs to work on: 2 of 2 input files failed" in result.stderr
    assert "inputs: 2 of 2 files failed (a.jsonl, b.jsonl)" in result.stderr
    assert result.stdout.strip() == ""


@pytest.mark.parametrize("name", COMMANDS)
def test_a_folder_without_logs_is_a_usage_error(tmp_path: Path, name: str) -> None:
    (tmp_path / "empty").mkdir()
    baseline = _baseline(tmp_path, _chat_log(tmp_path / "logs" / "a.json").parent) \
        if name == "check" else None
    result = runner.invoke(app, _command(name, tmp_path / "empty", tmp_path / "out", baseline))
    assert result.exit_code == 2, result.output
    assert "no log files in" in result.stderr


def test_runs_of_an_empty_dataset_says_so(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _broken(logs / "a.jsonl")
    assert runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds")]).exit_code == 1
    result = runner.invoke(app, ["runs", str(tmp_path / "ds")])
    assert result.exit_code == 1
    assert "no runs in the dataset" in result.stderr and result.stdout == ""


# --- item 6: replay check with unreadable files ----------------------------------------

@pytest.mark.parametrize("strict_logs", [False, True])
def test_check_fails_when_an_archived_log_is_unreadable(tmp_path: Path, strict_logs: bool) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "a.json")
    _chat_log(logs / "b.json", n_calls=6)
    baseline = _baseline(tmp_path, logs)
    _broken(logs / "b.json")
    junit = tmp_path / "check.xml"
    result = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                                 "--out", str(tmp_path / "out"), "-q", "--junit", str(junit)]
                           + (["--strict-logs"] if strict_logs else []))
    assert result.exit_code == 1, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("check: FAIL — 1 unreadable log (b.json), not compared"), first
    assert "unreadable log: b.json" in junit.read_text()


def test_check_verdict_counts_only_the_runs_compared(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _chat_log(logs / "a.json")
    _chat_log(logs / "b.json", n_calls=6)
    baseline = _baseline(tmp_path, logs)
    (logs / "b.json").unlink()
    result = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                                 "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("check: PASS — 1 run × 1 policy × "), first
    assert first.endswith("; 1 missing run (not compared)"), first
