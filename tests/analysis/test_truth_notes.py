"""What the commands say of runs judged by the tokenizer count although the policy asked for
recorded usage (``analysis.truth_notes``): ``replay run`` said it; ``sweep``, ``diff`` and
``check`` printed their figures without a word.  Now each says how many and why, and where to
find which run (the sweep's table has a ``truth_source`` column)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.truth_notes import NAMED_RUNS, judged_runs, tokenizer_judged_note
from replay.cli import app
from replay.engine.truth import NOT_RECORDED
from tests.claude_code_raw import USAGE_SAMPLE, rewritten_usage

SWE = "v1fc_gpt4__sweagenttestrepo-1c2844.traj"
"""A SWE-agent trajectory: it records no usage a request (only totals)."""


def test_the_note_counts_runs_once_by_why_and_says_when_only_some_replays() -> None:
    cells = [("r1", "tokenizer-fallback"), ("r2", "anchored"), ("r1", "tokenizer-fallback"),
             ("r3", "tokenizer-implausible-usage"), ("r3", "tokenizer"), ("r4", None)]
    assert judged_runs(cells) == {"tokenizer-fallback": 1, "tokenizer-implausible-usage": 1}
    note = tokenizer_judged_note(cells, "the table")
    assert note == ("2 of 3 replayed runs are judged by the tokenizer count, not by recorded "
                    "usage: 1 recorded none (tokenizer-fallback), 1 recorded usage at odds with "
                    "their text (tokenizer-implausible-usage), in 3 of their 4 replays; the "
                    "table says which run")
    assert tokenizer_judged_note([("r1", "tokenizer"), ("r2", "anchored"), ("r3", None)],
                                 "x") is None
    many = [(f"run{k}", "tokenizer-fallback") for k in range(NAMED_RUNS + 2)]
    named = tokenizer_judged_note(many)
    assert named is not None and named.endswith(
        "the runs: " + ", ".join(f"run{k}" for k in range(NAMED_RUNS)) + " and 2 more")


@pytest.fixture(scope="module")
def logs(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Three logs: usage at odds with the text (only the uncached input kept), none recorded
    (SWE-agent), usage as recorded (short.jsonl); and the sources the first two are."""
    folder = tmp_path_factory.mktemp("logs")
    rewritten_usage(samples, folder, uncached=True)
    text = (samples / "swe-agent" / SWE).read_text()  # (the independent reading: no usage a
    assert not any(k in text for k in ('"usage"', "input_tokens", "prompt_tokens"))  # request)
    (folder / SWE).write_text(text)
    (folder / "short.jsonl").write_bytes((samples / "claude-code" / "short.jsonl").read_bytes())
    return folder, [USAGE_SAMPLE, SWE]


_COUNTED = ("2 of 3 replayed runs are judged by the tokenizer count, not by recorded usage: 1 "
            "recorded none (tokenizer-fallback), 1 recorded usage at odds with their text "
            "(tokenizer-implausible-usage)")


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


