"""The walk of a Claude Code session's tree without a uuid -> record map (``claude_code_path``
``resolve(unique=True)``: the record before the one last found is tried first, the map made
only when that fails) finds the same paths as with the map, on any session whose uuids are
unique (#24 item 3: the map is ~60 bytes a record of a transcript of small records)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import claude_code_order, claude_code_path
from replay.ingest.parsers.claude_code_node import tie
from replay.ingest.parsers.claude_code_path import resolve
from replay.ingest.parsers.claude_code_records import Rec
from tests.claude_code_chain import write_chain

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude_code"


_ROLES = ("user", "assistant", "attachment", "compact")
_TIMES = ("", "t1", "t2")
_SIZE = st.integers(0, 20)
_LINKS = st.integers(0, 3)
_BOOL = st.booleans()
_NAMED = st.integers(0, 10 * 3 * 4 - 1)
"""A record's first word: its uuid (0 in 10: none), its parent (0: the record before, 1 any
named one, 2 none) and its role (``_ROLES``'s index)."""
_TIED = st.integers(0, 3 * 6 * 7 - 1)
"""A record's second word: its time (``_TIMES``'s index), whether it has a logical parent (0 in
6) and whether it is a sidechain's (0 in 7)."""
_UNLINKED = st.integers(0, 8)


@st.composite
def _sessions(draw: st.DrawFn) -> tuple[list[Rec], dict[str, str | None], bool, int | None]:
    """A session's records and links.  Each strategy made once (the module's, or one an
    example's), not again at each draw: making them was most of the test's time; a record's
    seven choices drawn as three words split by divmod (``_NAMED``, ``_TIED``, ``_UNLINKED``:
    a draw cost more than what it draws; each word under 128 values, drawn uniformly as each
    part alone was; each part 0 the case a lone draw of it shrank to)."""
    size = draw(_SIZE)
    words = [draw(_NAMED) for _ in range(size)]
    uuids = [("" if w % 10 == 0 else f"u{i}") for i, w in enumerate(words)]
    link_ids = [f"l{i}" for i in range(draw(_LINKS))]
    named = [u for u in uuids if u] + link_ids + ["gone"]
    any_named = st.sampled_from(named)

    def named_or_none() -> str | None:
        return None if draw(_BOOL) else draw(any_named)

    nodes: list[Rec] = []
    for i, uuid in enumerate(uuids):
        # mostly a chain in file order (the record before), else any record, a link, nothing
        branch, role_at = divmod(words[i] // 10, 4)
        parent = (uuids[i - 1] if i else None) if branch == 0 else \
            draw(any_named) if branch == 1 else None
        word, time_at = divmod(draw(_TIED), 3)
        sidechain, logical_at = divmod(word, 6)
        logical = named_or_none() if logical_at == 0 else None
        role = _ROLES[role_at]
        rec = Rec(line=i + 1, uuid=uuid, parent=parent or None, ts=_TIMES[time_at], role=role,
                  rtype=role)
        rec.tie = tie(logical, (), None, sidechain=sidechain == 0,
                      unlinked=draw(_UNLINKED) == 0)
        nodes.append(rec)
    links = {u: named_or_none() for u in link_ids}
    messages = [k for k, n in enumerate(nodes) if n.message and n.uuid]
    leaf = (None if draw(_BOOL) else draw(st.sampled_from(messages))) \
        if messages else None
    return nodes, links, draw(_BOOL), leaf


@settings(max_examples=500, deadline=None)
@given(_sessions())
def test_the_walk_without_the_map_finds_the_same_path(
        case: tuple[list[Rec], dict[str, str | None], bool, int | None]) -> None:
    nodes, links, sidechain_file, leaf_at = case
    leaf = None if leaf_at is None else nodes[leaf_at]
    mapped = resolve(nodes, links, sidechain_file, leaf)
    walked = resolve(nodes, links, sidechain_file, leaf, unique=True)
    assert (walked.order, walked.off_path, walked.cycle, walked.preserved) == \
        (mapped.order, mapped.off_path, mapped.cycle, mapped.preserved)


def test_a_chain_in_file_order_is_walked_without_the_map(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 records on one chain, in file order: ``resolve`` makes no uuid -> record map (it
    was a dict of 200 entries)."""
    path = tmp_path / "s.jsonl"
    write_chain(path, 200)
    maps: list[int] = []
    real = claude_code_order.Runs.lines

    def lines(self: claude_code_order.Runs, *args: Any) -> list[int]:
        frame = sys._getframe(1)
        while frame.f_code.co_name != "resolve":
            frame = frame.f_back  # type: ignore[assignment]
        gc.collect()
        maps.append(sum(1 for o in gc.get_referents(*frame.f_locals.values())
                        if type(o) is dict and len(o) >= 200))
        return real(self, *args)

    monkeypatch.setattr(claude_code_order.Runs, "lines", lines)
    assert parse_file(path, path.parent).tables is not None
    assert maps == [0]


def test_a_sessions_leaves_are_found_once_for_all_its_paths(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The leaves (and preserved segments) every path of a session starts from are found once
    (``Resolved.ends``), not again by ``abandoned_branches`` and by each path's ``resolve``."""
    calls: list[int] = []
    found = claude_code_path.leaves

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return found(*args, **kwargs)

    monkeypatch.setattr(claude_code_path, "leaves", counted)
    parsed = parse_file(FIXTURES / "dag_compact_after_rewind.jsonl")
    assert parsed.tables is not None
    assert parsed.tables.runs.column("agent").to_pylist() == ["", "abandoned-1"]
    assert len(calls) == 1  # one session, two paths (its run's, the abandoned branch's)
