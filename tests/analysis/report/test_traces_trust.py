"""``--traces DIR`` (``diff``, ``report``, ``sql -t``) reads a ``replay run`` output folder as any
input: a summary.json or trace file that is not what ``replay run`` writes — missing, cut, a
symlink planted, not JSON, no policy or an invalid one, another engine's, not Parquet, other
columns — is one line naming it and exit 1 (an input that failed, as a damaged dataset: the
command was right, the folder is not), never a traceback nor figures of another engine compared
as this one's.  So is a summary.json that does not describe the traces beside it (its policy
edited, another run's summary, its runs or their request counts not the traces'): the traces
would be judged under a policy, or read as runs, they are not.  Exit 2 stays for what the user
asked wrong: a folder that is no run folder at all, traces of other runs compared, a --data
without the traced runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from typer.testing import CliRunner

from replay.cli import app

LOG = Path(__file__).parents[3] / "logs" / "test-fix-loop.jsonl"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traces") / "none"
    res = CliRunner().invoke(app, ["run", str(LOG), "-p", "none", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same log replayed under another policy (its summary names claude-code)."""
    out = tmp_path_factory.mktemp("traces") / "claude-code"
    res = CliRunner().invoke(app, ["run", str(LOG), "-p", "claude-code", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def _summary(text: str) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        (d / "summary.json").write_text(text)
        return d / "summary.json"
    return damage


def _other_version(d: Path) -> Path:
    path = d / "summary.json"
    path.write_text(path.read_text().replace('"trace_version": "', '"trace_version": "0', 1))
    return path


def _requests(table: pa.Table) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        pq.write_table(table, d / "traces" / "requests.parquet")
        return d / "traces" / "requests.parquet"
    return damage


def _garbage(d: Path) -> Path:
    (d / "traces" / "actions.parquet").write_bytes(b"PAR1 not parquet")
    return d / "traces" / "actions.parquet"


def _old_trace(d: Path) -> Path:
    path = d / "traces" / "evictions.parquet"
    t = pq.read_table(path)
    meta = {**t.schema.metadata, b"trace_version": b"1"}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return path


def _column_dropped(d: Path) -> Path:
    path = d / "traces" / "requests.parquet"
    t = pq.read_table(path)
    pq.write_table(t.drop_columns(["truth_tokens"]).replace_schema_metadata(t.schema.metadata),
                   path)
    return path


def _edit(change: Callable[[dict], None]) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        path = d / "summary.json"
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))
        return path
    return damage


def _rename(doc: dict) -> None:
    doc["policy"]["name"] = "other"


def _one_request_less(doc: dict) -> None:
    doc["runs"][0]["n_requests"] -= 1


def _another_run(doc: dict) -> None:
    doc["runs"][0]["run_id"] = "not-this-run"


def _no_runs(doc: dict) -> None:
    doc["runs"] = []


def _runs_not_rows(doc: dict) -> None:
    doc["runs"] = 5


def _run_twice(doc: dict) -> None:
    doc["runs"].append(doc["runs"][0])


def _stray_eviction(d: Path) -> Path:
    path = d / "traces" / "evictions.parquet"
    t = pq.read_table(path)
    row = {f.name: None for f in t.schema}
    row.update(run_id="not-this-run", policy="none", msg=0, block=0, request=0, tier="t",
               fate="dropped", induced=False)
    pq.write_table(pa.concat_tables([t, pa.Table.from_pylist([row], schema=t.schema)]), path)
    return path


def _unlinked(table: str) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        (d / "traces" / f"{table}.parquet").unlink()
        return d / "traces" / f"{table}.parquet"
    return damage


def _cut(table: str) -> Callable[[Path], Path]:
    def damage(d: Path) -> Path:
        path = d / "traces" / f"{table}.parquet"
        path.write_bytes(path.read_bytes()[:300])
        return path
    return damage


