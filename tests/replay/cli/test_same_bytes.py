"""Two input files of the same bytes (a session copied into two folders, a backup beside it)
are each a run of their own, by design (``replay.ingest.discover``), so every total counts the
run once per copy: `replay run` over a real sample given twice summed its tokens twice without
a word. Every command that reads logs, and `replay runs` of a dataset, now says which files are
the same (``replay.ingest.entry_notes.same_bytes``), and `ingest --json` lists them."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

_ODD = "b/\x1b[31mcopy.jsonl"
"""A copy's name with a terminal escape: printed escaped, as any name from the disk is."""


@pytest.fixture(scope="module")
def logs(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("logs")
    for name, sample in (("a/tool_heavy.jsonl", "tool_heavy.jsonl"),
                         ("b/tool_heavy.jsonl", "tool_heavy.jsonl"), (_ODD, "tool_heavy.jsonl"),
                         ("a/short.jsonl", "short.jsonl")):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes((samples / "claude-code" / sample).read_bytes())
    return folder


def _groups(folder: Path) -> list[list[str]]:
    """The independent count: the files under ``folder`` grouped by their sha256."""
    by: defaultdict[str, list[str]] = defaultdict(list)
    for f in folder.rglob("*.jsonl"):
        by[hashlib.sha256(f.read_bytes()).hexdigest()].append(f.relative_to(folder).as_posix())
    return sorted(sorted(g) for g in by.values() if len(g) > 1)


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _said(err: str, groups: list[list[str]]) -> bool:
    (group,) = groups
    names = " = ".join(g.replace("\x1b", "\\x1b") for g in group)
    return (f"note: {len(group) - 1} input files hold the same bytes as another ({names})"
            in err and "\x1b" not in err)


def test_ingest_runs_and_run_say_which_files_are_the_same(logs: Path, tmp_path: Path) -> None:
    groups = _groups(logs)
    assert groups == [sorted(["a/tool_heavy.jsonl", "b/tool_heavy.jsonl", _ODD])]
    code, out, err = _cli("ingest", str(logs), "--out", str(tmp_path / "data"), "-q", "--json")
    assert code == 0 and json.loads(out)["same_bytes"] == groups
    code, out, err = _cli("ingest", str(logs), "--out", str(tmp_path / "data"), "-q")
    assert code == 0 and _said(err, groups)  # (reused from the cache: the same)
    code, out, err = _cli("runs", str(tmp_path / "data"))
    assert code == 0 and _said(err, groups)
    for paths in ([str(logs)], [str(tmp_path / "data")]):
        code, out, err = _cli("run", *paths, "-p", "none", "--cache-dir", str(tmp_path / "c"),
                              "--out", str(tmp_path / "out"), "-q", "--json")
        assert code == 0 and _said(err, groups)
        assert len(json.loads(out)) == 4  # (each copy still a run of its own)


def test_no_note_without_copies(logs: Path, tmp_path: Path) -> None:
    code, out, err = _cli("ingest", str(logs / "a"), "--out", str(tmp_path / "data"), "-q",
                          "--json")
    assert code == 0 and json.loads(out)["same_bytes"] == [] and "same bytes" not in err


def test_traces_say_the_copies_among_their_runs_not_the_caches(logs: Path,
                                                                tmp_path: Path) -> None:
    """`diff --traces` / `report --traces` without --data read the project cache, and the note
    named every copy in it, runs of other commands included ('2 input files hold the same bytes
    ...' beside traces of a.short.jsonl alone), which also broke `diff --traces --json` read as
    JSON where stderr is merged (test_diff's test_cli_diff_json_and_traces, by test order)."""
    cache = str(tmp_path / "c")
    for name, paths in (("one", [logs / "a" / "short.jsonl"]), ("all", [logs])):
        for policy in ("none", "claude-code"):
            code, _, err = _cli("run", *map(str, paths), "-p", policy, "--cache-dir", cache,
                                "--out", str(tmp_path / f"{name}-{policy}"), "-q")
            assert code == 0, err
    code, out, err = _cli("diff", "--traces", str(tmp_path / "one-none"),
                          str(tmp_path / "one-claude-code"), "--cache-dir", cache, "--json")
    assert code == 0 and json.loads(out)["rows"] and "same bytes" not in err, err
    code, out, err = _cli("diff", "--traces", str(tmp_path / "all-none"),
                          str(tmp_path / "all-claude-code"), "--cache-dir", cache, "-q")
    assert code == 0 and _said(err, _groups(logs)), err
    code, out, err = _cli("report", "--traces", str(tmp_path / "one-none"), "--cache-dir", cache,
                          "--out", str(tmp_path / "r"), "-q", "--max-timelines", "0")
    assert code == 0 and "same bytes" not in err, err
