"""Recorded summaries reused where the replay compacts near the recorded compaction."""

from __future__ import annotations

import pytest

from replay.engine.fold import replay
from replay.policy import load_policy, replace_path
from tests.claude_code_raw import recorded_prompts

NAME = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""The Claude Code sample that auto-compacted once (at 167,094 tokens)."""


def _trace(corpus, policy):  # type: ignore[no-untyped-def]
    rid = next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
               if s == "claude-code/" + NAME)
    return replay(corpus.prepared(rid), policy, calibration=corpus.calibration(rid))


@pytest.mark.parametrize("estimator", ["anchored", "calibrated"])
def test_the_recorded_summary_makes_the_replay_send_what_the_harness_sent(  # type: ignore[no-untyped-def]
        samples, sample_corpus, estimator):
    """The preset's anchored estimator fires where the harness did; a fitted estimator fires one
    request late (the case issue #15 measured) and still reuses the recorded compaction."""
    prompts, after = recorded_prompts(samples / "claude-code" / NAME)
    policy = replace_path(load_policy("claude-code"), "estimator.method", estimator)
    trace = _trace(sample_corpus, policy)
    acts = [a for a in trace.actions.to_pylist() if a["kind"] == "summarise"]
    assert len(acts) == 1 and acts[0]["recorded_summary"]
    at = acts[0]["request"]
    assert at - after == (0 if estimator == "anchored" else 1)
    truth = trace.requests["truth_tokens"].to_pylist()
    # from its compaction on, the replayed context is the recorded one: the recorded prompt
    assert truth[at:] == prompts[at:]
    assert truth[:after] == prompts[:after]


def test_without_reuse_the_stub_summary_is_used(sample_corpus):  # type: ignore[no-untyped-def]
    policy = replace_path(load_policy("claude-code"), "tiers.0.restore.recorded_within_requests",
                          None)
    acts = [a for a in _trace(sample_corpus, policy).actions.to_pylist()
            if a["kind"] == "summarise"]
    assert len(acts) == 1 and not acts[0]["recorded_summary"]


def test_a_compaction_far_from_the_recorded_one_uses_the_stub(sample_corpus):  # type: ignore[no-untyped-def]
    policy = replace_path(load_policy("claude-code"), "tiers.0.trigger.at_tokens", 120000)
    acts = [a for a in _trace(sample_corpus, policy).actions.to_pylist()
            if a["kind"] == "summarise"]
    assert acts and not any(a["recorded_summary"] for a in acts)


@pytest.mark.parametrize("early", [1, 2])
def test_fired_early_the_recorded_summary_is_still_reused(logs_corpus, early):  # type: ignore[no-untyped-def]
    """A trigger set below the harness's fires a request or two before the recorded compaction:
    its boundary is not in the context yet.  The recorded summary is used all the same (the
    exchanges up to the recorded point stay verbatim after it), which keeps the post-compaction
    prompts within 2.5 % of the recorded ones; the stub summary misses them by more than 10 %."""
    from tests.conftest import REPO

    prompts, after = recorded_prompts(REPO / "logs" / "compacting-session.jsonl")
    rid = next(r for r, s in zip(logs_corpus.run_ids, logs_corpus.runs["source"].to_pylist())
               if s == "compacting-session.jsonl")
    run, cal = logs_corpus.prepared(rid), logs_corpus.calibration(rid)
    # a level between the prompts `early` and `early + 1` requests before the compaction
    level = (prompts[after - early - 1] + prompts[after - early]) // 2
    policy = replace_path(load_policy("claude-code"), "tiers.0.trigger.at_tokens", level)

    def post_error(p):  # type: ignore[no-untyped-def]
        trace = replay(run, p, calibration=cal)
        acts = [a for a in trace.actions.to_pylist() if a["kind"] == "summarise"]
        truth = trace.requests["truth_tokens"].to_pylist()
        errs = sorted((truth[k] - prompts[k]) / prompts[k] for k in range(after, len(prompts)))
        return acts[0], errs[len(errs) // 2]

    act, err = post_error(policy)
    assert act["request"] == after - early and act["recorded_summary"]
    assert abs(err) < 0.025
    stub, stub_err = post_error(replace_path(policy, "tiers.0.restore.recorded_within_requests",
                                             None))
    assert stub["request"] == after - early and not stub["recorded_summary"]
    assert abs(stub_err) > 0.10
