"""The CLI against hostile input: strings from files and paths never act as rich markup or
terminal control, and every command that reads logs exits 1 when an input file failed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
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
    args = ["run", "-p", "none", str(logs), "--out", str(out), "--cache-dir", str(out), "-q"]
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
    result = runner.invoke(app, ["run", "-p", "none", str(logs), "--out", str(out), "--cache-dir",
                                 str(out), "-q"])
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "evil\\x1b[31m\\nname.jsonl" in result.stderr
    listed = runner.invoke(app, ["runs", str(out / "dataset"), "--wide"])
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
        "diff": ["diff", "-p", "none", "-p", "observation-masking", str(logs), "--cache-dir",
                 str(out)],
        "calibrate": ["calibrate", str(logs), "--cache-dir", str(out)],
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
    fresh = _command(name, logs, tmp_path / "strict", baseline)  # (diff, calibrate: the cache)
    strict = runner.invoke(app, [*fresh, "--strict"])
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


# --- items 11, 12: hostile policy files -------------------------------------------------

def _policy(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)
) + "description: *i\n"


@pytest.mark.parametrize(("text", "message"), [
    (ALIAS_BOMB, "aliases expand to more than 100,000 values"),
    ("server: {window_tokens: *x}\nx: &x [1]\n", "invalid YAML"),
    ("tiers: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than 100 levels deep"),
    ("a: &a [*a]\n", "refers to the node that contains it"),
    ("server: {window_tokens: 100000}\nserver: {window_tokens: 5}\n",
     ("a key is given twice in one mapping (lines 1 and 2; YAML would keep only the last): "
      "'server'")),
    ("server: {window_tokens: 100000, window_tokens: 5}\n",
     "a key is given twice in one mapping (line 1;"),
    ("estimator: {method: chars, chars_per_token: .nan}\n", "estimator.chars_per_token"),
    ("truth: {scale: .inf}\n", "truth.scale"),
    ("estimator: {scale: 0}\n", "estimator.scale: must be > 0"),
    ("server: {window_tokens: 100000}\ntiers: [{type: summarise, trigger: {at_tokens: 100001}}]\n",
     "tiers.0.trigger.at_tokens: 100,001 tokens is above the window (100,000)"),
    ("tiers: [{type: summarise, trigger: {at_tokens: -1}}]\n", "must be ≥ 0"),
    ("tiers: [{type: summarise, trigger: {never: true, at_tokens: 5}}]\n", "(2 set)"),
    ("server: {window_tokens: 9223372036854775808}\n", "server.window_tokens: must be at most"),
    # each of these ended a replay in an OverflowError traceback: figures beyond int64
    ("server: {window_tokens: 1000000, message_overhead_tokens: 9007199254740992}\n",
     "server.message_overhead_tokens: a token count must be at most 4,294,967,296 (2^32)"),
    ("estimator: {scale: 9000000000000000.0}\n", "estimator.scale: must be at most 1000"),
    ("truth: {method: chars, chars_per_token: 1.0e-300}\n",
     "truth.chars_per_token: must be at least 0.1"),
    ("tiers: [{type: summarise, restore: {summary_tokens_per_summarised: 1.0e+15}}]\n",
     "tiers.0.restore.summary_tokens_per_summarised: must be at most 1000"),
    ("tiers: [{type: trim, placeholder: {template: '[{tool} {nope}]'}}]\n",
     "tiers.0.placeholder.template: unknown template field {nope}"),
    ("tiers: [{type: trim, placeholder: {template: '[{tool trimmed]'}}]\n",
     "tiers.0.placeholder.template: not a valid template"),
    ("tiers: [{type: trim, write_note: 'wrote {path}}'}]\n", "tiers.0.write_note: not a valid"),
    ("tiers: [{type: trim, placeholder: {template: '{tool.__class__}'}}]\n",
     "unknown template field {tool.__class__}"),
])
def test_a_hostile_policy_file_is_refused_with_exit_2(tmp_path: Path, text: str,
                                                      message: str) -> None:
    result = runner.invoke(app, ["show-policy", str(_policy(tmp_path, text))])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert message in result.stderr


def test_merge_keys_are_not_duplicate_keys(tmp_path: Path) -> None:
    """An explicit key overrides what ``<<`` merges in: that is YAML, not a key given twice."""
    path = _policy(tmp_path, "tiers:\n- &t {type: trim, name: a, min_chars: 2000}\n"
                             "- {<<: *t, name: b, min_chars: 4000}\n")
    result = runner.invoke(app, ["show-policy", str(path)])
    assert result.exit_code == 0, result.output
    assert "min_chars: 4000" in result.output


def test_a_large_policy_file_is_refused_with_the_limit(tmp_path: Path) -> None:
    path = _policy(tmp_path, "description: '" + "x" * (2 << 20) + "'\n")
    result = runner.invoke(app, ["show-policy", str(path)])
    assert result.exit_code == 2
    assert "a configuration file may be at most 1,048,576 bytes" in result.stderr


@pytest.mark.parametrize(("arg", "message"), [
    ("/dev/zero", "not a regular file"),
    ("", "an empty policy name"),
    ("TMP", "a folder, not a policy file"),
    ("../two-tier-corrected", "no such file or preset"),
    ("../presets/none", "no such file or preset"),
])
def test_policy_names_that_are_not_policy_files_are_refused(tmp_path: Path, arg: str,
                                                            message: str) -> None:
    arg = str(tmp_path) if arg == "TMP" else arg
    result = runner.invoke(app, ["show-policy", arg])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_a_file_that_is_not_a_policy_is_never_echoed(tmp_path: Path) -> None:
    secret = "root:$6$s3cr3tHASH:19000:0:99999:7:::"
    for i, text in enumerate([f"{secret}\ndaemon:*:19000:0:99999:7:::\n",
                              f"{secret}: 1\nother: 2\n", f"[{secret}\n", "\x00\x01" + secret]):
        result = runner.invoke(app, ["show-policy", str(_policy(tmp_path, text, f"s{i}"))])
        assert result.exit_code == 2, (text, result.output)
        assert "s3cr3t" not in result.output, result.output


def test_show_policy_prints_yaml_that_loads_back_to_the_same_policy(tmp_path: Path) -> None:
    from replay.policy import load_policy

    result = runner.invoke(app, ["show-policy", "two-tier-corrected"])
    assert result.exit_code == 0, result.output
    again = _policy(tmp_path, result.stdout)
    assert load_policy(again).digest() == load_policy("two-tier-corrected").digest()


def test_report_markdown_cells_escape_html_from_logs() -> None:
    from analysis.report.pages import _md_table

    lines = _md_table(["run"], [["<img src=x onerror=alert(1)>|a"]])
    assert "<img" not in "\n".join(lines) and "&lt;img src=x onerror=alert(1)&gt;\\|a" in lines[2]


def test_report_markdown_escapes_names_outside_the_cells_too(tmp_path: Path) -> None:
    """A policy name is in the overview, the lint list and the headings of report.md, not only
    in cells: no HTML, code span, emphasis or link from it survives there."""
    evil = "x`</code><img src=x onerror=alert(1)>[go](javascript:alert(1))*b*"
    policy = tmp_path / "p.yaml"
    policy.write_text(f"extends: two-tier-original\nname: '{evil}'\n")
    out = tmp_path / "rep"
    result = runner.invoke(app, ["report", "--policy", str(policy), "--policy", "none",
                                 str(SAMPLES / "claude-code" / "short.jsonl"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text()
    assert md.count("img src=x") >= 3  # overview, lint list, a heading, the policy table
    for live in (r"<img", r"(?<!\\)\]\(javascript:", r"(?<!\\)`</code>", r"(?<!\\)\*b(?<!\\)\*"):
        assert not re.search(live, md), (live, [x for x in md.splitlines() if re.search(live, x)])
    assert "\\[go\\](javascript:alert(1))" in md



@pytest.mark.parametrize("argv", [
    ["run", "-p", "claude-code", "--json"],
    ["diff", "-p", "claude-code", "-p", "none", "--json"],
    ["sweep", "-p", "two-tier-corrected", "--axis", "tiers.1.keep_messages=8,16", "--no-plots",
     "--jobs", "1"],
    ["report", "-p", "claude-code", "--max-timelines", "1"],
])
def test_counts_beyond_any_prompt_are_unknown_not_a_traceback(tmp_path: Path,
                                                             argv: list[str]) -> None:
    """The real tool_heavy sample with each response's input and output tokens 2**62 (each
    within 64 bits, their sum not): every command that replays it ended in OverflowError
    (exit 1).  A count above MAX_COUNT (2**40) is one issue and unknown; one at it is a count."""
    from replay.ingest.names import MAX_COUNT

    def usage(rec: dict, n: int) -> dict:  # type: ignore[type-arg]
        if rec.get("type") == "assistant":
            rec["message"]["usage"].update(input_tokens=n, output_tokens=n,
                                           cache_read_input_tokens=0,
                                           cache_creation_input_tokens=0)
        return rec

    src = (SAMPLES / "claude-code" / "tool_heavy.jsonl").read_text().splitlines()
    for name, n in (("beyond", 2**62), ("at", MAX_COUNT)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "s.jsonl").write_text(
            "\n".join(json.dumps(usage(json.loads(line), n)) for line in src) + "\n")
    n_responses = len({rec["message"]["id"] for rec in map(json.loads, src)
                       if rec.get("type") == "assistant"})  # a response's records share its id
    got = runner.invoke(app, [argv[0], str(tmp_path / "beyond"), *argv[1:], "--cache-dir",
                              str(tmp_path / "c"), *(["--out", str(tmp_path / "o")]
                                                     if argv[0] != "diff" else [])])
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exception
    assert got.exit_code == 0, got.output
    said = re.findall(r"(input|output)_tokens 4611686018427387904 is not a token count "
                      r"\(negative or out of range; kept as unknown\)", got.stderr)
    assert len(said) == 2 * n_responses
    at = runner.invoke(app, ["inspect", str(tmp_path / "at" / "s.jsonl"), "--json"])
    assert at.exit_code == 0 and json.loads(at.stdout)["issues"] == []
