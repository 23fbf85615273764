"""The root of each inline sidechain record's chain (``claude_code_session.chain_roots``: each
record walked once) is what walking up from that record alone finds, on any parent links,
loops and links out of the chains included; a long inline sidechain costs a walk of it, not
one a record (20,000 records: 200 million steps)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.claude_code_session import chain_roots

_UUIDS = [f"u{i}" for i in range(12)]


def _walked(parent: dict[str, str | None], uuid: str) -> str:
    """The root as found by walking up from ``uuid`` alone (the definition)."""
    cur, seen = uuid, set()
    while cur and parent.get(cur) in parent and cur not in seen:
        seen.add(cur)
        cur = parent[cur] or ""
    return cur


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(_UUIDS),
                       st.one_of(st.none(), st.sampled_from([*_UUIDS, "outside"])),
                       max_size=len(_UUIDS)))
def test_chain_roots_are_the_walked_roots(parent: dict[str, str | None]) -> None:
    assert chain_roots(parent) == {u: _walked(parent, u) for u in parent}


def test_a_long_chain_and_a_loop() -> None:
    chain: dict[str, str | None] = {f"c{i}": f"c{i - 1}" if i else None for i in range(50_000)}
    assert set(chain_roots(chain).values()) == {"c0"}
    loop: dict[str, str | None] = {"a": "b", "b": "c", "c": "a", "t": "a"}
    assert chain_roots(loop) == {"a": "a", "b": "b", "c": "c", "t": "a"}
