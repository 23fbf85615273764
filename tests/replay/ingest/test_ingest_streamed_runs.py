"""A big Claude Code file's runs are tokenised and written one at a time (#24 item 3): the
parser makes a session's runs as soon as the file is read past its last record
(``claude_code_ends``), ``parse_file`` tokenises each and gives it to the store's ``NewEntry``
before the next is made, and the entry is the bytes it was when every run was held at once.

The files here are small: the thresholds (``parse_file.STREAMED_MIN_BYTES``, the parser's
``STREAM_MIN_BYTES``, ``jsonl_reread.STREAM_MIN_BYTES``) are set to 0 to take the big files'
path, and each result is compared with the same file's taken whole."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.ingest import entry_file, parse_file, store
from replay.ingest.batch import ingest
from replay.ingest.parsers import claude_code, jsonl_reread
from replay.ingest.parsers.claude_code_ends import session_ends
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source

BIG = 1 << 40


def _rec(sid: str, uuid: str, parent: str | None, kind: str, content: Any, mid: str = "") -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=mid, model="claude-x", usage={"input_tokens": 3, "output_tokens": 5})
    rec = {"parentUuid": parent, "type": kind, "uuid": uuid, "message": message,
           "timestamp": "2026-01-01T00:00:00Z"}
    if sid:
        rec["sessionId"] = sid
    return json.dumps(rec)


def _session(sid: str, n_prefix: int = 4, n_branches: int = 2) -> list[str]:
    """A session whose ``n_branches`` rewinds repeat a prefix of prompts (one text a record:
    read again from the file) and tool calls: ``1 + n_branches`` runs."""
    lines, parent = [], None
    for i in range(n_prefix):
        u, a, r = (f"{sid}-{x}{i}" for x in "uar")
        lines.append(_rec(sid, u, parent, "user", f"prompt {sid} {i} " + "é x" * 60))
        call = {"type": "tool_use", "id": f"{sid}-t{i}", "name": "Read",
                "input": {"file_path": f"/src/{i}.py"}}
        lines.append(_rec(sid, a, u, "assistant", [call], mid=f"{sid}-m{i}"))
        result = {"type": "tool_result", "tool_use_id": f"{sid}-t{i}", "content": f"file {i}"}
        lines.append(_rec(sid, r, a, "user", [result]))
        parent = r
    for k in range(n_branches + 1):
        lines.append(_rec(sid, f"{sid}-b{k}", parent, "user", f"try {k}"))
        lines.append(_rec(sid, f"{sid}-c{k}", f"{sid}-b{k}", "assistant",
                          [{"type": "text", "text": f"ok {sid} {k}"}], mid=f"{sid}-n{k}"))
    return lines


SUMMARY = json.dumps({"type": "summary", "summary": "a title", "leafUuid": "x"})
"""A record of no session that joins none (no uuid): holds no session back."""


def _file(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _three_sessions(path: Path) -> Path:
    return _file(path, [SUMMARY, *_session("s1"), SUMMARY, *_session("s2", 5, 3),
                        *_session("s3", 2, 0)])


def _streamed(mp: pytest.MonkeyPatch, on: bool) -> None:
    """The big files' path (``on``) or the whole file's, for a file read in pieces either way."""
    mp.setattr(jsonl_reread, "STREAM_MIN_BYTES", 0)
    mp.setattr(claude_code, "STREAM_MIN_BYTES", 0 if on else BIG, raising=False)
    mp.setattr(parse_file, "STREAMED_MIN_BYTES", 0 if on else BIG, raising=False)


def _parsed(path: Path) -> tuple[list[RunDraft], list[Issue], dict[str, dict[str, int]]]:
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data,
                 sha256=hashlib.sha256(data).hexdigest(), on_disk=True)
    issues: list[Issue] = []
    drafts = claude_code.parse(src, issues)
    return drafts, issues, src.coverage.by_type()


def _store_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _wrapped(mp: pytest.MonkeyPatch, module: Any, name: str,
             before: Callable[..., None]) -> None:
    """``before`` called ahead of each call of ``module.name``: a function looked up where it is
    called (a run made is seen as its ``RunDraft``'s ``__init__``: ``claude_code_runs._run`` is
    called by compiled code straight, not by its name, as any call inside the compiled ingest
    parts, ``replay/ingest/_build.py``)."""
    original = getattr(module, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        before(*args, **kwargs)
        return original(*args, **kwargs)

    mp.setattr(module, name, call)


def test_a_big_files_runs_are_written_one_at_a_time(tmp_path: Path) -> None:
    """At most one run's rows are alive between the parser and the entry (each run made is
    tokenised and written before the next is made; held all at once before: 8 here), the entry
    is cut in the same row groups, and the store is the store of the file taken whole, byte
    for byte."""
    path = _three_sessions(tmp_path / "logs" / "s.jsonl")
    stores = {}
    for on in (False, True):
        alive = {"now": 0, "most": 0}

        def made(*_: Any, counts: dict[str, int] = alive, **__: Any) -> None:
            counts["now"] += 1
            counts["most"] = max(counts["most"], counts["now"])

        def taken(drafts: list[RunDraft], *_: Any, counts: dict[str, int] = alive,
                  **__: Any) -> None:
            counts["now"] -= len(drafts)

        with pytest.MonkeyPatch.context() as mp:
            _streamed(mp, on)
            mp.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 700)
            _wrapped(mp, RunDraft, "__init__", made)
            _wrapped(mp, parse_file, "tokenize", taken)
            report = ingest([path.parent], tmp_path / f"ds-{on}", jobs=1)
        assert report.ok and report.n_runs == 8
        assert alive["most"] == (1 if on else 8)
        stores[on] = _store_files(tmp_path / f"ds-{on}")
    assert stores[True] == stores[False]
    (entry,) = [data for name, data in stores[True].items() if name.startswith("data/")]
    assert pq.ParquetFile(io.BytesIO(entry)).metadata.num_row_groups > 3


def test_a_sessions_runs_are_made_once_the_file_is_read_past_it(tmp_path: Path) -> None:
    """The first session's runs are made before the last session's records are read (its
    records let go then, not held to the file's end), and the runs, issues and coverage are
    those of the file taken whole."""
    path = _three_sessions(tmp_path / "s.jsonl")
    events: list[str] = []
    parsed = {}
    for on in (False, True):
        events.clear()
        with pytest.MonkeyPatch.context() as mp:
            _streamed(mp, on)
            _wrapped(mp, claude_code, "record", lambda no, *_: events.append(f"read {no}"))
            _wrapped(mp, RunDraft, "__init__", lambda *_, **__: events.append("run"))
            parsed[on] = _parsed(path)
        last_read = max(i for i, e in enumerate(events) if e.startswith("read"))
        assert (events.index("run") < last_read) == on
    assert parsed[True] == parsed[False]
    assert len(parsed[True][0]) == 8


def test_session_ends_hold_back_what_may_still_join() -> None:
    """A session is done past the last line naming it; the first session (which records of no
    session join) also past the last such record; every session past a line not read."""
    lines = [_rec("a", "a1", None, "user", "x"), _rec("b", "b1", None, "user", "y"), SUMMARY,
             _rec("", "n1", None, "user", "z"), _rec("c", "c1", None, "user", "w"), "{oops",
             _rec("c", "c2", "c1", "user", "v")]
    ends = session_ends("".join(line + "\n" for line in lines).encode())
    assert ends is not None
    assert ends.last == {"a": 1, "b": 2, "c": 7} and ends.unnamed == 4 and ends.unread == 6
    assert ends.ready("a", "a") == 7  # (the record of no session at 4, the line not read at 6)
    assert ends.ready("b", "a") == 7 and ends.ready("c", "a") == 8
    assert ends.ready("b", "b") == 7 and ends.ready("", "a") == 7
    two = session_ends(b"\n".join(line.encode() for line in lines[:3]))
    assert two is not None and two.ready("b", "a") == 3
    one = [_rec("a", "a2", "a1", "user", 'says "sessionId": "b" in its text'), lines[0]]
    assert session_ends("\n".join(one).encode()) is None  # (one session: nothing to make early)


_EXTRA = [SUMMARY, "{not json", json.dumps([1, 2]), "",
          _rec("", "lone", None, "user", "a prompt of no session"),
          json.dumps({"type": "custom-title", "customTitle": "mine"}),
          _rec("s1", "late", "s1-c0", "user", "a late record of s1")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.integers(0, 2), min_size=31, max_size=31),
       extra=st.lists(st.tuples(st.sampled_from(range(len(_EXTRA))), st.integers(0, 40)),
                      max_size=4))
def test_runs_made_as_sessions_end_are_the_runs_of_the_whole_file(
        tmp_path: Path, order: list[int], extra: list[tuple[int, int]]) -> None:
    """Sessions interleaved in any order, with lines of no session, lines that are no record
    and records of an earlier session coming late: the runs, issues and coverage are those of
    the file taken whole (a session is never made before a line that may still join it)."""
    left = [_session("s1", 3, 1), _session("s2", 3, 2), _session("s3", 2, 0)]
    lines = []
    for k in order:  # (each session's own lines stay in their order)
        k = k if left[k] else next(i for i, rest in enumerate(left) if rest)
        lines.append(left[k].pop(0))
    lines += [line for rest in left for line in rest]
    for which, at in extra:
        lines.insert(min(at, len(lines)), _EXTRA[which])
    path = _file(tmp_path / "x.jsonl", lines)
    parsed = {}
    for on in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            _streamed(mp, on)
            parsed[on] = _parsed(path)
    assert parsed[True] == parsed[False]


def test_a_file_failing_midway_leaves_no_entry_and_keeps_the_old(tmp_path: Path) -> None:
    """A parser failing after some runs were written: the file fails with its issue, the
    store keeps the entry it had, and no part of the new one is left in the store; the
    manifest records the failure (``replay.ingest.failed_inputs``), nothing else changed."""
    path = _three_sessions(tmp_path / "logs" / "s.jsonl")
    out = tmp_path / "ds"
    with pytest.MonkeyPatch.context() as mp:
        _streamed(mp, True)
        assert ingest([path.parent], out, jobs=1).ok
    before = _store_files(out)
    _file(path, [*path.read_text().splitlines(), _rec("s4", "s4-u", None, "user", "more")])
    runs = {"made": 0}

    def fail_at_third(*_: Any, **__: Any) -> None:
        runs["made"] += 1
        if runs["made"] == 3:
            raise RuntimeError("planted")

    with pytest.MonkeyPatch.context() as mp:
        _streamed(mp, True)
        _wrapped(mp, RunDraft, "__init__", fail_at_third)
        report = ingest([path.parent], out, jobs=1)
    assert report.failed == ["s.jsonl"]
    assert any("parser failed: RuntimeError: planted" in i.reason for i in report.issues)
    after = _store_files(out)
    manifest = json.loads(after.pop("manifest.json"))
    assert manifest.pop("failed") == {"s.jsonl": "claude_code parser failed: RuntimeError: planted"}
    assert manifest == json.loads(before.pop("manifest.json")) and after == before
    assert sorted(p.name for p in (out / "data").iterdir()) == sorted(
        Path(name).name for name in before if name.startswith("data/"))
    assert store.read_manifest(out)["s.jsonl"].n_runs == 8


def test_many_small_runs_are_held_as_few_tables(tmp_path: Path) -> None:
    """A file of many one-run sessions, taken a run at a time: the runs' tables waiting for the
    entry (``EntryWriter``) and for ``parse_file``'s result are made one table every
    ``MERGED_PARTS`` (3 here), never held as one table a run, and the store is the store of the
    file taken whole, byte for byte (row groups cut at 700 bytes of text, as above)."""
    path = _file(tmp_path / "logs" / "s.jsonl",
                 [line for k in range(40) for line in _session(f"s{k}", 1, 0)])
    stores, longest = {}, {"parts": 0}
    original = entry_file.add_part

    def add_part(parts: list[Any], table: Any) -> None:
        original(parts, table)
        longest["parts"] = max(longest["parts"], len(parts))

    for on in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            _streamed(mp, on)
            mp.setattr(entry_file, "ROW_GROUP_TEXT_BYTES", 700)
            mp.setattr(entry_file, "MERGED_PARTS", 3)
            mp.setattr(entry_file, "add_part", add_part)
            mp.setattr(parse_file, "add_part", add_part)
            report = ingest([path.parent], tmp_path / f"ds-{on}", jobs=1)
        assert report.ok and report.n_runs == 40
        stores[on] = _store_files(tmp_path / f"ds-{on}")
    assert stores[True] == stores[False]
    assert 0 < longest["parts"] < 3