def _symlinked(table: str) -> Callable[[Path], Path]:
    """The trace replaced by a symlink to a copy of itself elsewhere (the very bytes)."""
    def damage(d: Path) -> Path:
        path = d / "traces" / f"{table}.parquet"
        elsewhere = d.parent / f"elsewhere-{table}.parquet"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
        return path
    return damage


def _symlinked_traces(d: Path) -> Path:
    """traces/ replaced by a symlink to a copy of itself elsewhere (was followed, exit 0)."""
    path = d / "traces"
    elsewhere = d.parent / "elsewhere-traces"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    return path


def _symlinked_summary(d: Path) -> Path:
    path = d / "summary.json"
    elsewhere = d.parent / "elsewhere-summary.json"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    return path


def _summary_unlinked(d: Path) -> Path:
    (d / "summary.json").unlink()
    return d / "summary.json"


def _invalid_policy(doc: dict) -> None:
    doc["policy"]["tiers"] = "not a list"


def _escape_in_policy_key(doc: dict) -> None:
    doc["policy"]["\x1b]0;owned\x07\x1b[2Jkey"] = 1


def _set(table: str, column: str, value: Callable[[list], list]) -> Callable[[Path], Path]:
    """A trace column's values changed, the file otherwise as written (schema, metadata)."""
    def damage(d: Path) -> Path:
        path = d / "traces" / f"{table}.parquet"
        t = pq.read_table(path)
        i = t.schema.get_field_index(column)
        values = pa.array(value(t[column].to_pylist()), t.schema.field(i).type)
        pq.write_table(t.set_column(i, t.schema.field(i), values), path)
        return path
    return damage


DAMAGES: dict[str, tuple[Callable[[Path], Path], str]] = {
    # each of these four was read as figures: 2^62 an OverflowError traceback, the others
    # compared as if a replay had written them
    "2^62 tokens": (_set("requests", "truth_tokens", lambda v: [2**62] * len(v)),
                    "(truth_tokens: values beyond what a replay writes)"),
    "nan cost": (_set("requests", "cost_usd", lambda v: [float("nan")] * len(v)),
                 "(cost_usd: a value that is not a finite number)"),
    "negative size": (_set("requests", "raw_tokens", lambda v: [-5] * len(v)),
                      "(raw_tokens: a negative value)"),
    "requests renumbered": (_set("requests", "request", lambda v: [0] * len(v)),
                            "(request numbers not 0, 1, … in each run's rows)"),
    "truncated json": (_summary('{"policy": '), "not a `replay run` summary (not JSON"),
    "no policy": (_summary('{"runs": []}'), "not a `replay run` summary (no policy mapping)"),
    "digits": (_summary('{"policy": 1' + "0" * 5000 + "}"), "(not JSON: Exceeds the limit"),
    "nested too deeply": (_summary("[" * 100_000 + "]" * 100_000),
                          "(not JSON: maximum recursion depth"),
    "other engine's summary": (_other_version, "this ctxreplay writes"),
    "not parquet": (_garbage, "not a `replay run` trace"),
    "foreign parquet": (_requests(pa.table({"x": [1]})), "trace version ''"),
    "older engine's trace": (_old_trace, "trace version '1'"),
    "a column dropped": (_column_dropped, "its columns are not the requests table's"),
    "policy renamed": (_edit(_rename), "its policy is not the one it was written with"),
    "a count edited": (_edit(_one_request_less), "but {requests} holds"),
    "another run's row": (_edit(_another_run), "has no row, but {requests} holds"),
    "no runs": (_edit(_no_runs), "has no row, but {requests} holds"),
    "runs not rows": (_edit(_runs_not_rows), "not a `replay run` summary (runs: not a list"),
    "a run twice": (_edit(_run_twice), "(a run_id in two rows)"),
    "evictions of no run": (_stray_eviction, "rows of run 'not-this-run', which has no request"),
    # what the exit-2 mix-up was first seen with (a run folder damaged on disk)
    "a trace missing": (_unlinked("actions"), "trace (missing; `replay run` writes it)"),
    "a trace cut": (_cut("requests"), "not a `replay run` trace (Parquet magic bytes"),
    "a trace planted as a symlink": (_symlinked("requests"), "trace (a symlink, not followed)"),
    "a summary planted as a symlink": (_symlinked_summary, "summary: a symlink"),
    "traces/ planted as a symlink": (_symlinked_traces,
                                     "not a `replay run` traces folder (a symlink, not followed)"),
    "the summary missing": (_summary_unlinked, "not a `replay run` summary:"),
    "an invalid policy in the summary": (_edit(_invalid_policy), "summary (its policy: "),
    "terminal escapes in the summary's policy": (
        _edit(_escape_in_policy_key), "(its policy: \\x1b]0;owned\\x07\\x1b[2Jkey: unknown key"),
}


