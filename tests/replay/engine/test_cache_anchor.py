"""Cache reads anchored on the recorded ones (``replay.engine.cache_anchor``).

A request whose context is the recorded one reads what the log recorded (checked against the
raw file of a real session, read here); a real cache's miss on a request the policy changed
costs the replay the same tokens; without anchored truth or without a cache, the model alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.policy import load_policy, policy_from_dict
from tests.replay.engine.tier_runs import lines, prepared, start

NAME = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
RECORDED_INPUT = [20_000, 22_000, 24_000, 26_000, 28_000]
FULL_HITS = [4_000, 20_000, 22_000, 24_000, 26_000]
"""Request 0 reads a prefix warm from before the run; each later one the whole previous prompt."""
MISS_TOKENS = 3_000


def _recorded_reads(path: Path) -> list[int]:
    """cache_read_input_tokens per assistant message id, in order (main chain only)."""
    seen: dict[str, int] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("isSidechain") or rec.get("type") != "assistant":
            continue
        seen.setdefault(rec["message"]["id"], rec["message"]["usage"]["cache_read_input_tokens"])
    return list(seen.values())


def test_an_unchanged_context_reads_what_the_log_recorded(samples, sample_corpus):  # type: ignore[no-untyped-def]
    reads = _recorded_reads(samples / "claude-code" / NAME)
    rid = next(r for r, s in zip(sample_corpus.run_ids, sample_corpus.runs["source"].to_pylist())
               if s.endswith("claude-code/" + NAME))
    req = replay(sample_corpus.prepared(rid), load_policy("none"),
                 calibration=sample_corpus.calibration(rid)).requests.to_pydict()
    assert len(req["cached_tokens"]) == len(reads)
    first_compaction = sample_corpus.prepared(rid).first_compaction_request
    assert first_compaction is not None
    # up to the harness's compaction `none` sends what the harness sent: the reads are the log's,
    # misses included (the model alone reads the whole previous prompt, and 0 on request 0)
    assert req["cached_tokens"][:first_compaction] == reads[:first_compaction]
    assert reads[0] > 0 and any(r < t_prev for r, t_prev in zip(
        reads[1:first_compaction], req["truth_tokens"][:first_compaction - 1]))


def _run(reads: list[int]) -> PreparedRun:
    """A task and four reads of 200 lines, a request after each call and a final answer."""
    b = start()
    usage = iter(zip(RECORDED_INPUT, reads))
    for i in range(4):
        b.message("assistant")
        b.tool_call(f"c{i}", "Read", {"file_path": f"src/f{i}.py"})
        rec, read = next(usage)
        b.request(input_tokens=rec, cache_read_tokens=read)
        b.message("tool")
        b.tool_result(f"c{i}", lines(f"out {i}", 200))
    b.message("assistant")
    b.text("finished")
    rec, read = next(usage)
    b.request(input_tokens=rec, cache_read_tokens=read)
    return prepared(b)


def _policy(**over: Any) -> Any:
    """Anchored truth; trims every tool result but the newest two before each request."""
    spec: dict[str, Any] = {"name": "t", "server": {"window_tokens": 200_000},
                            "tiers": [{"type": "trim", "protect": {"tool_results": 2}}]}
    spec.update(over)
    return policy_from_dict(spec)


def _cached(run: PreparedRun, **over: Any) -> list[int]:
    return replay(run, _policy(**over)).requests.to_pydict()["cached_tokens"]


def test_a_recorded_miss_costs_the_replay_the_same_tokens() -> None:
    missed = list(FULL_HITS)
    missed[3] -= MISS_TOKENS
    full, miss = _cached(_run(FULL_HITS)), _cached(_run(missed))
    # requests 0–2: nothing trimmed yet, the recorded reads (the warm prefix of request 0 too)
    assert full[:3] == FULL_HITS[:3] and miss[:3] == missed[:3]
    # request 3: the trim of the oldest result cut the shared prefix: fewer reads than recorded
    assert 0 < full[3] < FULL_HITS[3]
    # ... and the real cache's miss there costs the replay the same tokens
    assert miss[3] == full[3] - MISS_TOKENS
    assert miss[4] == full[4]


def test_a_miss_larger_than_the_read_reads_nothing() -> None:
    missed = list(FULL_HITS)
    missed[3] = 0
    assert _cached(_run(missed))[3] == 0


@pytest.mark.parametrize("over", [
    {"cache": {"provider": "none"}},
    {"truth": {"method": "tokenizer"}},
], ids=["no cache", "tokenizer truth"])
def test_without_anchored_truth_or_a_cache_the_model_alone_decides(over: dict[str, Any]) -> None:
    got = _cached(_run(FULL_HITS), **over)
    assert got[0] == 0  # the model knows no warm prefix
    if "cache" in over:
        assert got == [0] * len(FULL_HITS)
