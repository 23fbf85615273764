"""Runs are named by a readable label, not a hash (``replay.ingest.run_label``; issue 16 item 5): the
source path, ``#N`` for a file's later runs, ``↳`` for a subagent, then the session title or
first prompt; shown by ``runs``, ``run``, ``diff``, ``check`` and the report, and taken by
``--run``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.run_label import (
    TITLE_CHARS,
    distinct_width,
    first_prompt,
    label,
    run_labels,
    short_label,
    short_labels,
    short_title,
)

runner = CliRunner()
HASH = re.compile(r"\b[0-9a-f]{16}-\d+\b")


def _chat(path: Path, prompt: str, n_calls: int = 3) -> Path:
    """A chat-completions log whose first user message is ``prompt``."""
    msgs: list[dict[str, object]] = [{"role": "system", "content": "sys"},
                                     {"role": "user", "content": prompt}]
    for i in range(n_calls):
        msgs.append({"role": "assistant", "content": "ok", "model": "m", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 300})
    msgs.append({"role": "assistant", "content": "done", "model": "m"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": msgs}))
    return path


def _atif_with_subagent(path: Path) -> Path:
    """One ATIF trajectory holding a main run and an embedded subagent (two runs, one file)."""
    sub = {"trajectory_id": "sub-1", "agent": {"name": "helper"},
           "steps": [{"step_id": 1, "source": "user", "message": "find the config loader"},
                     {"step_id": 2, "source": "agent", "message": "seen"}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "schema_version": "ATIF-v1.7", "agent": {"name": "a"}, "subagent_trajectories": [sub],
        "steps": [{"step_id": 1, "source": "user", "message": "port the parser to Rust"},
                  {"step_id": 2, "source": "agent", "message": "done"}]}))
    return path


def _ingest(logs: Path, ds: Path) -> None:
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q"])
    assert result.exit_code == 0, result.output


def test_runs_and_run_tables_name_runs_by_source_and_first_prompt(tmp_path: Path) -> None:
    _chat(tmp_path / "logs" / "team" / "fix-login.json", "Fix the login redirect loop")
    _chat(tmp_path / "logs" / "csv.json", "Add a CSV export\nto the report page")
    ds = tmp_path / "ds"
    _ingest(tmp_path / "logs", ds)
    for args in (["runs", str(ds)], ["run", "-p", "none", str(ds), "--out", str(tmp_path / "o"),
                                     "-q"]):
        result = runner.invoke(app, args, env={"COLUMNS": "400"})  # (induced columns, #22;
        # the note saying these chat dumps record no timestamps)
        assert result.exit_code == 0, result.output
        assert "team/fix-login.json — Fix the login redirect loop" in result.stdout
        assert "csv.json — Add a CSV export to the report page" in result.stdout  # one line
        assert not HASH.search(result.stdout), result.stdout  # no run is named by its hash
    listed = json.loads(runner.invoke(app, ["runs", str(ds), "--json"]).stdout)
    assert {r["run"] for r in listed} == {"team/fix-login.json — Fix the login redirect loop",
                                          "csv.json — Add a CSV export to the report page"}


def test_a_file_of_two_runs_and_a_subagent(tmp_path: Path) -> None:
    _atif_with_subagent(tmp_path / "logs" / "t.json")
    ds = tmp_path / "ds"
    _ingest(tmp_path / "logs", ds)
    rows = json.loads(runner.invoke(app, ["runs", str(ds), "--json"]).stdout)
    by_run = {r["run"]: r for r in rows}
    assert set(by_run) == {"t.json — port the parser to Rust", "↳ t.json#1 — find the config loader"}
    assert by_run["↳ t.json#1 — find the config loader"]["parent"] == "t.json"  # not a hash


def test_run_takes_a_label_a_key_and_a_glob_over_labels(tmp_path: Path) -> None:
    _chat(tmp_path / "logs" / "a.json", "Fix the login redirect loop", n_calls=4)
    _chat(tmp_path / "logs" / "b.json", "Add a CSV export", n_calls=9)
    ds = tmp_path / "ds"
    _ingest(tmp_path / "logs", ds)
    args = ["diff", str(ds), "-p", "none", "-p", "observation-masking", "-q", "--json"]
    for wanted in ("a.json — Fix the login redirect loop", "*login*", "a.json"):
        result = runner.invoke(app, [*args, "--run", wanted])
        assert result.exit_code == 0, result.output
        runs = {r["run_id"] for r in json.loads(result.stdout)["rows"] if r["scope"] == "run"}
        assert len(runs) == 1, wanted
    table = runner.invoke(app, [*args[:-1], "--run", "*CSV*"], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    assert "b.json — Add a CSV export" in table.stdout and "a.json" not in table.stdout
    bad = runner.invoke(app, [*args, "--run", "a.json — Fix the login redirect lop"])
    assert bad.exit_code == 2 and "a.json — Fix the login redirect loop" in bad.output


def test_a_label_with_markup_and_control_characters_is_printed_escaped(tmp_path: Path) -> None:
    _chat(tmp_path / "logs" / "x.json", "[bold red]boom[/] \x1b[2J\u202eevil")
    ds = tmp_path / "ds"
    _ingest(tmp_path / "logs", ds)
    result = runner.invoke(app, ["runs", str(ds), "--columns", "run"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "x.json — [bold red]boom[/] \\x1b[2J\\u202eevil" in result.stdout


def test_the_report_names_runs_by_label_html_escaped(tmp_path: Path) -> None:
    _chat(tmp_path / "logs" / "x.json", "<img src=x onerror=alert(1)> & fix it")
    result = runner.invoke(app, ["report", str(tmp_path / "logs"), "-p", "none", "--out",
                                 str(tmp_path / "r"), "--max-timelines", "1", "-q"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "report.html").read_text()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "x.json — img src=x onerror=alert(1) &amp; fix it" not in html  # tags are no title
    assert "x.json — src=x onerror=alert(1)" not in html
    assert "<img src=x" not in html.replace('<img src="data:', "")
    assert "x.json — &amp; fix it" in html and "x.json — &amp; fix it" in md


def test_check_names_moved_runs_by_label(tmp_path: Path) -> None:
    _chat(tmp_path / "logs" / "a.json", "Fix the login redirect loop", n_calls=6)
    ds = tmp_path / "ds"
    _ingest(tmp_path / "logs", ds)
    base, other = tmp_path / "p1" / "mine.yaml", tmp_path / "p2" / "mine.yaml"
    for path, keep in ((base, 5), (other, 1)):
        path.parent.mkdir()
        path.write_text(f"extends: observation-masking\ntiers: {{mask: {{protect: {{tool_results: {keep}}}}}}}\n")
    baseline = tmp_path / "b.json"
    made = runner.invoke(app, ["check", str(ds), "-p", str(base), "--baseline", str(baseline),
                               "--update-baseline", "-q"])
    assert made.exit_code == 0, made.output
    md = tmp_path / "check.md"
    result = runner.invoke(app, ["check", str(ds), "-p", str(other), "--baseline", str(baseline),
                                 "--markdown", str(md), "-q"], env={"COLUMNS": "200"})
    assert "a.json — Fix the login redirect loop" in result.stdout, result.output
    assert "a.json — Fix the login redirect loop" in md.read_text()


def test_title_rules() -> None:
    assert short_title("  a\n\tb  ") == "a b"
    long = short_title("word " * 100)
    assert len(long) == TITLE_CHARS and long.endswith("…")
    reminder = "<system-reminder>x</system-reminder>"
    assert first_prompt([("system", "text", "sys"), ("user", "text", reminder),
                         ("user", "text", "[REDACTED len=40]"),
                         ("user", "text", "<pr>Fix it</pr> now")]) == "Fix it now"
    assert first_prompt([("assistant", "text", "hi")]) == ""
    from replay.ingest.redaction import (
        format_exact,  # `replay redact`'s own marker is no title either
    )
    assert short_title(f"{format_exact(3, None)} {format_exact(4, None)}") == ""


def test_labels_are_unique_per_run() -> None:
    runs = pa.table({"run_id": ["a" * 16 + "-0", "a" * 16 + "-1", "b" * 16 + "-0"],
                     "source": ["s.json", "s.json", "t.json"],
                     "parent_run_id": ["", "", ""], "title": ["same", "same", ""]})
    labels = run_labels(runs)
    assert list(labels.values()) == ["s.json — same", "s.json#1 — same", "t.json"]


def test_a_recorded_session_title_is_the_title(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("claude_code/handmade_2_1_attachments_microcompact.jsonl",
                 "opencode/cart-discount.export.json"):
        (logs / Path(name).name).write_bytes((fixtures / name).read_bytes())
    ds = tmp_path / "ds"
    _ingest(logs, ds)
    runs = {r["source"]: r["run"] for r in json.loads(
        runner.invoke(app, ["runs", str(ds), "--json"]).stdout)}
    claude = json.loads((logs / "handmade_2_1_attachments_microcompact.jsonl").read_text()
                        .splitlines()[14])
    opencode = json.loads((logs / "cart-discount.export.json").read_text())["info"]["title"]
    assert runs["handmade_2_1_attachments_microcompact.jsonl"].endswith(" — " + claude["aiTitle"])
    assert runs["cart-discount.export.json"] == "cart-discount.export.json — " + opencode


_keys = st.text(st.sampled_from("ab/-#.x"), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _keys, st.text(st.sampled_from("ab c"), max_size=30)),
                min_size=1, max_size=12),
       st.integers(1, 60))
def test_short_labels_keep_distinct_labels_apart_and_fit(parts: list[tuple[bool, str, str]],
                                                          width: int) -> None:
    labels = [label(k, t.strip(), sub) for sub, k, t in parts]
    cut = short_labels(labels, width)
    if cut is not None:
        assert all(len(c) <= max(width, 1) for c in cut)
        pairs = dict(zip(labels, cut))
        assert len(set(pairs.values())) == len(pairs)  # one label, one cut; two, two
    least = distinct_width(labels)
    assert short_labels(labels, least) is not None


def test_a_cut_label_keeps_the_mark_and_the_file_names_tail() -> None:
    sub = label("claude-code/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
                "What is the output contract", True)
    cut = short_label(sub, 40)
    assert cut.startswith("↳ claude-code/") and cut.endswith("/agent-a881341.jsonl")
    assert len(cut) == 40 and "…" in cut
    assert short_label("codex/a.jsonl — a long title here", 20) == "codex/a.jsonl — a l…"
    assert short_label("codex/a.jsonl — a long title here", 15) == "codex/a.jsonl"