def _sql(bad: Path, good: Path) -> list[str]:
    pytest.importorskip("duckdb")
    return ["sql", "SELECT count(*) FROM trace_requests", "-t", str(bad)]


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
@pytest.mark.parametrize("command", [
    lambda bad, good: ["diff", "--traces", str(bad), str(good)], _sql], ids=["diff", "sql"])
def test_a_damaged_run_folder_is_one_line_and_exit_1(
        good: Path, tmp_path: Path, damage: str,
        command: Callable[[Path, Path], list[str]]) -> None:
    """``sql -t`` reads a run folder as ``diff --traces`` does (README: "and ``sql -t``
    likewise"): it checked only that each trace was a regular Parquet file, and queried another
    engine's traces, other columns, 2^62 or NaN or negative figures, a folder with no summary
    or one describing other traces as this engine's, exit 0."""
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    make, message = DAMAGES[damage]
    path = make(bad)
    res = CliRunner().invoke(app, command(bad, good))
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    message = message.format(requests=bad / "traces" / "requests.parquet")
    said = " ".join(res.output.split())
    assert said.startswith(f"error: {path}: ") and message in said, said
    assert "\x1b" not in res.output and "\x07" not in res.output  # escaped, never sent


@pytest.mark.parametrize("damage", ["a trace missing", "a trace cut",
                                    "a trace planted as a symlink", "the summary missing",
                                    "traces/ planted as a symlink"])
