"""Each moment OpenCode cleared tool outputs takes effect at the first message created after it
(``opencode._microcompactions``), found in one pass over the messages for all the moments, not
a scan from the first message for each (20,000 turns each cleared at its own time: 82 s)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.opencode import _Facts, _microcompactions
from replay.ingest.parsers.source import Source

_TIMES = st.one_of(st.integers(0, 9), st.sampled_from([2.5, math.inf, math.nan]))
_CREATED = st.one_of(_TIMES, st.none(), st.just(True), st.just("x"))


@settings(max_examples=100, deadline=None)
@given(st.lists(_CREATED, max_size=10),
       st.dictionaries(_TIMES.map(float), st.just(["c"]), max_size=6))
@example([True, 5], {0.0: ["c"]})  # True is no time (a bool is an int): message 1, not 0
def test_each_moment_at_the_first_message_created_after_it(
        created: list[Any], cleared: dict[float, list[str]]) -> None:
    facts = _Facts(starts=list(enumerate(created)), cleared=cleared)
    b = RunBuilder(Source(path="f", rel="f", data=b"", sha256="0" * 64), 0, "opencode", [])
    _microcompactions(b, facts)
    numbers = [(i, c) for i, c in facts.starts
               if isinstance(c, (int, float)) and not isinstance(c, bool)]
    want = [next((i for i, c in numbers if c > when), None) for when in cleared]
    # (None: the message after the builder's last, the first here, as ``RunBuilder.event`` says)
    assert b.build().events["msg"] == sorted(0 if m is None else m for m in want)
