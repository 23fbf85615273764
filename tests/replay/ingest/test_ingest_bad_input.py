"""Bad input to ingest: each problem reported as ``file:line: what``, the rest of the file and the
other files kept.

Exit codes (``replay ingest``): 1 when a file could not be ingested at all (or, with
``--strict``, at the first issue of any kind); 0 when every file was ingested, even if some of
its lines were reported and skipped.
"""

from __future__ import annotations

import json
import os
import random
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from replay.ingest import batch, store
from replay.ingest import discover as discover_module
from replay.ingest.batch import ingest
from replay.ingest.discover import discover, sources
from replay.ingest.ingest_report import IngestReport
from tests.replay.ingest.ingest_helpers import (
    _claude,
    _cli,
    _cli_runs,
    _pairing_violations,
    _runs,
    _write,
)


def _batch(tmp_path: Path, bad_name: str, bad: bytes | list[str], *,
           end: str = "\n") -> tuple[Path, Path, Path]:
    """A folder with one bad file (sorted first) and one good transcript after it."""
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    bad_path = logs / bad_name
    if isinstance(bad, bytes):
        bad_path.write_bytes(bad)
    else:
        _write(bad_path, bad, end=end)
    good = _write(logs / "zz_good.jsonl", _claude(2, tag="good"))
    return logs, bad_path, good


def _assert_issue(report: IngestReport, path: Path, line: int, *words: str) -> None:
    """Exactly one issue, naming the file and line (0: the whole file) and saying what."""
    assert len(report.issues) == 1, [str(i) for i in report.issues]
    text = str(report.issues[0])
    where = f"{path}:{line}: " if line else f"{path}: "
    assert text.startswith(where), text
    for w in words:
        assert w in text, text


def _assert_good_kept(out: Path, report: IngestReport) -> None:
    assert "zz_good.jsonl" in report.parsed
    (good,) = [r for r in _runs(out) if r["source"] == "zz_good.jsonl"]
    assert (good["n_requests"], good["n_tool_calls"], good["n_tool_results"]) == (3, 2, 2)


def _assert_cli(logs: Path, tmp_path: Path, *, exit_code: int, bad_name: str,
                bad_kept: bool, strict: bool = True) -> None:
    result = _cli("ingest", str(logs), "--out", str(tmp_path / "cli"), "-q")
    assert result.exit_code == exit_code, result.output
    assert bad_name in result.stderr  # the issue is printed
    assert {r["source"] for r in _cli_runs(tmp_path / "cli")} == \
        {"zz_good.jsonl", *([bad_name] if bad_kept else [])}
    if not strict:
        return
    # --strict: the first issue fails the ingest and stops it (the good file, sorted after the
    # bad one, is not ingested; nothing from the bad file is stored)
    strict_run = _cli("ingest", str(logs), "--out", str(tmp_path / "strict"), "--strict", "-q",
                  "--jobs", "1")
    assert strict_run.exit_code == 1, strict_run.output
    assert store.read_manifest(tmp_path / "strict") == {}


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    lines = _claude(4, tag="bad")
    lines.insert(5, '{"type": "user", "message": {oops')
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 6, "malformed JSON")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (5, 4, 4)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_truncated_last_line(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    lines.append(lines[-1][: len(lines[-1]) // 2])  # a record cut while being written
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines, end="")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, len(lines), "incomplete last line")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_invalid_utf8_bytes(tmp_path: Path) -> None:
    lines = [x.encode() for x in _claude(3, tag="bad")]
    lines.insert(3, b'{"type": "user", "message": {"role": "user", "content": "caf\xe9 \xff"}}')
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", b"\n".join(lines) + b"\n")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 4, "invalid UTF-8")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert run["n_requests"] == 4
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_empty_file(tmp_path: Path) -> None:
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", b"")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "empty file")
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False)


def test_binary_file(tmp_path: Path) -> None:
    data = random.Random(7).randbytes(20_000)
    data = data[:100] + b"\x00\x00" + data[100:]
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", data)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "binary file")
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False)