def test_report_says_a_damaged_run_folder_and_exits_1(good: Path, tmp_path: Path,
                                                      damage: str) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    make, message = DAMAGES[damage]
    path = make(bad)
    res = CliRunner().invoke(app, ["report", "--traces", str(bad), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert said.startswith(f"error: {path}: ") and message in said, said
    assert not (tmp_path / "r").exists()  # its empty output folder removed again


def test_a_folder_that_is_no_run_folder_is_a_usage_error(good: Path, tmp_path: Path) -> None:
    """Neither summary.json nor traces/: the user named the wrong folder (exit 2), for each
    command that reads run folders."""
    (tmp_path / "logs").mkdir()
    for command in (["diff", "--traces", str(good), str(tmp_path / "logs")],
                    ["report", "--traces", str(tmp_path / "logs"), "--out", str(tmp_path / "r")],
                    ["sql", "SELECT 1", "-t", str(tmp_path / "logs")]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 2, (command, res.output)
        assert f"{tmp_path / 'logs'}: " in res.output, res.output


def test_another_policys_summary_beside_the_traces_is_refused(good: Path, other: Path,
                                                              tmp_path: Path) -> None:
    """A summary intact in itself (its digest is its policy's) beside another policy's traces:
    the repro's traceback (trace holds policies ['none'], expected only 'claude-code')."""
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    shutil.copy(other / "summary.json", bad / "summary.json")
    for command in (["diff", "--traces", str(good), str(bad)],
                    ["report", "--traces", str(bad), "--out", str(tmp_path / "r")]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 1, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert (f"{bad / 'summary.json'}: names policy 'claude-code', but "
                f"{bad / 'traces' / 'requests.parquet'} holds rows of 'none'"
                in " ".join(res.output.split()))
    assert not (tmp_path / "r" / "report.html").exists()


def test_report_refuses_a_damaged_run_folder(good: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    path = _other_version(bad)
    res = CliRunner().invoke(app, ["report", "--traces", str(bad), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1, res.output
    assert f"{path}: trace version" in res.output
    assert not (tmp_path / "r" / "report.html").exists()


def test_an_intact_run_folder_still_reads(good: Path) -> None:
    res = CliRunner().invoke(app, ["diff", "--traces", str(good), str(good), "--json"])
    assert res.exit_code == 0, res.output


ELSE = Path(__file__).parents[3] / "logs" / "write-heavy.jsonl"


def _run_to(out: Path, *logs: Path) -> Path:
    res = CliRunner().invoke(app, ["run", *map(str, logs), "-p", "none", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def _refused(res: Result) -> str:
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return " ".join(res.output.split())


def test_traces_of_other_runs_are_refused_not_compared_in_part(good: Path, other: Path,
                                                               tmp_path: Path) -> None:
    """Traces of other logs: a diff of no run in common ended in a traceback ('the two metric
    frames have no run in common', exit 1), as did a report; a diff of some runs in common
    compared those and left the others out unsaid (exit 0)."""
    elsewhere = _run_to(tmp_path / "else", ELSE)
    more = _run_to(tmp_path / "more", LOG, ELSE)
    n_good = len(pq.read_table(good / "traces" / "requests.parquet")
                 .column("run_id").unique())
    said = _refused(CliRunner().invoke(app, ["diff", "--traces", str(good), str(elsewhere)]))
    assert f"{elsewhere}: its traces hold 1 runs, {good}'s {n_good} (1 only in {elsewhere}, " \
           f"{n_good} only in {good})" in said
    said = _refused(CliRunner().invoke(app, ["diff", "--traces", str(other), str(more)]))
    assert f"(1 only in {more}, 0 only in {other})" in said
    _refused(CliRunner().invoke(app, ["report", "--traces", str(good), str(elsewhere),
                                      "--out", str(tmp_path / "r")]))
    assert not (tmp_path / "r" / "report.html").exists()


def test_a_dataset_without_the_traced_runs_is_refused(good: Path, other: Path) -> None:
    """--data of another log: a KeyError traceback (exit 1)."""
    said = _refused(CliRunner().invoke(app, ["diff", "--traces", str(good), str(other),
                                             "--data", str(ELSE)]))
    assert f"{good}: 1 of the 1 runs the traces hold are not in {ELSE}" in said


def test_the_dataset_found_for_traces_is_a_cache_to_fix_or_an_input(tmp_path: Path) -> None:
    """With --traces and no --data, the project cache's dataset is found, not named: damaged,
    it is a folder to fix (exit 2, as every command's cache); the same dataset named with
    --data is an input that failed (exit 1)."""
    cache = tmp_path / "cache"
    res = CliRunner().invoke(app, ["run", str(LOG), "-p", "none", "--out", str(tmp_path / "a"),
                                   "--cache-dir", str(cache), "-q"])
    assert res.exit_code == 0, res.output
    manifest = cache / "dataset" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"schema_version": "', '"schema_version": "0'))
    traces = ["diff", "--traces", str(tmp_path / "a"), str(tmp_path / "a")]
    res = CliRunner().invoke(app, [*traces, "--cache-dir", str(cache)])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert f"error: {manifest}: schema version" in said and "the project cache's dataset" in said
    res = CliRunner().invoke(app, [*traces, "--data", str(cache / "dataset")])
    assert res.exit_code == 1, res.output
    assert f"error: {manifest}: schema version" in " ".join(res.output.split())
