"""The stub summariser's facts, gathered from the run's event index, against a plain walk."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.prepared import PreparedRun
from replay.engine.summariser import _FIGURES, Facts, _record, gather, summarise
from tests.strategies import runs


def _walk(facts: Facts, run: PreparedRun, lo: int, hi: int) -> None:
    """Every block of ``[max(lo, upto), hi)`` in turn (what ``gather`` must equal)."""
    for b in range(max(lo, facts.upto), hi):
        op, kind, path = run.op[b], run.kind[b], run.path[b]
        if kind == "tool_call":
            if op in ("write", "edit") and path:
                facts.edited[path] = None
            elif op == "read" and path:
                facts.read[path] = None
            elif op == "exec":
                facts.n_commands += 1
        elif kind == "tool_result":
            facts.n_errors += run.is_error[b]
            if op == "exec":
                facts.figures.extend(_FIGURES.findall(run.text[b][-2000:]))
                del facts.figures[:-12]
    facts.upto = max(facts.upto, hi)


@given(runs(), st.data())
def test_gather_equals_a_walk_over_every_block(run: PreparedRun, data: Any) -> None:
    """Ranges in order, with gaps (a collapse cut in between) and overlaps, as replays make them."""
    cuts = sorted(data.draw(st.lists(st.integers(0, run.n_blocks), min_size=1, max_size=6)))
    got, want = Facts(), Facts()
    lo = 0
    for hi in cuts:
        lo = data.draw(st.integers(max(0, lo - 3), hi)) if hi else 0
        gather(got, run, lo, hi)
        _walk(want, run, lo, hi)
        assert (got.edited, got.read, got.n_commands, got.n_errors, got.figures, got.upto) == (
            want.edited, want.read, want.n_commands, want.n_errors, want.figures, want.upto)
        assert list(got.edited) == list(want.edited) and list(got.read) == list(want.read)
        lo = hi


@given(runs())
def test_summary_lists_the_newest_thirty_files(run: PreparedRun) -> None:
    """A summary names the 30 most recently first-seen files, oldest of them first."""
    facts = Facts()
    text = summarise(facts, run, 0, run.n_blocks, 2000)
    if facts.edited:
        assert "Files edited: " + ", ".join(list(facts.edited)[-30:]) + "." in text


def test_record_names_the_last_thirty_of_many_files() -> None:
    """With more than 30 files, the last 30 first seen, in the order they were first seen."""
    facts = Facts()
    for i in [*range(45), 3, 44]:  # seen again: keeps its first place
        facts.edited[f"f{i}.py"] = None
    assert _record(facts).splitlines()[0] == (
        "Files edited: " + ", ".join(f"f{i}.py" for i in range(15, 45)) + ".")