def test_unknown_format_json(tmp_path: Path) -> None:
    logs, bad, _ = _batch(tmp_path, "a_bad.json",
                          json.dumps({"name": "not a log", "values": [1, 2, 3]}).encode())
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "unknown format", "--format")
    assert report.failed == ["a_bad.json"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.json", bad_kept=False)


def test_tool_result_without_its_call(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad", orphan_step=1)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    orphan_line = 1 + 2 * 1 + 2  # prompt, step 0 (call, result), step 1 call, then its result
    assert "toolu_bad_never_called" in lines[orphan_line - 1]
    # the call whose result was replaced got none, and step 2's request follows it: said too
    (unanswered,) = [i for i in report.issues if "got no result" in i.reason]
    assert "1 tool call(s)" in unanswered.reason and "'toolu_bad_1'" in unanswered.reason
    report.issues.remove(unanswered)
    _assert_issue(report, bad, orphan_line, "toolu_bad_never_called", "no earlier call",
                  "orphan")
    _assert_good_kept(tmp_path / "store", report)
    tables = store.read_store(tmp_path / "store")
    (run,) = [r for r in tables.runs.to_pylist() if r["source"] == "a_bad.jsonl"]
    assert run["n_orphan_results"] == 1 and run["n_tool_results"] == 3  # kept as a row
    msgs = [m for m in tables.messages.to_pylist() if m["run_id"] == run["run_id"]]
    assert _pairing_violations(msgs) == Counter({run["run_id"]: 1})
    (orphan,) = [m for m in msgs if m["call_id"] == "toolu_bad_never_called"]
    assert orphan["kind"] == "tool_result" and orphan["text"] == "contents of f1.py\nline 2"
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_single_50mb_line(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    huge = json.loads(lines[2])
    huge["uuid"] = "huge"
    huge["message"]["content"][0]["content"] = "0123456789abcdef\n" * (50_000_000 // 17)
    big = json.dumps(huge)
    assert len(big) > 50_000_000
    lines.insert(3, big)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    del huge, lines

    tracemalloc.start()
    try:
        report = ingest([logs], tmp_path / "store", jobs=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # memory: the file once and its lines once; not decoded, parsed or tokenised
    assert peak < 3 * len(big), peak
    _assert_issue(report, bad, 4, "line of", "bytes", "limit", "skipped")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True,
                strict=False)


def test_file_that_is_one_50mb_line(tmp_path: Path) -> None:
    rec = json.loads(_claude(1)[0])  # Claude Code's key order: the content comes late
    rec["message"]["content"] = "y" * 50_000_000
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", [json.dumps(rec)])
    report = ingest([logs], tmp_path / "store", jobs=1)
    assert report.failed == ["a_bad.jsonl"]
    assert next(str(i) for i in report.issues).startswith(f"{bad}:1: line of 50,000,")
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False,
                strict=False)


def test_file_that_is_one_50mb_line_of_unknown_shape(tmp_path: Path) -> None:
    rec = {"content": "y" * 50_000_000, **json.loads(_claude(1)[0])}  # keys after 64 KiB
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", [json.dumps(rec)])
    report = ingest([logs], tmp_path / "store", jobs=1)
    # recognised from its strings shortened (the keys after the 50 MB value), then the line
    # is over the per-record limit: said, and the file fails
    assert [(i.line, i.reason.split(" is over")[0]) for i in report.issues] == [
        (1, f"line of {len(json.dumps(rec)):,} bytes"), (0, "no user or assistant records")]
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    forced = ingest([bad], tmp_path / "forced", jobs=1, fmt="claude_code")
    assert forced.failed == ["a_bad.jsonl"]
    assert str(forced.issues[0]).startswith(f"{bad}:1: line of 50,000,")


def test_deeply_nested_json_file(tmp_path: Path) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    logs, bad, _ = _batch(tmp_path, "a_bad.json", deep.encode())
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 1, "nested too deeply")
    assert report.failed == ["a_bad.json"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.json", bad_kept=False)


def test_deeply_nested_line_in_a_transcript(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    lines.insert(4, '{"type": "user", "x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_001)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 5, "nested too deeply", "skipped")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_strict_stops_at_the_first_issue_with_workers(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for k in range(4):
        _write(logs / f"f{k}.jsonl", _claude(2, tag=f"f{k}"))
    lines = _claude(2, tag="bad")
    lines.insert(2, "not json")
    _write(logs / "f1b.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=2, strict=True)
    assert report.parsed == ["f0.jsonl", "f1.jsonl"] and report.failed == ["f1b.jsonl"]
    assert sorted(store.read_manifest(tmp_path / "store")) == ["f0.jsonl", "f1.jsonl"]
    relaxed = ingest([logs], tmp_path / "store", jobs=2)
    assert sorted(relaxed.parsed) == ["f1b.jsonl", "f2.jsonl", "f3.jsonl"]
    assert sorted(relaxed.cached) == ["f0.jsonl", "f1.jsonl"]


def test_same_relative_path_under_two_roots_is_not_merged(tmp_path: Path) -> None:
    a = _write(tmp_path / "a" / "s.jsonl", _claude(1, tag="a"))
    b = _write(tmp_path / "b" / "s.jsonl", _claude(2, tag="b"))
    report = ingest([a.parent, b.parent], tmp_path / "store", jobs=1)
    assert report.failed == [] and len(report.parsed) == 2
    runs = {r["source"]: r["n_requests"] for r in _runs(tmp_path / "store")}
    assert sorted(runs.values()) == [2, 3] and "s.jsonl" in runs


def test_logs_in_a_folder_named_data_are_found(tmp_path: Path) -> None:
    _write(tmp_path / "logs" / "data" / "s.jsonl", _claude(1))
    (tmp_path / "logs" / "store").mkdir()
    ingest([tmp_path / "logs" / "data"], tmp_path / "logs" / "store", jobs=1)  # a store inside
    found = [f.relative_to(tmp_path / "logs").as_posix() for f, _ in discover([tmp_path / "logs"])]
    assert found == ["data/s.jsonl"]


def test_names_and_order_of_found_files_resolve_a_path_only_when_its_names_are_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are listed in the order of their paths (``a/x`` before ``a-b/x``, as paths sort,
    not as strings do); a file is stored under its path relative to its folder, its folder's
    name in front when that is taken, its full path when both are, and only then is its path
    resolved (four lstat calls a file: a second in all for 10,000 files, when every file was)."""
    for folder in ("x/a/logs", "y/a/logs", "z/a/logs"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "r.jsonl").write_text("{}\n")
    for name in ("a/x.jsonl", "a-b/x.jsonl", "a-b.jsonl", "a.json"):
        (tmp_path / "w" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "w" / name).write_text("{}\n")
    resolved: list[Path] = []
    real = discover_module._resolved
    monkeypatch.setattr(discover_module, "_resolved",
                        lambda p: resolved.append(p) or real(p))  # type: ignore[func-returns-value]
    roots = [tmp_path / f for f in ("x/a/logs", "y/a/logs", "z/a/logs", "w")]
    found = discover(roots + [tmp_path / "x/a/logs/r.jsonl"])
    assert [f.relative_to(tmp_path).as_posix() for f, _ in found] == [
        "x/a/logs/r.jsonl", "y/a/logs/r.jsonl", "z/a/logs/r.jsonl",
        "w/a/x.jsonl", "w/a-b/x.jsonl", "w/a-b.jsonl", "w/a.json"]
    assert [f for f, _ in found][3:] == sorted(f for f, _ in found[3:])
    assert sources(found) == ["r.jsonl", "logs/r.jsonl",
                              (tmp_path / "z/a/logs/r.jsonl").resolve().as_posix(),
                              "a/x.jsonl", "a-b/x.jsonl", "a-b.jsonl", "a.json"]
    assert resolved == [tmp_path / "z/a/logs/r.jsonl"]


def test_the_counter_is_warmed_once_before_workers_fork(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers inherit a warm counter (``tokens.warm``, in the parent, once per tokenizer) rather
    than each building its regex's Unicode tables again; one process warms nothing up front."""
    calls: list[tuple[str, int]] = []
    monkeypatch.setattr(batch, "warm", lambda name: calls.append((name, os.getpid())))
    logs = tmp_path / "logs"
    for k in range(3):
        _write(logs / f"f{k}.jsonl", _claude(2, tag=f"f{k}", texts=["ünïcode wörds"]))
    assert ingest([logs], tmp_path / "one", jobs=1).parsed and calls == []
    report = ingest([logs], tmp_path / "two", jobs=2, tokenizers=("o200k_base", "cl100k_base"))
    assert len(report.parsed) == 3
    assert calls == [("o200k_base", os.getpid()), ("cl100k_base", os.getpid())]
