"""``kept_extra`` (the records off a path that its run keeps: the rest of each response it holds,
the tool results of its calls) equals its definition read record by record, on any session and
path: found from the records off the main path (no leaf), or from the session's index (a
branch's path, with or without the session's memo).  The index makes a session of many
abandoned branches cost a walk of each branch's own responses, not of every record once a
branch; the main path alone (most sessions) makes none"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.claude_code_branches import Extras, kept_extra
from replay.ingest.parsers.claude_code_records import AGAIN, Rec, Reply, block_list

_IDS = st.sampled_from(["", "m1", "m2", "m3"])
_CALLS = st.sampled_from(["t1", "t2", "t3", "t4"])
_BLOCK = st.one_of(st.tuples(st.just("call"), _CALLS, st.just("Read"), st.just({})),
                   st.tuples(st.just("result"), _CALLS, st.just("out"), st.just(False)),
                   st.tuples(st.just("text"), st.just("hi")))
_BLOCKS = st.one_of(st.lists(_BLOCK, max_size=3).map(tuple), st.just("a text"), st.just(AGAIN))


@dataclass
class _Found:
    order: list[int]
    off_path: set[int]


def _definition(found: _Found, recs: dict[int, Rec]) -> set[int]:
    """What ``kept_extra`` means, record by record (its form before the index)."""
    groups = {r.msg_id for line in found.order if (r := recs.get(line)) is not None
              and r.role == "assistant"}
    calls = {x[1] for r in recs.values() if r.role == "assistant" and r.msg_id in groups
             for x in r.blocks if x[0] == "call"}
    return {line for line in found.off_path if (r := recs.get(line)) is not None and (
        r.role == "assistant" and r.msg_id in groups
        or any(x[0] == "result" and x[1] in calls for x in block_list(r)))}


@st.composite
def _sessions(draw: st.DrawFn) -> tuple[dict[int, Rec], list[_Found]]:
    recs: dict[int, Rec] = {}
    for line in range(1, draw(st.integers(0, 14)) + 1):
        blocks: Any = draw(_BLOCKS)
        if draw(st.booleans()):
            recs[line] = Reply(line=line, uuid=f"u{line}", parent=None, role="assistant",
                               rtype="assistant", blocks=blocks, msg_id=draw(_IDS))
        else:
            recs[line] = Rec(line=line, uuid=f"u{line}", parent=None, role="user",
                             rtype="user", blocks=blocks)
    paths = []
    for _ in range(draw(st.integers(1, 4))):
        on = draw(st.sets(st.sampled_from(sorted(recs)))) if recs else set()
        paths.append(_Found(sorted(on), set(recs) - on))
    return recs, paths


@settings(max_examples=100, deadline=None)
@given(_sessions())
def test_kept_extra_is_its_definition(session: tuple[dict[int, Rec], list[_Found]]) -> None:
    recs, paths = session
    memo = Extras()
    for k, found in enumerate(paths):
        want = _definition(found, recs)
        assert kept_extra(found, recs) == want  # type: ignore[arg-type]
        leaf = Rec(line=1000 + k, uuid="", parent=None, role="user", rtype="user")
        assert kept_extra(found, recs, memo, leaf) == want  # type: ignore[arg-type]
        assert kept_extra(found, recs, memo, leaf) is memo.sets[1000 + k]  # (found once)
