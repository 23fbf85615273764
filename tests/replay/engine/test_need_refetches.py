"""A fetched block's refetches (``BlockNeeds.refetch_requests``, ``refetch_blocks``,
``failed_reread_requests``) and needs (``needs``, ``need_requests``) are its key's, from the
first request whose context holds it: one list a key (a file read hundreds of times in a long run held each read's later re-reads, 8
million entries and 1.4 GB at 20,000 requests).  Checked against each block's refetches found
from the run's calls one by one, and the shared lists against lists picked out per block (what
a run whose contexts do not only grow gets)."""

from __future__ import annotations

from hypothesis import given, settings

from replay.engine import needs as needs_module
from replay.engine.need_evidence import norm_path, same_file
from replay.engine.needs import run_needs
from replay.engine.prepared import PreparedRun
from tests.strategies import runs


def _failed(run: PreparedRun, call: int) -> bool:
    return any(run.call_of[x] == call and run.is_error[x] for x in range(run.n_blocks))


def _fetches_again(run: PreparedRun, call: int, key: str) -> bool:
    """Whether call block ``call`` fetches the content ``key`` again (by its recorded fields)."""
    if run.kind[call] != "tool_call":
        return False
    if run.op[call] == "read":
        path = norm_path(run.path[call])
        return bool(path) and key.startswith("path:") and same_file(key[5:], path)
    return key == f"call:{run.tool[call]}\x00{run.text[call]}"


def _expected(run: PreparedRun, block: int, key: str) -> tuple[list[int], list[int], list[int]]:
    """The block's refetches and failed re-reads, from the calls of each request it is in."""
    requests, calls, failed = [], [], []
    seen = 0
    for r, (lo, hi) in enumerate(run.req_output_blocks):
        arrived = [b for b in range(seen, run.req_blocks[r]) if not lo <= b < hi]
        seen = max(seen, run.req_blocks[r], hi)  # (the blocks of request r: those arrived
        if block >= run.req_blocks[r]:  # before it, then its output)
            continue
        again = [c for c in (*arrived, *range(lo, hi)) if _fetches_again(run, c, key)]
        ok = [c for c in again if not (run.op[c] == "read" and _failed(run, c))]
        if ok:
            requests.append(r)
            calls.append(ok[0])
        if len(ok) < len(again):
            failed.append(r)
    return requests, calls, failed


@settings(max_examples=80, deadline=None)
@given(runs())
def test_each_blocks_refetches_from_the_calls(run: PreparedRun) -> None:
    for blk, got in run_needs(run).blocks.items():
        want = _expected(run, blk, got.key)
        assert (list(got.refetch_requests), list(got.refetch_blocks),
                list(got.failed_reread_requests)) == want


@settings(max_examples=60, deadline=None)
@given(runs())
def test_shared_lists_are_the_lists_picked_out(run: PreparedRun) -> None:
    needs = run_needs(run)
    for blk, got in needs.blocks.items():
        mine, picked = needs_module._picked(run, blk, got.key_needs, got.refetches)
        assert picked.requests == list(got.refetch_requests)
        assert picked.blocks == list(got.refetch_blocks)
        assert picked.failed == list(got.failed_reread_requests)
        assert mine.needs == list(got.needs)
        assert mine.requests == list(got.need_requests)
    by_key: dict[str, tuple[object, object]] = {}
    for got in needs.blocks.values():  # one list a key, whatever its blocks
        shared = by_key.setdefault(got.key, (got.refetches, got.key_needs))
        assert shared[0] is got.refetches and shared[1] is got.key_needs
