"""A big Claude Code file (its runs tokenised and written one at a time) holding a value nested
within ``json_depth.MAX_DEPTH`` but deeper than the parser's stack has room for: its parse
starts over as a whole file's does (``parse_file.parse_source``), on a stack with room, the
runs already written forgotten (``NewEntry.restart``), and the file is stored as it is when
taken whole; before, the file failed ("claude_code parser failed: JSON nested too deeply").

The thresholds are set as in ``test_ingest_streamed_runs`` (every file takes the big files'
path, row groups of 700 bytes of text, so a Parquet writer is open when the parse starts
over)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import entry_file, store
from replay.ingest.batch import ingest
from replay.ingest.parsers import claude_code, claude_code_runs
from replay.ingest.parsers.json_depth import MAX_DEPTH, decoded
from tests.replay.ingest.test_ingest_streamed_runs import (
    SUMMARY,
    _file,
    _rec,
    _session,
    _store_files,
    _streamed,
    _wrapped,
)

DEEP = MAX_DEPTH - 10
"""Levels of the planted value: decoded (within ``MAX_DEPTH``), but its text made by
recursion a level at a time, deeper than a stack already some frames deep has room for."""


def _deep_file(path: Path) -> Path:
    """Three sessions, the third's last tool call holding the deep value: two sessions' runs
    are written before the parse meets it."""
    call = {"type": "tool_use", "id": "s3-deep", "name": "Edit", "input": {"v": "PLANT"}}
    deep = _rec("s3", "s3-deep-a", "s3-c0", "assistant", [call], mid="s3-deep-m")
    deep = deep.replace('"PLANT"', "[" * DEEP + "]" * DEEP)
    return _file(path, [SUMMARY, *_session("s1"), *_session("s2", 5, 3), *_session("s3", 2, 0),
                        deep])


def _attempts(mp: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    _wrapped(mp, claude_code, "iter_runs", lambda *_a, **_k: calls.append(1))
    return calls


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_big_file_nested_deep_is_parsed_again_and_stored_as_taken_whole(
        tmp_path: Path) -> None:
    path = _deep_file(tmp_path / "logs" / "s.jsonl")
    assert decoded(json.loads, path.read_bytes().splitlines()[-1])  # valid, within MAX_DEPTH
    stores, reports = {}, {}
    for on in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            _streamed(mp, on)
            mp.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 700)
            calls = _attempts(mp)
            reports[on] = ingest([path.parent], tmp_path / f"ds-{on}", jobs=1)
        stores[on] = _store_files(tmp_path / f"ds-{on}")
        if on:
            assert len(calls) == 2  # the first parse met RecursionError: parsed again
    assert reports[True].ok, reports[True].issues
    assert reports[True].n_runs == reports[False].n_runs == 8
    assert stores[True] == stores[False]  # (no part of the first attempt's file left)
    gc.collect()  # an abandoned Parquet writer would write into a closed file here


def test_a_big_file_changed_before_its_second_parse_fails_and_leaves_no_entry(
        tmp_path: Path) -> None:
    """The first parse met RecursionError after writing runs, and the file changed on disk
    before it could be read again: the file fails with that said, nothing of it is stored."""
    path = _deep_file(tmp_path / "logs" / "s.jsonl")
    out = tmp_path / "ds"

    def change(*_: Any, **__: Any) -> None:
        path.write_text(path.read_text() + _rec("s4", "s4-u", None, "user", "more") + "\n")

    with pytest.MonkeyPatch.context() as mp:
        _streamed(mp, True)
        mp.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 700)
        _wrapped(mp, claude_code_runs, "_run", lambda *_a, **_k: None)
        real = claude_code.iter_runs

        def iter_runs(src: Any, issues: Any) -> Any:
            for n, got in enumerate(real(src, issues)):
                yield got
                if n == 2:
                    src.release_data()
                    change()
                    raise RecursionError("maximum recursion depth exceeded")

        mp.setattr(claude_code, "iter_runs", iter_runs)
        report = ingest([path.parent], out, jobs=1)
    assert report.failed == ["s.jsonl"]
    assert [i.reason for i in report.issues] == [
        ("claude_code parser failed: ValueError: nested too deeply for the first parse, and "
        "the file changed on disk before it could be read again")]
    assert not [p for p in (out / "data").iterdir()]
    assert "s.jsonl" not in store.read_manifest(out)
