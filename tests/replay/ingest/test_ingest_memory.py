"""What one file's ingest holds in memory at once (#24 item 3: a one-file ingest peaks at no
more than twice the file; ``benchmarks/document_memory.py`` measures the peaks).

Checked without timing or measuring memory: which objects are alive at a given step.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import pytest

from replay.ingest import parse_file as parse_file_module
from replay.ingest._build import BUILD as INGEST_BUILD
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS, jsonl
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from tests.conftest import SAMPLES
from tests.pure_rerun import ran_pure


@pytest.mark.parametrize("sample", [
    "swe-agent/claude-4-sonnet-20250514__sympy__sympy-13372.traj",  # one JSON document
    "mini-swe-agent/sympy__sympy-14248.traj.json",
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",  # JSON Lines
])
def test_file_bytes_are_released_before_counting(sample: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's bytes (the parsers' ``Source``) are let go once the parser is done: counting
    tokens and building the tables (the step where an ingest peaks) does not hold them too."""
    path = SAMPLES / sample
    alive: list[int] = []
    real = parse_file_module.tokenize

    def spy(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append(sum(isinstance(o, Source) and o.path == str(path)
                         for o in gc.get_objects()))
        return real(*args, **kwargs)

    monkeypatch.setattr(parse_file_module, "tokenize", spy)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.messages.num_rows > 0
    assert alive == [0]


def at_each_run(monkeypatch: pytest.MonkeyPatch, call: Callable[[], None]) -> None:
    """``call`` when a parser's run is built (its ``RunDraft`` made, at the end of
    ``RunBuilder.build``: ``build`` itself is called by compiled parsers straight, not looked
    up, ``replay/ingest/_build.py``)."""
    real = RunDraft.__init__

    def made(self: RunDraft, *args: Any, **kwargs: Any) -> None:
        call()
        real(self, *args, **kwargs)

    monkeypatch.setattr(RunDraft, "__init__", made)


def _openhands_events(path: Any) -> Any:
    events = []
    for i in range(3):
        events.append({"id": 2 * i, "source": "agent", "action": "run",
                       "args": {"command": "ls"}, "message": "x"})
        events.append({"id": 2 * i + 1, "source": "agent", "observation": "run", "content": "y",
                       "extras": {"exit_code": 0}, "cause": 2 * i})
    path.write_text(json.dumps(events))
    return path


@pytest.mark.parametrize("sample", [
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    None,  # an OpenHands event list (one JSON document), written below
])
def test_file_bytes_are_released_before_the_runs_are_built(
        sample: str | None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that has read every record (a JSON Lines file) or decoded its document
    (OpenHands) lets the file's bytes go before it builds its runs; reading them after that
    raises, never reads as an empty file."""
    path = SAMPLES / sample if sample else _openhands_events(tmp_path / "events.json")
    released: list[bool] = []
    sources: list[Source] = []
    real_source = Source.__init__

    def made(self: Source, *args: Any, **kwargs: Any) -> None:
        real_source(self, *args, **kwargs)
        sources.append(self)

    def built() -> None:
        (src,) = [s for s in sources if s.path == str(path)]
        with pytest.raises(ValueError):
            len(src.data)
        released.append(True)

    monkeypatch.setattr(Source, "__init__", made)
    at_each_run(monkeypatch, built)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.messages.num_rows > 0
    assert released and all(released)


def test_openhands_events_are_let_go_as_they_are_read(tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoded event list is emptied as the run grows: when the run is built, of the
    document's six events only the last one read is alive (the loop's variable), not the
    document whole beside the run."""
    path = _openhands_events(tmp_path / "events.json")
    alive: list[int] = []
    real = RunBuilder.build

    def spy(self: RunBuilder) -> Any:
        gc.collect()
        alive.append(sum(isinstance(o, dict) and o.get("source") == "agent"
                         for o in gc.get_objects()))
        return real(self)

    monkeypatch.setattr(RunBuilder, "build", spy)
    assert parse_file(path, path.parent).tables is not None
    assert alive == [1]


def test_tokenize_lets_the_drafts_columns_go(tmp_path: Any) -> None:
    """``tokenize(consume=True)`` (as ``parse_file`` calls it) takes the drafts' columns: the
    drafts are left empty, and the tables are those of a tokenize that copies."""
    path = SAMPLES / "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    data = path.read_bytes()

    def drafts() -> Any:
        src = Source(path=str(path), rel=path.name, data=data, sha256="0" * 64)
        return PARSERS["claude_code"].parse(src, [])

    kept, taken = drafts(), drafts()
    copied = tokenize(kept, ("o200k_base",))
    consumed = tokenize(taken, ("o200k_base",), consume=True)
    assert all(d.messages for d in kept)
    assert all(not d.messages and not d.requests and not d.events for d in taken)
    for name in ("runs", "messages", "requests", "events"):
        assert getattr(consumed, name).equals(getattr(copied, name))


_DOCUMENTS = [*sorted((SAMPLES / "swe-agent").glob("*.traj")),
              *sorted((SAMPLES / "openhands").glob("*.json"))]


@pytest.mark.parametrize("path", _DOCUMENTS, ids=lambda p: p.name)
def test_a_document_read_lazily_is_parsed_as_one_decoded_whole(
        path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """SWE-agent and OpenHands documents of ``jsonl.LAZY_MIN_BYTES`` or more are read with
    their steps / history / events undecoded, item by item: the same tables, issues and
    coverage as the document decoded whole."""
    whole = parse_file(path, path.parent)
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", 0)
    lazy = parse_file(path, path.parent)
    assert whole.tables is not None and lazy.tables is not None
    for name in ("runs", "messages", "requests", "events"):
        assert getattr(lazy.tables, name).equals(getattr(whole.tables, name)), name
    assert (lazy.issues, lazy.coverage) == (whole.issues, whole.coverage)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_lazy_document_holds_one_decoded_item_at_a_time(
        lazy: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the run is built, of a trajectory's 40 steps only the first (read for the opening)
    and the last read are alive decoded when the document was read lazily; none when it was
    read at once (a small document: under ``LAZY_MIN_BYTES``), its 40 steps then read as
    ``swe_agent_doc.Step``: the fields the parser reads, the prompts left undecoded (all 40
    alive decoded before it, the document decoded whole)."""
    steps = [{"thought": f"t{i}", "action": f"ls {i}", "observation": f"o{i}",
              "state": {"open_file": "n/a"}} for i in range(40)]  # (a dict of strings only is
    # not tracked by the collector: gc.get_objects would not see it)
    path = tmp_path / "t.traj"
    path.write_text(json.dumps({"trajectory": steps, "history": [], "info": {}}))
    del steps
    if lazy:
        monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", 0)
    alive: list[int] = []
    real = RunBuilder.build

    def spy(self: RunBuilder) -> Any:
        gc.collect()
        alive.append(sum(isinstance(o, dict) and "observation" in o for o in gc.get_objects()))
        return real(self)

    monkeypatch.setattr(RunBuilder, "build", spy)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.requests.num_rows == 40
    assert alive == ([2] if lazy else [0])


def _claude_code_records(path: Any, n: int) -> Any:
    """A transcript of ``n`` minimal user records, each the parent of the next (the shape of
    ``benchmarks/document_memory.py``'s ``jsonl-tiny``)."""
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"parentUuid": f"u{i - 1}" if i else None, "sessionId": "s",
                                "type": "user", "uuid": f"u{i}", "version": "2.1.90",
                                "message": {"role": "user", "content": f"hi {i}"}}) + "\n")
    return path


@pytest.mark.parametrize("sample", [
    None,  # 200 minimal records, written below
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",  # with inline sidechain runs
])
def test_claude_code_records_are_let_go_as_they_are_emitted(
        sample: str | None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last run made of a session's records lets each record go once its rows are
    written: when the file's last run is built, of the file's records (``Rec``) none is alive
    (the 200 records' file) or one (the sample's, with its inline sidechain runs),
    and no resolved path (all 200 / 492 records and one path were, before 071f5b7; the last
    one emitted, the loop's variable, before the texts were filled in once they are let
    go)."""
    from replay.ingest.parsers.claude_code_path import Path as ChatPath
    from replay.ingest.parsers.claude_code_records import Rec
    path = SAMPLES / sample if sample else _claude_code_records(tmp_path / "s.jsonl", 200)
    alive: list[tuple[int, int]] = []

    def count() -> tuple[int, int]:
        gc.collect()
        return (sum(isinstance(o, Rec) for o in gc.get_objects()),
                sum(isinstance(o, ChatPath) for o in gc.get_objects()))

    before = count()  # what other tests in this worker left alive is not this parse's
    at_each_run(monkeypatch, lambda: alive.append(count()))
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.messages.num_rows >= 200
    records, paths = alive[-1][0] - before[0], alive[-1][1] - before[1]
    assert records <= (0 if sample is None else 1) and paths == 0  # (compiled, the sample's
    # last record is not held either: its loop keeps no frame)


def test_a_claude_code_record_is_one_object_when_read(tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """When every line is read (the file's bytes still held: the peak of reading a file of
    small records), each record is one object (a ``Rec``, which is its ``Node`` in the tree),
    not a record and a node: 200 records, 200 objects of either kind (400 before), no list
    of blocks (200 before), and a prompt that is one string is kept as itself, not in a tuple
    of one block tuple (200 before)."""
    from replay.ingest.parsers.claude_code_path import Node
    from replay.ingest.parsers.claude_code_records import Rec
    path = _claude_code_records(tmp_path / "s.jsonl", 200)
    alive: list[tuple[int, int, int]] = []
    real = Source.release_data

    def count() -> tuple[int, int, int]:
        gc.collect()
        objects = gc.get_objects()
        return (sum(isinstance(o, (Node, Rec)) for o in objects),
                sum(1 for o in objects if isinstance(o, list) and o
                    and isinstance(o[0], tuple) and o[0][:1] == ("text",)),
                sum(isinstance(o, Rec) and isinstance(o.blocks, tuple) for o in objects))

    def spy(self: Source) -> None:
        alive.append(count())
        real(self)

    # what this parse adds: the heap of a worker that ran other tests may hold such lists
    # (a fresh-clone run under xdist counted one)
    before = count()
    monkeypatch.setattr(Source, "release_data", spy)
    assert parse_file(path, path.parent).tables is not None
    assert len(alive) == 1
    assert alive[0][0] - before[0] == 200
    assert alive[0][1] - before[1] <= 0
    assert alive[0][2] - before[2] <= 0


def test_a_user_record_has_no_slots_for_a_response_or_a_boundary(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """When every line is read, each of 200 minimal user records is five slots of its place in
    the tree (line, uuid, parent, timestamp, ``Tie``) and its own three (role, coverage type,
    content): 96 bytes with the object's header, no bigger.  A response's five fields and a
    boundary's facts and links are not slots of every record (nine fields more a record, 48
    bytes, before fb7f16c), nor are the sidechain and no-``parentUuid`` flags and the
    user/assistant test (three slots more, 120 bytes a record, before): read on it they are
    their empty values, or what the record says."""
    import sys

    from replay.ingest.parsers.claude_code_records import Rec
    path = _claude_code_records(tmp_path / "s.jsonl", 200)
    sizes: list[list[int]] = []
    real = Source.release_data

    def spy(self: Source) -> None:
        gc.collect()
        recs = [o for o in gc.get_objects() if type(o) is Rec and o.uuid.startswith("u")
                and o.blocks == f"hi {o.line - 1}"]
        sizes.append([sys.getsizeof(o) for o in recs])
        assert all(r.msg_id == r.model == r.miss == r.edits == "" and r.usage is None
                   and r.meta is None and r.logical is None and r.preserved == ()
                   and r.segment is None and r.message and not r.sidechain
                   and r.has_parent_key for r in recs)
        assert len({id(r.tie) for r in recs}) == 1  # one shared, not one a record
        real(self)

    monkeypatch.setattr(Source, "release_data", spy)
    assert parse_file(path, path.parent).tables is not None
    assert len(sizes) == 1 and len(sizes[0]) == 200
    assert max(sizes[0]) <= 96


def test_no_map_a_record_beside_the_records_of_a_linear_transcript(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """A transcript of 200 records on one chain, in file order: when every line is read no
    dict maps line -> record (made only for a session with records off its path); when its
    path is ordered, ``resolve`` holds no dict of uuid -> index on the path (``Runs.along``);
    when its run is built, ``parse`` holds no dict of every uuid (the reading's, let go with
    the file's bytes).  Each was a dict of 200 entries (and an int each) before.  (Dicts of
    strings and ints are not tracked by the collector: the functions' own variables are
    looked at.)  Compiled functions have no frames to read: run where they are pure."""
    import sys

    if ran_pure(request, INGEST_BUILD.compiled):
        return

    from replay.ingest.parsers import claude_code_order
    from replay.ingest.parsers.claude_code_records import Rec
    path = _claude_code_records(tmp_path / "s.jsonl", 200)
    found: dict[str, int] = {}

    def maps(of: type, to: type, held: list[Any]) -> int:
        return sum(1 for o in held if type(o) is dict and len(o) >= 200
                   and all(type(k) is of and type(v) is to for k, v in o.items()))

    def held_by(function: str) -> list[Any]:
        frame = sys._getframe(1)
        while frame.f_code.co_name != function:
            frame = frame.f_back  # type: ignore[assignment]
        return list(frame.f_locals.values())

    real_release, real_lines, real_build = (Source.release_data, claude_code_order.Runs.lines,
                                            RunBuilder.build)

    def release(self: Source) -> None:
        gc.collect()
        found["line -> record"] = maps(int, Rec, gc.get_objects())
        real_release(self)

    def lines(self: claude_code_order.Runs, *args: Any) -> list[int]:
        found["uuid -> index"] = maps(str, int, held_by("resolve"))
        return real_lines(self, *args)

    def build(self: RunBuilder) -> Any:
        found["uuid -> uuid"] = maps(str, str, held_by("parse"))
        return real_build(self)

    gc.collect()
    before = maps(int, Rec, gc.get_objects())
    monkeypatch.setattr(Source, "release_data", release)
    monkeypatch.setattr(claude_code_order.Runs, "lines", lines)
    monkeypatch.setattr(RunBuilder, "build", build)
    assert parse_file(path, path.parent).tables is not None
    found["line -> record"] -= before
    assert found == {"line -> record": 0, "uuid -> index": 0, "uuid -> uuid": 0}
