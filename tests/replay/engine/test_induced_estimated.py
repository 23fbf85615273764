"""An induced re-read of a file edited by an edit the replay cannot apply (a patch, an unknown
tool) is marked (``actions.size_estimate``) and counted (``induced_rereads_estimated_n``): its size
is the file as known without that edit, an estimate, and every output says so.

So is one of a file only ever read in parts (sized as the largest part read, a lower bound).

Checked on the real samples against what the raw calls of the re-read file (its path as the call
names it, the call not failed) say here: whether any read it whole (no range argument, no
line-range reader, nothing piped on) or wrote it, and the edits since with no replaced/new text
pair."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from analysis.per_run.induced import estimated_note
from replay.engine.fold import replay
from replay.engine.trace import INDUCED_REREAD
from replay.policy import load_policy
from tests.replay.engine.raw_reads import read_whole

_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"))


def _args(text: str) -> dict[str, Any] | None:
    try:
        got = json.loads(text)
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def _has_pair(args: dict[str, Any] | None) -> bool:
    if args is None:
        return False
    if any(o in args and n in args for o, n in _PAIRS):
        return True
    edits = args.get("edits")
    return (isinstance(edits, list) and bool(edits)
            and all(isinstance(e, dict) and _has_pair(e) for e in edits))


def _expected(run: Any, path: str, end: int) -> str:
    """Why a re-read of ``path`` made with blocks [0, end) is an estimate, counted from the
    calls: never read whole (but read), or edited since by an edit with no text pair."""
    failed = {run.call_of[b] for b in range(end) if run.kind[b] == "tool_result"
              and run.is_error[b]}
    whole, stale = False, 0
    for c in range(end):
        if run.kind[c] != "tool_call" or run.path[c].strip() != path or c in failed:
            continue
        args = _args(run.text[c])
        if run.op[c] == "write" or run.op[c] == "read" and read_whole(args, run.text[c]):
            whole, stale = True, 0
        elif run.op[c] == "edit" and whole and not _has_pair(args):
            stale += 1
    return "" if whole and not stale else "unapplied_edits" if whole else "parts_only"


@pytest.mark.parametrize("name", ["observation-masking", "two-tier-original"])
def test_estimated_rereads_match_the_edits_counted_from_the_calls(sample_corpus, name) -> None:  # type: ignore[no-untyped-def]
    policy = load_policy(name)
    got: Counter[str] = Counter()
    for rid in sample_corpus.replayable():
        run = sample_corpus.prepared(rid)
        trace = replay(run, policy, calibration=sample_corpus.calibration(rid))
        for a in trace.actions.to_pylist():
            if a["kind"] != INDUCED_REREAD or a["undone"]:
                assert a["size_estimate"] == ""  # nothing inserted, nothing sized
                continue
            reads = [b for b in range(run.n_blocks) if run.msg[b] == a["first_msg"]
                     and run.kind[b] == "tool_result" and run.op[run.call_of[b]] == "read"]
            paths = {run.path[run.call_of[b]].strip() for b in reads}
            if len(reads) != 1 or not all(paths):
                continue  # not one read of a file: a re-issued command, or ambiguous
            (path,) = paths
            got[a["size_estimate"]] += 1
            assert a["size_estimate"] == _expected(run, path, run.req_blocks[a["request"]]), (
                name, rid, a["request"], path)
    # the samples exercise exact and lower-bound sizes (an edit not applied after a whole read:
    # tests/replay/engine/test_refetch.py)
    assert got[""] >= 3 and got["parts_only"] >= 3, got


def test_the_note_says_how_many_are_estimates() -> None:
    assert estimated_note(0) == ""
    note = estimated_note(3)
    assert note.startswith("3 induced re-read(s)") and "estimates" in note
