"""Usage errors, help text and the run table's traps (issue #16 items 6 and 10)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.tables import Layout, totals_row
from replay.corpus import NOT_REPLAYED
from replay.errors import ReplayInputError
from replay.ingest.batch import ingest
from replay.ingest.parsers import PARSERS

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "compacting-session.jsonl"
_COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
_WITH_FORMAT = sorted(name for name, cmd in _COMMANDS.items()
                      if any("--format" in p.opts for p in cmd.params))


def _args(name: str, tmp_path: Path) -> list[str]:
    """The least each command needs besides --format."""
    extra = {"ingest": ["--out", str(tmp_path / "d")], "check": ["--baseline",
                                                                 str(tmp_path / "b.json")]}
    if name == "sql":
        return [name, "SELECT 1", str(LOG)]
    policy = [] if name in ("ingest", "inspect", "calibrate") else ["-p", "none"]
    return [name, str(LOG), *policy, *extra.get(name, [])]


def test_every_command_that_reads_logs_takes_format() -> None:
    assert {"ingest", "run", "calibrate", "report", "diff", "sweep", "inspect"} <= set(
        _WITH_FORMAT)


@pytest.mark.parametrize("name", _WITH_FORMAT)
def test_an_unknown_format_is_a_usage_error_listing_the_formats(name: str,
                                                                tmp_path: Path) -> None:
    result = runner.invoke(app, [*_args(name, tmp_path), "--format", "claud"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "'claud' is not a format" in text
    for fmt in PARSERS:
        assert fmt in text
    assert not (tmp_path / "out").exists() and not (tmp_path / "d").exists()


def test_the_library_refuses_an_unknown_format_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ReplayInputError, match="unknown format 'claud'; one of claude_code"):
        ingest([LOG], tmp_path / "d", fmt="claud")
    assert not (tmp_path / "d").exists()


def test_a_known_format_is_still_taken(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(LOG), "--format", "claude_code"])
    assert result.exit_code == 0, result.output


def _logs_with_a_run_without_requests(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "full.jsonl").write_text(LOG.read_text())
    (logs / "only-user.jsonl").write_text(json.dumps(
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hello"}}) + "\n")
    return logs


def test_a_run_with_no_request_stays_in_the_run_table_with_its_reason(tmp_path: Path) -> None:
    logs = _logs_with_a_run_without_requests(tmp_path)
    args = ["run", "--policy", "none", str(logs), "--out", str(tmp_path / "out"), "-q"]
    rows = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    empty = next(r for r in rows if r["source"] == "only-user.jsonl")
    assert empty["note"] == NOT_REPLAYED and empty["n_requests"] == 0
    assert empty["peak_tokens"] is None and empty["cache_invalidation_cached_share"] is None  # unknown, not 0
    full = next(r for r in rows if r["source"] == "full.jsonl")
    assert full["note"] is None and full["n_requests"] > 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(r["source"] for r in summary["runs"]) == ["full.jsonl", "only-user.jsonl"]
    table = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert table.exit_code == 0, table.output
    line = next(ln for ln in table.stdout.splitlines() if "only-user.jsonl" in ln)
    assert NOT_REPLAYED in line and max(map(len, table.stdout.splitlines())) <= 120
    assert "total (2)" in table.stdout
    # its peak is unknown, and the table says so (a blank cell reads as nothing, 0 as a value)
    peak = next(ln for ln in table.stdout.splitlines() if "peak" in ln)
    col = peak.index("peak")
    assert "unknown" in line[col - 4:col + 16], (peak, line)


def test_a_table_total_over_an_unknown_value_is_unknown() -> None:
    rows = [{"source": "a", "tokens": 5, "peak": 3}, {"source": "b", "tokens": 2, "peak": None}]
    total = totals_row(rows, ["source", "tokens", "peak"],
                       Layout(totals={"tokens": "sum", "peak": "max"}))
    assert total == {"source": "total (2)", "tokens": 7, "peak": None}


def test_a_column_without_a_total_is_blank_not_unknown(tmp_path: Path) -> None:
    """``unknown`` says a value is missing: a share has no total, and estimated blocks (all 0)
    sum to 0; both totals read ``unknown`` although every value was known."""
    rows = [{"source": "a", "share": 0.5}, {"source": "b", "share": 0.25}]
    assert totals_row(rows, ["source", "share"], Layout(totals={})) == {
        "source": "total (2)", "share": ""}
    logs = Path(__file__).resolve().parents[3] / "logs"
    ds = tmp_path / "ds"
    assert runner.invoke(app, ["ingest", str(logs / "write-heavy.jsonl"),
                               str(logs / "test-fix-loop.jsonl"), "--out", str(ds)]).exit_code == 0
    table = runner.invoke(app, ["runs", str(ds), "--columns", "run,estimated_blocks"])
    total = next(ln for ln in table.stdout.splitlines() if "total (2)" in ln)
    assert "unknown" not in total and total.rstrip(" │").endswith(" 0"), total
    ran = runner.invoke(app, ["run", "-p", "none", str(ds), "--out", str(tmp_path / "o"),
                              "--columns", "run,cache_invalidation_cached_share"])
    total = next(ln for ln in ran.stdout.splitlines() if "total (2)" in ln)
    assert "unknown" not in total, total


@pytest.mark.parametrize("name", sorted(_COMMANDS))
def test_each_command_help_has_an_example_and_real_flag_types(name: str) -> None:
    result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    examples = [ln.strip() for ln in result.output.splitlines()
                if re.match(rf"Example: replay {name}( |$)", ln.strip())]
    assert examples, f"replay {name} --help shows no example"
    # the example uses only options the command has
    cmd = _COMMANDS[name]
    known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    words = shlex.split(examples[0].removeprefix("Example: "))
    assert all(w in known for w in words if w.startswith("-")), examples[0]
    flags = [p for p in cmd.params if getattr(p, "is_flag", False) and p.secondary_opts]
    for p in flags:  # a flag with an opposite reads --x / --no-x
        assert f"{p.opts[0]} / {p.secondary_opts[0]}" in result.output


def test_the_top_level_help_shows_an_example() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "Example: replay run logs/" in result.output
    assert "<bool>" not in result.output


_TABLE_OPTIONS = {"--columns", "--wide", "--csv", "--json"}
_TABLE_COMMANDS = {"runs", "policies", "providers", "run", "calibrate", "fidelity", "diff",
                   "sweep", "check", "inspect", "redact"}


def test_every_command_that_prints_a_table_takes_the_table_options() -> None:
    """The footer offers --columns, --wide, --csv and --json: every table command takes them
    (issue #25 item 2: calibrate and fidelity refused --wide, sweep and check all three)."""
    for name in _TABLE_COMMANDS:
        opts = {o for p in _COMMANDS[name].params for o in p.opts}
        assert _TABLE_OPTIONS <= opts, (name, _TABLE_OPTIONS - opts)


def test_calibrate_shows_its_flags_and_takes_wide(tmp_path: Path) -> None:
    args = ["calibrate", str(LOG), "--cache-dir", str(tmp_path), "-q"]
    rows = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    flagged = [r for r in rows if r["flags"]]
    narrow = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    header = next(line for line in narrow.stdout.splitlines() if "run" in line and "┃" in line)
    assert "flags" in header
    for r in flagged:
        assert r["flags"][:10] in narrow.stdout
    wide = runner.invoke(app, [*args, "--wide"], env={"COLUMNS": "80"})
    assert wide.exit_code == 0 and "held_out_anchored_error" in wide.stdout
    csv_rows = list(__import__("csv").DictReader(
        __import__("io").StringIO(runner.invoke(app, [*args, "--csv"]).stdout)))
    assert [r["source"] for r in csv_rows] == [r["source"] for r in rows]


_WITH_PATHS = sorted(name for name, cmd in _COMMANDS.items()
                     if any(p.param_type_name == "argument" and p.name in ("paths", "dataset", "file")
                            for p in cmd.params))


def test_every_command_that_reads_paths_is_checked_for_a_missing_one() -> None:
    assert {"ingest", "run", "calibrate", "fidelity", "report", "diff", "sweep", "check",
            "redact", "runs", "inspect", "sql"} <= set(_WITH_PATHS)


@pytest.mark.parametrize("name", _WITH_PATHS)
def test_a_path_that_does_not_exist_is_a_usage_error(name: str, tmp_path: Path) -> None:
    """Every command that takes paths, found from the commands themselves (sql, left out of a
    list written by hand, said 'no runs to work on: 1 of 1 input files failed' and exit 1)."""
    missing = tmp_path / "no-such-folder"
    extra = {"ingest": ["--out", str(tmp_path / "d")], "redact": ["--out", str(tmp_path / "r")],
             "check": ["--baseline", str(tmp_path / "b.json")],
             "sweep": ["--axis", "server.window_tokens=100000"]}
    policy = ["-p", "none"] if name in ("run", "report", "sweep", "check") else \
        ["-p", "none", "-p", "claude-code"] if name == "diff" else []
    paths = [str(missing)] if name in ("runs", "inspect") else [str(missing), str(LOG)]
    cache = [] if name in ("ingest", "runs", "inspect", "redact") else \
        ["--cache-dir", str(tmp_path / "c")]
    query = ["SELECT 1"] if name == "sql" else []
    result = runner.invoke(app, [name, *query, *paths, *policy, *extra.get(name, []), *cache])
    assert result.exit_code == 2, result.output
    assert "no-such-folder" in " ".join(result.output.split())
    assert not (tmp_path / "d").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", sorted(_TABLE_COMMANDS))
def test_two_output_formats_or_no_column_are_usage_errors(name: str, tmp_path: Path) -> None:
    """--csv with --json printed JSON and exit 0 (one of the two silently won); --columns ','
    named no column and printed the default table; --columns with --json was ignored (every
    column printed, and a column that does not exist too, exit 0): all usage errors, before
    any work."""
    for flags in (["--csv", "--json"], ["--columns", ","], ["--columns", ""],
                  ["--columns", "no_such_column", "--json"]):
        args = _usage_args(name, tmp_path)
        result = runner.invoke(app, [*args, *flags])
        assert result.exit_code == 2, (name, flags, result.output)
        assert flags[0] in result.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()


def _usage_args(name: str, tmp_path: Path) -> list[str]:
    """Each table command's least arguments (its work never starts: a usage error comes
    first)."""
    log, out = str(LOG), ["--out", str(tmp_path / "o")]
    cache = ["--cache-dir", str(tmp_path / "c")]
    return {"runs": ["runs", str(tmp_path)], "policies": ["policies"],
            "providers": ["providers"], "run": ["run", log, "-p", "none", *out, *cache],
            "calibrate": ["calibrate", log, *cache], "fidelity": ["fidelity", log, *cache],
            "diff": ["diff", log, "-p", "none", "-p", "claude-code", *cache],
            "sweep": ["sweep", log, "-p", "none", "--axis", "server.window_tokens=1e5", *out,
                      *cache],
            "check": ["check", log, "-p", "none", "--baseline", str(tmp_path / "o.json"),
                      *cache],
            "inspect": ["inspect", log], "redact": ["redact", log, *out]}[name]


@pytest.mark.parametrize("args", [
    ["diff", "-p", "none", "-p", "claude-code", "--top", "-1"],
    ["report", "-p", "none", "--max-timelines", "-1"],
    ["sweep", "-p", "none", "--axis", "server.window_tokens=1e5", "--top", "-2"],
    ["sweep", "-p", "none", "--axis", "server.window_tokens=1e5", "--jobs", "-1"],
    ["sweep", "-p", "none", "--axis", "server.window_tokens=1e5", "--minimise", "cost_usd",
     "--maximise", "tokens_sent"],
])
def test_a_negative_count_or_two_objectives_are_usage_errors(args: list[str],
                                                             tmp_path: Path) -> None:
    """`diff --top -1` dropped the last row of each section with nothing said, `report
    --max-timelines -1` drew an empty section, `--jobs -1` was taken, and `sweep --minimise X
    --maximise Y` let --maximise win: each is now a usage error (exit 2) naming the option."""
    result = runner.invoke(app, [args[0], str(LOG), *args[1:], "--out", str(tmp_path / "o"),
                                 "--cache-dir", str(tmp_path / "c")] if args[0] != "diff" else
                           [args[0], str(LOG), *args[1:], "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert any(o in result.output for o in ("--top", "--max-timelines", "--jobs", "--minimise"))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["", ",", " , ,"])
def test_tokenizers_naming_no_encoding_is_a_usage_error(value: str, tmp_path: Path) -> None:
    """`ingest --tokenizers ''` wrote a dataset with no token counts (exit 0): `replay runs`
    said 0 tokens for each run and a replay of it stopped ('no token counts stored')."""
    result = runner.invoke(app, ["ingest", str(LOG), "--out", str(tmp_path / "d"),
                                 "--tokenizers", value])
    assert result.exit_code == 2, result.output
    assert "--tokenizers" in result.output and "names no encoding" in result.output
    assert not (tmp_path / "d").exists()


def test_a_cache_dir_that_is_a_file_names_the_cache_option(tmp_path: Path) -> None:
    """It said 'give --out a folder' of the cache folder (--cache-dir or $CTXREPLAY_CACHE_DIR):
    the user then looked at their --out, which was fine."""
    (cache := tmp_path / "cache").write_text("")
    result = runner.invoke(app, ["run", str(LOG), "-p", "none", "--out", str(tmp_path / "o"),
                                 "--cache-dir", str(cache), "-q"])
    assert result.exit_code == 2, result.output
    assert "exists and is not a folder; give --cache-dir (or $CTXREPLAY_CACHE_DIR) a folder" \
        in " ".join(result.output.split())


def test_inspect_tells_a_missing_path_from_one_it_cannot_read(tmp_path: Path) -> None:
    """A missing path or a folder is a usage error (2); a path that is there but is no regular
    file (a FIFO, a symlink loop) is an input that cannot be read (1), as ingest and run say."""
    (loop := tmp_path / "loop.jsonl").symlink_to(loop)
    assert runner.invoke(app, ["inspect", str(loop)]).exit_code == 1
    assert runner.invoke(app, ["ingest", str(loop), "--out", str(tmp_path / "d")]).exit_code == 1
    assert runner.invoke(app, ["inspect", str(tmp_path / "none.jsonl")]).exit_code == 2
    assert runner.invoke(app, ["inspect", str(tmp_path)]).exit_code == 2


@pytest.mark.parametrize("name", ["policies", "providers", "inspect", "calibrate", "run",
                                  "diff", "sweep", "fidelity"])
def test_an_unknown_column_is_a_usage_error_before_any_table(name: str, tmp_path: Path) -> None:
    """`inspect --columns nosuch` printed the records and runs tables, then the usage error
    (exit 2): a usage error comes before any table, on every table command (the arguments
    here are each command's least that work)."""
    args = _usage_args(name, tmp_path)
    if name == "sweep":
        args = [a.replace("=1e5", "=100000,200000") for a in args]
    result = runner.invoke(app, [*args, "--columns", "nosuch"])
    assert result.exit_code == 2, (name, result.output)
    assert "nosuch" in result.output and "┏" not in result.output, result.output


def test_a_table_with_no_rows_takes_any_columns(tmp_path: Path) -> None:
    """Harness compactions of a log that has none: the table has no rows, so no columns;
    `--columns source` (one of its columns) said `no column source; the table has ` (an empty
    list) and exit 2."""
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(line for line in LOG.read_text().splitlines()
                               if "compact" not in line) + "\n")
    result = runner.invoke(app, ["calibrate", str(plain), "--compactions", "--columns",
                                 "source", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "no column" not in result.output


@pytest.mark.parametrize("extra, said", [
    ([], ["--axis", "--grid"]),
    (["--axis", "server.window_tokens=100000,200000", "--samples", "2"], ["--samples", "random"]),
    (["--axis", "server.window_tokens=100000,200000", "--seed", "3"], ["--seed", "random"]),
])
def test_a_sweep_without_axes_or_with_draws_and_no_random_design(extra: list[str],
                                                                 said: list[str],
                                                                 tmp_path: Path) -> None:
    """No --axis and no --grid said `<--axis>: grid: expected a mapping of field paths to
    values`; --samples or --seed with the grid design were taken and never used (exit 0)."""
    result = runner.invoke(app, ["sweep", str(LOG), "-p", "none", *extra, "--out",
                                 str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert all(s in text for s in said), text
    assert not (tmp_path / "o").exists()
    drawn = runner.invoke(app, ["sweep", str(LOG), "-p", "none", *extra, "--design", "random",
                                "--out", str(tmp_path / "o2"), "--cache-dir",
                                str(tmp_path / "c")]) if extra else None
    assert drawn is None or drawn.exit_code == 0, drawn.output if drawn else ""


@pytest.mark.parametrize("fmt", [[], ["--csv"]])
def test_a_column_named_twice_is_shown_once(fmt: list[str]) -> None:
    """``--columns name,provider,name`` ended every table command in an IndexError traceback
    (exit 1): the row kept each column once, the header twice."""
    result = runner.invoke(app, ["policies", "--columns", "name,provider,name", *fmt])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    header = result.stdout.splitlines()[0 if fmt else 2]
    assert header.count("name") == 1 and "provider" in header, header


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_provider_is_a_usage_error(tmp_path: Path, value: str) -> None:
    """``--provider ''`` (an unset ``$PROVIDER``) priced every policy under its own provider,
    exit 0, as if the option were not given."""
    result = runner.invoke(app, [*_usage_args("run", tmp_path), "--provider", value])
    assert result.exit_code == 2, result.output
    assert "an empty name (an unset variable?)" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("argv", "named"), [
    (["run", "-p", "none", str(LOG), "--out", ""], "'--out'"),
    (["run", "-p", "none", str(LOG), "--out="], "'--out'"),
    (["run", "-p", "none", str(LOG), "--cache-dir", ""], "'--cache-dir'"),
    (["run", "-p", "none", ""], "'PATHS'"),
    (["report", "-p", "none", str(LOG), "--out", ""], "'--out'"),
    (["ingest", str(LOG), "--out", ""], "'--out'"),
    (["check", str(LOG), "-p", "none", "--baseline", ""], "'--baseline'"),
    (["redact", str(LOG), "--out", "x", "--salt-file", ""], "'--salt-file'"),
    (["sql", "SELECT 1", "-t", ""], "'--traces/-t'"),
    (["sql", "SELECT 1", ""], "'PATHS'"),
    (["inspect", ""], "'FILE'"),
    (["runs", ""], "'DATASET'"),
])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], named: str) -> None:
    """``--out "$OUT"`` with OUT unset wrote the traces and summary.json into the current
    folder (a path of '' is '.'), ``run "$LOGS"`` read the current folder as the logs."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {named}: an empty path" in " ".join(result.output.split())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--minimise", "--maximise", "--scheduler"])
def test_an_empty_sweep_objective_or_scheduler_is_a_usage_error(tmp_path: Path,
                                                                option: str) -> None:
    """``--maximise ''`` (an unset ``$METRIC``) chose the setting sending the MOST tokens (the
    objective fell back to tokens_sent, the sense stayed 'maximise') and said 'best by
    tokens_sent (min …)' over it; ``--minimise ''`` and ``--scheduler ''`` were dropped."""
    result = runner.invoke(app, [*_usage_args("sweep", tmp_path), option, ""])
    assert result.exit_code == 2, result.output
    assert "an empty name (an unset variable?)" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()
