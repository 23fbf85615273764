"""Need detection (replay.engine.needs) on a real Claude Code session, counted independently
from the raw file, and its invariants on random runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings

from replay.engine.needs import NAIVE_RULES, RunNeeds, run_needs
from replay.engine.prepared import PreparedRun
from tests.strategies import runs

SESSION = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def _run_id(corpus: Any, suffix: str) -> str:
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith(suffix))


def _raw_calls(path: Path) -> list[dict[str, Any]]:
    """Every tool_use of the raw file in order, with its assistant message's turn number and
    whether its result was an error; results recorded with the turn they arrived before."""
    calls: list[dict[str, Any]] = []
    turns: list[str] = []
    errors: dict[str, bool] = {}
    result_turn: dict[str, int] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") or {}
        content = msg.get("content")
        if rec.get("type") == "assistant":
            if msg["id"] not in turns:
                turns.append(msg["id"])
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "tool_use":
                    calls.append({"id": part["id"], "name": part["name"],
                                  "input": part["input"], "turn": len(turns) - 1})
        elif rec.get("type") == "user" and isinstance(content, list):
            for part in content:
                if part.get("type") == "tool_result":
                    errors[part["tool_use_id"]] = bool(part.get("is_error"))
                    result_turn[part["tool_use_id"]] = len(turns)  # first turn that sees it
    for c in calls:
        c["error"] = errors.get(c["id"], True)
        c["seen_from"] = result_turn.get(c["id"], 10**9)
    return calls


def _names(text: str, name: str) -> bool:
    return re.search(r"(?<![\w.~-])" + re.escape(name) + r"(?![\w.~-])", text) is not None


def test_naive_rule_on_a_real_session_matches_an_independent_count(samples, sample_corpus):  # type: ignore[no-untyped-def]
    calls = _raw_calls(samples / "claude-code" / SESSION)
    expected_needs: set[tuple[str, str]] = set()
    expected_refetch: set[tuple[str, str]] = set()
    for read in calls:
        if read["name"] != "Read" or read["error"]:
            continue
        path = read["input"]["file_path"]
        name = path.rsplit("/", 1)[-1]
        first_per_turn: dict[int, str] = {}
        for later in calls:
            if later["turn"] < read["seen_from"]:
                continue
            if later["name"] == "Read" or (later["name"] == "Bash" and re.match(
                    r"(cat|head|tail) ", later["input"]["command"]) and path in
                    later["input"]["command"]):
                if later["input"].get("file_path", path) == path:
                    expected_refetch.add((read["id"], later["id"]))
                continue
            if _names(json.dumps(later["input"]), name) and later["turn"] not in first_per_turn:
                first_per_turn[later["turn"]] = later["id"]
        expected_needs |= {(read["id"], cid) for cid in first_per_turn.values()}
    assert len(expected_needs) > 20 and len(expected_refetch) > 5  # the session exercises both

    run = sample_corpus.prepared(_run_id(sample_corpus, "claude-code/" + SESSION))
    needs = run_needs(run, NAIVE_RULES)
    got_needs, got_refetch = set(), set()
    for b in needs.blocks.values():
        if run.tool[b.call_block] != "Read":
            continue
        got_needs |= {(run.call_id[b.call_block], run.call_id[n.block]) for n in b.needs}
        got_refetch |= {(run.call_id[b.call_block], run.call_id[c]) for c in b.refetch_blocks}
    assert got_needs == expected_needs
    assert got_refetch == expected_refetch
    assert {n.rule for b in needs.blocks.values() for n in b.needs} == {"names-path"}


def _check_invariants(run: PreparedRun, needs: RunNeeds) -> None:
    issued = {b: r for r, (lo, hi) in enumerate(run.req_output_blocks) for b in range(lo, hi)}
    for blk, got in needs.blocks.items():
        assert run.kind[blk] == "tool_result" and run.call_of[blk] == got.call_block
        assert list(got.need_requests) == sorted(set(got.need_requests))
        assert list(got.refetch_requests) == sorted(set(got.refetch_requests))
        for n in got.needs:
            # needs are only ever at later requests than the block: it is in their context
            assert blk < run.req_blocks[n.request]
            assert n.request > issued[got.call_block]
            if n.op == "user":  # a user-role message: it arrived just before its request
                assert run.role[n.block] == "user" and n.block not in issued
                assert n.block < run.req_blocks[n.request]
                assert n.request == 0 or run.req_blocks[n.request - 1] <= n.block
            else:
                assert issued[n.block] == n.request
            assert n.block not in got.refetch_blocks  # a re-fetch is never evidence of a need
        for r, c in zip(got.refetch_requests, got.refetch_blocks):
            assert blk < run.req_blocks[r] and issued[c] == r
        for removed_at in range(run.n_requests + 1):
            need = needs.first_unmet_need(blk, removed_at)
            later = [n for n in got.needs if n.request >= removed_at]
            if need is None:
                assert not later or any(removed_at <= r <= later[0].request
                                        for r in got.refetch_requests)
            else:
                assert need == later[0]
                assert not any(removed_at <= r <= need.request for r in got.refetch_requests)


@settings(max_examples=60, deadline=None)
@given(runs())
def test_needs_are_only_at_later_requests_than_the_block(run: PreparedRun) -> None:
    needs = run_needs(run)
    assert run_needs(run) is needs  # memoised: computed once per prepared run
    _check_invariants(run, needs)
    _check_invariants(run, run_needs(run, NAIVE_RULES))


def test_invariants_hold_on_the_real_samples(sample_corpus):  # type: ignore[no-untyped-def]
    for rid in sample_corpus.replayable():
        run = sample_corpus.prepared(rid)
        _check_invariants(run, run_needs(run))


def test_rules_find_needs_in_edits_and_assistant_messages_of_a_real_session(samples, sample_corpus):  # type: ignore[no-untyped-def]
    """Every need the rules attribute to an edit or an assistant message is one a plain walk of
    the raw file finds: an Edit/Write of the read file, or assistant text naming it, in a later
    turn (turns numbered by distinct assistant message ids)."""
    path = samples / "claude-code" / SESSION
    reads, edits, texts, turns = {}, set(), set(), []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "assistant":
            continue
        msg = rec["message"]
        if msg["id"] not in turns:
            turns.append(msg["id"])
        for part in msg.get("content") or []:
            if part.get("type") == "tool_use" and part["name"] == "Read":
                reads[part["id"]] = (part["input"]["file_path"], len(turns) - 1)
            elif part.get("type") == "tool_use" and part["name"] in ("Edit", "Write"):
                edits.add((part["input"]["file_path"], len(turns) - 1))
            elif part.get("type") == "text":
                texts.add((part["text"], len(turns) - 1))
    run = sample_corpus.prepared(_run_id(sample_corpus, "claude-code/" + SESSION))
    found = {"edits-file": 0, "mentions-file": 0}
    for b in run_needs(run).blocks.values():
        if run.tool[b.call_block] != "Read":
            continue
        file, read_turn = reads[run.call_id[b.call_block]]
        for n in b.needs:
            turn = next(i for i, (lo, hi) in enumerate(run.req_output_blocks) if lo <= n.block < hi)
            assert turn > read_turn
            if n.rule == "edits-file":
                assert (file, turn) in edits
            elif n.rule == "mentions-file":
                assert any(_names(t, file.rsplit("/", 1)[-1]) for t, k in texts if k == turn)
            found[n.rule] = found.get(n.rule, 0) + 1
    assert found["edits-file"] > 10 and found["mentions-file"] > 0


def test_a_read_that_failed_is_no_refetch() -> None:
    """A read of the file whose result is an error (not found, permission denied) brought
    nothing back: it is kept apart as a failed re-read, not a refetch, so it does not satisfy
    the need after it (the replay's agent still lacks the file there)."""
    from tests.replay.engine.need_runs import READ, built_run

    edit = ("Edit", {"file_path": READ, "old_string": "return 1", "new_string": "return 2"})
    for failing, refetches, failed in ((frozenset(), (1,), ()),
                                       (frozenset({"read_file"}), (), (1,))):
        run = built_run([("read_file", {"path": READ})], [edit], failing=failing)
        needs = run_needs(run)
        bn = min((bn for bn in needs.blocks.values() if bn.key == f"path:{READ}"),
                 key=lambda bn: bn.block)  # the first read's result
        assert (bn.refetch_requests, bn.failed_reread_requests) == (refetches, failed)
        unmet = needs.first_unmet_need(bn.block, 1)
        assert (unmet.request if unmet else None) == (2 if failing else None)