def test_a_sweep_says_which_runs_the_tokenizer_judged(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder, _ = logs
    base = ["sweep", "-q", str(folder), "-p", "two-tier-corrected", "--no-plots", "--jobs", "1",
            "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "o")]
    code, out = _cli(*base, "--axis", "tiers.1.trigger.at_tokens=40000,80000")
    assert code == 0, out
    assert f"note: {_COUNTED}; the truth_source column of " in out
    with open(tmp_path / "o" / "sweep" / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    by_source = {r["source"]: {x["truth_source"] for x in rows if x["source"] == r["source"]}
                 for r in rows}
    recorded = by_source.pop("short.jsonl")
    assert len(recorded) == 1 and recorded <= {"anchored", "anchored-unscaled"}
    assert by_source == {USAGE_SAMPLE: {"tokenizer-implausible-usage"},
                         SWE: {"tokenizer-fallback"}}
    # the same rows again, from the sweep cache, say the same
    code, out = _cli(*base, "--axis", "tiers.1.trigger.at_tokens=40000,80000", "--json")
    doc = json.loads(out[out.index("{"):])
    assert doc["reused"] == 6 and doc["computed"] == 0
    assert doc["tokenizer_judged_runs"] == {"tokenizer-fallback": 1,
                                            "tokenizer-implausible-usage": 1}
    # a setting asking for the tokenizer itself is not counted: in 2 of their 4 replays
    code, out = _cli(*base, "--axis", "truth.method=anchored,tokenizer")
    assert code == 0, out
    assert f"{_COUNTED}, in 2 of their 4 replays;" in out


def test_diff_says_which_runs_the_tokenizer_judged(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder, _ = logs
    args = ["diff", "-q", str(folder), "-p", "two-tier-corrected", "-p", "observation-masking",
            "--cache-dir", str(tmp_path / "c")]
    code, out = _cli(*args)
    assert code == 0, out
    assert f"note: {_COUNTED}; --json's truth_sources says which run" in out
    code, out = _cli(*args, "--json")
    doc = json.loads(out[out.index("{"):])
    assert doc["tokenizer_judged_runs"] == {"tokenizer-fallback": 1,
                                            "tokenizer-implausible-usage": 1}
    for side in ("a", "b"):
        sources = sorted(doc["truth_sources"][side].values())
        assert sources[0] in ("anchored", "anchored-unscaled")
        assert sources[1:] == ["tokenizer-fallback", "tokenizer-implausible-usage"]


def test_check_names_the_runs_the_tokenizer_judged(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder, judged = logs
    args = ["check", str(folder), "-p", "two-tier-corrected", "--baseline",
            str(tmp_path / "b.json"), "--cache-dir", str(tmp_path / "c")]
    assert _cli(*args, "--update-baseline")[0] == 0
    assert "truth" not in json.loads((tmp_path / "b.json").read_text())  # (not stored)
    code, out = _cli(*args)
    assert code == 0, out
    assert f"note: {_COUNTED}; the runs: " in out
    named = out[out.index("; the runs: ") + len("; the runs: "):]
    assert all(source in named for source in judged) and "short.jsonl" not in named
    code, out = _cli(*args, "--json")
    assert any(n.startswith(_COUNTED) for n in json.loads(out[out.index("{"):])["notes"])
    assert set(NOT_RECORDED) == {"tokenizer-fallback", "tokenizer-implausible-usage"}


def test_check_notes_a_run_whose_truth_changed_since_the_baseline(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The baseline stores each run's truth: a run judged on another basis than when the
    baseline was written (here: the baseline edited to say anchored) is noted, whatever its
    figures; a baseline written before the truth was stored still checks, with no such note;
    a crafted truth value is refused (exit 1: a damaged baseline, an input that failed), not
    printed."""
    folder, _ = logs
    path = tmp_path / "b.json"
    args = ["check", str(folder), "-p", "two-tier-corrected", "--baseline", str(path),
            "--cache-dir", str(tmp_path / "c")]
    _cli(*args, "--update-baseline")
    doc = json.loads(path.read_text())
    truth = doc["policies"]["two-tier-corrected"]["truth"]
    assert sorted(truth.values())[1:] == ["tokenizer-fallback", "tokenizer-implausible-usage"]
    truth[SWE] = "anchored"
    path.write_text(json.dumps(doc))
    code, out = _cli(*args)
    assert code == 0, out
    assert (f"truth changed under two-tier-corrected for 1 run(s): the figures rest on another "
            f"basis: {SWE} (anchored → tokenizer-fallback)") in out
    del doc["policies"]["two-tier-corrected"]["truth"]  # (written before it was stored)
    path.write_text(json.dumps(doc))
    code, out = _cli(*args)
    assert code == 0 and "truth changed" not in out, out
    doc["policies"]["two-tier-corrected"]["truth"] = {SWE: "\x1b[31m" + "x" * 100}
    path.write_text(json.dumps(doc))
    code, out = _cli(*args)
    assert code == 1 and "expected a truth source" in out and "\x1b" not in out, out


def _without_usage_every(samples: Path, out: Path, every: int) -> tuple[Path, int]:
    """The usage sample with the usage of every ``every``-th distinct assistant message taken
    out (each of its records: a message written as several records carries it on each); the
    file and how many messages lost theirs."""
    ids: list[str] = []
    lines = []
    for line in (samples / "claude-code" / USAGE_SAMPLE).read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message")
        if rec.get("type") == "assistant" and isinstance(msg, dict) and "usage" in msg:
            if msg["id"] not in ids:
                ids.append(msg["id"])
            if ids.index(msg["id"]) % every == every - 1:
                del msg["usage"]
        lines.append(json.dumps(rec))
    out.mkdir(parents=True, exist_ok=True)
    (path := out / USAGE_SAMPLE).write_text("\n".join(lines) + "\n")
    return path, len(ids) // every


def test_a_run_says_how_many_requests_recorded_no_usage(tmp_path: Path, samples: Path) -> None:
    """Under anchored truth a request that recorded no usage is sized on the offset of the
    nearest that did: an estimate, which the run's note counts (it said nothing: the run
    looked as measured as one whose every request recorded its usage)."""
    log, stripped = _without_usage_every(samples, tmp_path / "in", 5)
    args = ["run", str(log), "-p", "two-tier-corrected", "--cache-dir", str(tmp_path / "c"),
            "--out", str(tmp_path / "o"), "--json", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row, = json.loads(result.stdout)
    assert stripped >= 20 and row["truth_source"].startswith("anchored")
    assert f"{stripped} of {row['n_requests']} request(s) recorded no usage" in row["note"]
    whole = CliRunner().invoke(app, [*args[:1], str(samples / "claude-code" / USAGE_SAMPLE),
                                *args[2:7], str(tmp_path / "o2"), "--json", "-q"])
    assert "recorded no usage" not in (json.loads(whole.stdout)[0]["note"] or "")


def test_the_report_lists_each_runs_note_as_run_shows_it(tmp_path: Path, samples: Path) -> None:
    """The report's runs table had no notes: a run sized in part by estimates read there as
    measured. Its notes are now listed under the table, each the `note` replay run shows."""
    log, stripped = _without_usage_every(samples, tmp_path / "in", 5)
    cache = ["--cache-dir", str(tmp_path / "c"), "-q"]
    ran = CliRunner().invoke(app, ["run", str(log), "-p", "two-tier-corrected", "--out",
                                   str(tmp_path / "o"), "--json", *cache])
    note = json.loads(ran.stdout)[0]["note"]
    assert f"{stripped} of " in note
    made = CliRunner().invoke(app, ["report", str(log), "-p", "two-tier-corrected", "--out",
                                    str(tmp_path / "r"), "--max-timelines", "0", *cache])
    assert made.exit_code == 0, made.output
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    runs = md.split("## Runs", 1)[1].split("\n## ", 1)[0]
    assert f"(two-tier-corrected): {note}" in runs.replace("\\", "")
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert f"{stripped} of " in page.split("<h2>Runs</h2>", 1)[1].split("<h2>", 1)[0]


def test_sweep_diff_and_check_count_the_requests_that_recorded_no_usage(
        tmp_path: Path, samples: Path) -> None:
    """Under each table: how many requests of the runs anchored truth judged recorded no usage
    (each an estimate), counted from the corpus; in sweep's and diff's --json by run."""
    log, stripped = _without_usage_every(samples, tmp_path / "in", 5)
    said = f"{stripped} request(s) in 1 run(s) recorded no usage"
    cache = ["--cache-dir", str(tmp_path / "c"), "-q"]
    sweep = CliRunner().invoke(app, ["sweep", str(log), "-p", "two-tier-corrected", "--axis",
                                     "server.window_tokens=130000", "--out",
                                     str(tmp_path / "s"), *cache])
    assert sweep.exit_code == 0, sweep.output
    assert said in " ".join(sweep.output.split())
    diff = CliRunner().invoke(app, ["diff", str(log), "-p", "none", "-p", "two-tier-corrected",
                                    "--json", *cache])
    assert list(json.loads(diff.stdout)["unrecorded_usage_requests"].values()) == [stripped]
    baseline = ["check", str(log), "-p", "none", "--baseline", str(tmp_path / "b.json"), *cache]
    assert CliRunner().invoke(app, [*baseline, "--update-baseline"]).exit_code == 0
    check = CliRunner().invoke(app, baseline)
    assert check.exit_code == 0, check.output
    assert said in " ".join(check.output.split())
    whole = CliRunner().invoke(app, ["diff", str(samples / "claude-code" / USAGE_SAMPLE), "-p",
                                     "none", "-p", "two-tier-corrected", "--json", *cache])
    assert json.loads(whole.stdout)["unrecorded_usage_requests"] == {}


def test_fidelity_counts_the_requests_without_usage_and_the_runs_it_leaves_out(
        tmp_path: Path, samples: Path) -> None:
    """replay fidelity replays each run under anchored truth too, yet said nothing of the
    requests sized as estimates (run, sweep, diff and check count them), nor of the runs it
    leaves out: '1 runs with recorded usage' beside a run with none. It now gives both: the
    same sentence as the other commands, in its --json totals by run, and the runs of the
    corpus without a row, as replay run's truth_source counts them."""
    log, stripped = _without_usage_every(samples, tmp_path / "in", 5)
    shutil.copy(samples / "swe-agent" / SWE, log.parent / SWE)
    cache = ["--cache-dir", str(tmp_path / "c"), "-q"]
    ran = CliRunner().invoke(app, ["run", str(log.parent), "-p", "none", "--out",
                                   str(tmp_path / "o"), "--json", *cache])
    runs = json.loads(ran.stdout)
    without = [r for r in runs if r["truth_source"] == "tokenizer-fallback"]
    assert len(runs) == 2 and len(without) == 1
    said = CliRunner().invoke(app, ["fidelity", str(log.parent), *cache])
    assert said.exit_code == 0, said.output
    text = " ".join(said.output.split())
    assert f"{stripped} request(s) in 1 run(s) recorded no usage" in text
    assert "1 run with recorded usage of 2 runs (the other 1 recorded no usage" in text
    totals = json.loads(CliRunner().invoke(
        app, ["fidelity", str(log.parent), "--json", *cache]).stdout)["totals"]
    assert list(totals["requests_unrecorded"].values()) == [stripped]
    assert totals["runs_in_corpus"] - totals["runs"] == len(without)
    whole = CliRunner().invoke(app, ["fidelity", str(samples / "claude-code" / USAGE_SAMPLE),
                                     "--json", *cache])
    assert json.loads(whole.stdout)["totals"]["requests_unrecorded"] == {}
