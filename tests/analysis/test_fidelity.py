"""The fidelity figures (``analysis.fidelity``) against counts read from the raw sample logs."""

from __future__ import annotations

import json
import statistics

from analysis.fidelity import fidelity, fidelity_totals

NAME = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""The Claude Code sample that auto-compacted once."""


def _raw(path):  # type: ignore[no-untyped-def]
    """Per request (assistant message id, main chain): the recorded prompt; and the first request
    after the compact_boundary."""
    prompts: dict[str, int] = {}
    after = None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("isSidechain"):
            continue
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            after = len(prompts) if after is None else after
        if rec.get("type") == "assistant" and rec["message"]["id"] not in prompts:
            u = rec["message"]["usage"]
            prompts[rec["message"]["id"]] = (u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                                             + u.get("cache_creation_input_tokens", 0))
    return list(prompts.values()), after


def test_fidelity_of_the_auto_compacted_sample(samples, sample_corpus):  # type: ignore[no-untyped-def]
    from replay.engine.fold import replay
    from replay.policy import load_policy

    rows = {r.source: r for r in fidelity(sample_corpus)}
    prompts, after = _raw(samples / "claude-code" / NAME)
    r = rows["claude-code/" + NAME]
    assert r.policy == "claude-code" and r.truth_source == "anchored"
    assert r.recorded_trigger == "auto"
    assert r.recorded_compaction == after
    rid = r.run_id
    trace = replay(sample_corpus.prepared(rid), load_policy("claude-code"),
                   calibration=sample_corpus.calibration(rid))
    cut = min(a["request"] for a in trace.actions.to_pylist() if a["kind"] == "summarise")
    assert r.replayed_compaction == cut and r.placement_error_requests == cut - after
    truth = trace.requests["truth_tokens"].to_pylist()
    expected = statistics.median((truth[k] - prompts[k]) / prompts[k]
                                 for k in range(after, len(prompts)))
    assert abs(r.post_size_error_median_frac - expected) < 1e-12  # type: ignore[operator]


def test_runs_without_usage_are_left_out_and_totals_add_up(sample_corpus):  # type: ignore[no-untyped-def]
    rows = fidelity(sample_corpus)
    sources = {r.source for r in rows}
    assert not any(s.startswith("swe-agent/") for s in sources)  # SWE-agent logs record no usage
    t = fidelity_totals(rows)
    assert t["runs"] == len(rows)
    compacted = [r for r in rows if r.recorded_compaction is not None]
    assert t["runs_compacted"] + t["runs_manual"] + t["runs_trigger_unknown"] == len(compacted)
    # the 217-request sample was compacted by hand (/compact): not a policy's placement
    manual = {r.source for r in rows if r.recorded_trigger == "manual"}
    assert manual == {"claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"}
    assert t["placement_within_tolerance"] <= t["runs_compacted"]
