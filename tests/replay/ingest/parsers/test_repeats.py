"""``Repeats.earlier``: the line of an earlier record of the same identity that is the same JSON
value (keys in any order), as comparing with each earlier one would find, without comparing a
record with each earlier one (a log reusing one call id every turn was quadratic)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.repeats import Repeats

_VALUES = st.recursive(st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b", "é"])),
                       lambda inner: st.one_of(st.lists(inner, max_size=3),
                                               st.dictionaries(st.sampled_from("xyz"), inner,
                                                               max_size=3)),
                       max_leaves=6)


def _shuffled(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: _shuffled(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_shuffled(v) for v in value]
    return value


_RECORDS = st.lists(_VALUES, min_size=1, max_size=4).flatmap(
    lambda pool: st.lists(st.tuples(st.sampled_from(["call_0", "call_1"]), st.sampled_from(pool),
                                    st.booleans()), max_size=12))
"""Records whose values are drawn from a pool of 1-4 values: a value met again (its keys
reordered or not, under the same identity or the other) in most examples, not by chance."""


@settings(max_examples=100, deadline=None)
@given(_RECORDS)
@example([("call_0", {"x": 1, "y": [2]}, False), ("call_0", {"x": 1, "y": [2]}, True)])
def test_earlier_is_the_first_equal_record_of_the_identity(
        records: list[tuple[str, Any, bool]]) -> None:
    seen, kept = Repeats(), []
    for line, (ident, value, reorder) in enumerate(records, 1):
        if reorder:
            value = _shuffled(value)
        want = next((n for n, (i, v) in kept if i == ident and v == value), None)
        assert seen.earlier(ident, value, line) == want
        if want is None:
            kept.append((line, (ident, value)))


def test_one_id_every_turn() -> None:
    seen = Repeats()
    turns = [{"role": "tool", "tool_call_id": "call_0", "content": f"out {k}"}
             for k in range(5000)]
    assert [seen.earlier("call_0", m, k) for k, m in enumerate(turns)] == [None] * 5000
    again = json.loads(json.dumps(turns[1234]))
    assert seen.earlier("call_0", again, 9999) == 1234
