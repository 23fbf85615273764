"""The fidelity figures (``analysis.fidelity``) against counts read from the raw sample logs."""

from __future__ import annotations

import json
import statistics

from analysis.fidelity import HELD_OUT_TARGET_FRAC, fidelity, fidelity_totals, totals_lines
from replay.engine.calibrate import points

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


def test_held_out_error_is_that_of_the_truth_the_replay_uses(sample_corpus):  # type: ignore[no-untyped-def]
    rows = fidelity(sample_corpus)
    judged = [r for r in rows if r.held_out_error_frac is not None]
    assert judged and all(r.truth_source == "anchored" for r in judged)  # every preset's default
    for r in judged:
        # anchored truth: the recorded input of the first half's last request + scale × growth
        pts = points(sample_corpus.prepared(r.run_id))
        half = len(pts) // 2
        cal = sample_corpus.calibration(r.run_id)
        (x_a, y_a), scale = pts[half - 1], _ols_scale(pts[:half])
        expected = statistics.median(abs(y_a + scale * (x - x_a) - y) / y for x, y in pts[half:])
        assert abs(r.held_out_error_frac - expected) < 1e-9
        assert r.held_out_anchored_error_frac == r.held_out_error_frac
        assert r.held_out_fitted_error_frac == cal.held_out_error_frac
    # a flagged fit's scale is not used by the truth (anchored-unscaled): not judged by it
    assert all(r.held_out_error_frac is None for r in rows if r.truth_source != "anchored")
    t = fidelity_totals(rows)
    assert t["held_out_runs_by_truth"] == {"anchored": len(judged)}
    assert t["held_out_error_median_frac"] == statistics.median(
        r.held_out_error_frac for r in judged)
    assert t["held_out_within_target"] == sum(
        r.held_out_error_frac <= HELD_OUT_TARGET_FRAC for r in judged)  # type: ignore[operator]
    fitted = [r.held_out_fitted_error_frac for r in rows if r.held_out_fitted_error_frac is not None]
    assert t["held_out_fitted_error_median_frac"] == statistics.median(fitted)
    line = totals_lines(t)[-1]
    assert line.startswith(f"held-out error of the truth each replay uses (anchored: "
                           f"{len(judged)} runs) within 1.5%: {t['held_out_within_target']} of "
                           f"{len(judged)}")


def _ols_scale(pts):  # type: ignore[no-untyped-def]
    n = len(pts)
    mx, my = sum(x for x, _ in pts) / n, sum(y for _, y in pts) / n
    return (sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts))
