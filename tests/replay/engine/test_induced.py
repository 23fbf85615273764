"""Induced re-reads (#22 items 2, 3): the replay makes the agent fetch again what its policy
removed, where the recorded run needs it (``replay.engine.induced``)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.engine.trace import INDUCED_REREAD, Trace
from replay.errors import PolicyError
from replay.policy import Behaviour, Policy, load_policy, policy_from_dict, replace_path


def _with(policy: Policy, **kw: object) -> Policy:
    return dataclasses.replace(policy, behaviour=dataclasses.replace(policy.behaviour, **kw))


def _induced_actions(trace: Trace) -> list[dict[str, object]]:
    return [a for a in trace.actions.to_pylist() if a["kind"] == INDUCED_REREAD]


def _evicted_before(run: PreparedRun, trace: Trace) -> dict[int, int]:
    """Block → the first request its recorded block was evicted before (induced rows left out),
    from the evictions table."""
    index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
    out: dict[int, int] = {}
    for e in trace.evictions.to_pylist():
        if not e["induced"]:
            b = index[(e["msg"], e["block"])]
            out[b] = min(out.get(b, 10**9), e["request"])
    return out


def _without_induced_columns(trace: Trace) -> dict[str, object]:
    return {t: trace.table(t).select([c for c in trace.table(t).column_names
                                      if not c.startswith("induced")]).to_pydict()
            for t in ("requests", "actions", "evictions")}


# -- real logs --------------------------------------------------------------------------------


def test_none_induces_nothing_on_the_logs_and_the_samples(logs_corpus, sample_corpus) -> None:  # type: ignore[no-untyped-def]
    none = load_policy("none")
    for corpus in (logs_corpus, sample_corpus):
        for rid in corpus.replayable():
            trace = replay(corpus.prepared(rid), none, calibration=corpus.calibration(rid))
            assert not _induced_actions(trace)
            assert not any(trace.columns("evictions")["induced"])
            assert sum(trace.columns("requests")["induced_tokens"]) == 0


def _turn_of_requests(path: str) -> list[int]:
    """Per request of a generated log (Claude Code JSON lines: an assistant message with usage is
    a request, split over lines sharing its id), the count of user text messages before it:
    walked from the raw file, not from the prepared run."""
    turns, n_user, seen = [], 0, set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            msg = rec.get("message") or {}
            role = msg.get("role") or rec.get("type")
            content = msg.get("content")
            if role == "user" and (isinstance(content, str) or any(
                    isinstance(c, dict) and c.get("type") == "text" for c in content or [])):
                n_user += 1
            if role == "assistant" and msg.get("usage") and msg.get("id") not in seen:
                seen.add(msg.get("id"))
                turns.append(n_user)
    return turns


@pytest.mark.parametrize("log", ["refactor-long.jsonl", "test-fix-loop.jsonl",
                                 "scenarios/reserve-long-turn.jsonl"])
def test_a_recall_placeholder_loops_where_the_corrected_one_does_not(logs_corpus, log) -> None:  # type: ignore[no-untyped-def]
    """#22 item 3 on ordinary embedded logs: two-tier-original's placeholder ("call the tool
    again") re-reads at once what it trimmed and is needed later, the re-read is trimmed again
    before the need and re-read again — bounded by the cap per turn, every unmet need past it
    counted; two-tier-corrected's neutral placeholder starts no loop."""
    source = dict(zip(logs_corpus.runs["run_id"].to_pylist(),
                      logs_corpus.runs["source"].to_pylist()))
    rid = next(r for r in logs_corpus.replayable() if source[r].endswith(log))
    run, cal = logs_corpus.prepared(rid), logs_corpus.calibration(rid)
    original = replay(run, load_policy("two-tier-original"), calibration=cal)
    corrected = replay(run, load_policy("two-tier-corrected"), calibration=cal)
    made = [a for a in _induced_actions(original) if not a["undone"]]
    invited = [a for a in made if a["when"] == "invited"]
    # the loop: one content re-read at once, more than once
    assert max(Counter(a["first_msg"] for a in invited).values()) >= 2
    assert not [a for a in _induced_actions(corrected) if a["when"] == "invited"]
    # bounded: at most the cap per turn, turns walked from the raw file
    cap = load_policy("two-tier-original").behaviour.max_rereads_per_turn
    turns = _turn_of_requests(_log_path(log))
    assert len(turns) == run.n_requests
    per_turn = Counter(turns[a["request"]] for a in made)  # type: ignore[index]
    assert max(per_turn.values()) <= cap
    capped = [a for a in _induced_actions(original) if a["undone"]]
    for a in capped:  # counted only where the turn had reached its cap
        assert per_turn[turns[a["request"]]] == cap  # type: ignore[index]


def _log_path(log: str) -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[3] / "logs" / log)


# -- policy -----------------------------------------------------------------------------------


def test_behaviour_block_is_read_and_checked() -> None:
    p = policy_from_dict({"name": "x", "behaviour": {"rereads": False, "max_rereads_per_turn": 3,
                                                     "invited_recall": "at_need"}})
    assert p.behaviour == Behaviour(rereads=False, max_rereads_per_turn=3,
                                    invited_recall="at_need")
    assert replace_path(p, "behaviour.max_rereads_per_turn", 7).behaviour.max_rereads_per_turn == 7
    with pytest.raises(PolicyError, match="max_rereads_per_turn"):
        policy_from_dict({"behaviour": {"max_rereads_per_turn": 5000}})
    with pytest.raises(PolicyError, match="invited_recall"):
        policy_from_dict({"behaviour": {"invited_recall": "never"}})
    with pytest.raises(PolicyError, match="did you mean"):
        policy_from_dict({"behaviour": {"reread": True}})
