"""The context order of a Claude Code session's records (``claude_code_order.Runs``) is the
order of one key a record: (index on the path of the last path record at or before it in the
file, 0 on the path / 1 after it, line), the definition ``resolve`` sorted by before it kept
runs instead of a key a record (#24 item 3: a transcript of small records held a tuple and a
dict entry a record for it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.claude_code_order import Runs


def _by_key(nodes: list[Node], on_path: dict[str, int], left_out: set[int],
            but: set[int]) -> list[int]:
    """The lines in context order as the key defines it (the reference)."""
    key: dict[int, tuple[int, int, int]] = {}
    last = -1
    for n in nodes:
        if n.uuid and n.uuid in on_path:
            last = on_path[n.uuid]
            key[n.line] = (last, 0, n.line)
        else:
            key[n.line] = (last, 1, n.line)
    return sorted((line for line in key if line not in left_out or line in but),
                  key=key.__getitem__)


@st.composite
def _sessions(draw: st.DrawFn) -> tuple[list[Node], dict[str, int], set[int], set[int]]:
    size = draw(st.integers(0, 25))
    gaps = draw(st.lists(st.integers(1, 3), min_size=size, max_size=size))
    lines = [sum(gaps[:i + 1]) for i in range(size)]
    uuids = draw(st.lists(st.sampled_from(["", *(f"u{k}" for k in range(12))]),
                          min_size=size, max_size=size))  # (repeats: the same uuid twice)
    nodes = [Node(line, uuid, None) for line, uuid in zip(lines, uuids)]
    named = sorted({u for u in uuids if u} | {"link-1", "link-2"})  # (links: on the path, no
    # record of the run)
    on = draw(st.lists(st.sampled_from(named), unique=True)) if named else []
    on_path = {u: k for k, u in enumerate(draw(st.permutations(on)))}
    others = [n.line for n in nodes if not (n.uuid and n.uuid in on_path)]
    left_out = set(draw(st.lists(st.sampled_from(others)))) if others else set()
    but = set(draw(st.lists(st.sampled_from(sorted(left_out))))) if left_out else set()
    return nodes, on_path, left_out, but


@settings(max_examples=100, deadline=None)
@given(_sessions())
def test_runs_order_the_records_as_the_key_does(
        case: tuple[list[Node], dict[str, int], set[int], set[int]]) -> None:
    nodes, on_path, left_out, but = case
    runs = Runs(nodes, on_path, len(on_path))
    assert runs.lines(left_out) == _by_key(nodes, on_path, left_out, set())
    assert runs.lines(left_out, but) == _by_key(nodes, on_path, left_out, but)


@st.composite
def _paths(draw: st.DrawFn) -> tuple[list[Node], dict[str, int], set[int], set[int]]:
    """``_sessions``, half of them with the path in file order (the order most files have:
    ``Runs.along`` takes it without the index map), the links of the chain anywhere in it."""
    nodes, on_path, left_out, but = draw(_sessions())
    if draw(st.booleans()):
        first = {}
        for n in nodes:
            first.setdefault(n.uuid, n.line)
        records = sorted((u for u in on_path if u in first), key=first.__getitem__)
        path = records
        for link in (u for u in on_path if u not in first):
            at = draw(st.integers(0, len(path)))
            path = [*path[:at], link, *path[at:]]
        on_path = {u: k for k, u in enumerate(path)}
    return nodes, on_path, left_out, but


@settings(max_examples=100, deadline=None)
@given(_paths())
def test_runs_along_the_path_are_the_runs_of_its_index(
        case: tuple[list[Node], dict[str, int], set[int], set[int]]) -> None:
    """``Runs.along`` (the path as a list, no map of its indices) orders and selects the
    records as the key does, and says which are on the path, whether the path's records
    come in file order, repeat a uuid or not."""
    nodes, on_path, left_out, but = case
    path = sorted(on_path, key=on_path.__getitem__)
    runs = Runs.along(nodes, path, set(path))
    assert runs.lines(left_out) == _by_key(nodes, on_path, left_out, set())
    assert runs.lines(left_out, but) == _by_key(nodes, on_path, left_out, but)
    assert [n.line for n in runs.select(nodes, left_out, but)] == \
        _by_key(nodes, on_path, left_out, but)
    assert [runs.on_path(pos) for pos in range(len(nodes))] == \
        [bool(n.uuid) and n.uuid in on_path for n in nodes]
    assert list(runs.off_path()) == [pos for pos, n in enumerate(nodes)
                                     if not (n.uuid and n.uuid in on_path)]
