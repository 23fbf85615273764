"""Truth anchored on recorded usage (``replay.engine.truth``), against counts read from the raw logs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from replay.engine.fold import replay
from replay.engine.prepared import Calibration
from replay.engine.truth import TRUTH_SOURCES, truth_plan
from replay.policy import load_policy, replace_path
from tests.claude_code_raw import recorded_prompts

NAME = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
"""The 217-request Claude Code sample that auto-compacted once."""


def _run_id(corpus, suffix: str) -> str:  # type: ignore[no-untyped-def]
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith(suffix))


def _recorded_prompts(path: Path) -> tuple[list[int], int]:
    """``recorded_prompts`` of a log that has a compact_boundary."""
    prompts, boundary_at = recorded_prompts(path)
    assert boundary_at is not None
    return prompts, boundary_at


def test_none_reproduces_the_recorded_prompt_through_a_manual_compaction(samples, sample_corpus):  # type: ignore[no-untyped-def]
    """The sample's compaction was the user's /compact (trigger manual): ``none`` replays it
    (``manual_compactions: keep``) and sends every recorded prompt; with ``drop`` it keeps
    everything after it."""
    recorded, boundary = _recorded_prompts(samples / "claude-code" / NAME)
    rid = _run_id(sample_corpus, "claude-code/" + NAME)
    run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
    trace = replay(run, load_policy("none"), calibration=cal)
    req = trace.requests.to_pydict()
    assert set(req["truth_source"]) == {"anchored"}
    assert req["truth_tokens"] == recorded  # input + cache read + cache write, every request
    (action,) = trace.actions.to_pylist()
    assert (action["tier"], action["request"], action["recorded_summary"], action["undone"]) \
        == ("manual /compact", boundary, True, False)
    from analysis.per_run.rollup import RUN_ROLLUP
    from replay.apply_policy import run as run_policy

    rows = {r["source"]: r for r in run_policy(sample_corpus, load_policy("none"),
                                               rollup=RUN_ROLLUP).rollup}
    assert rows["claude-code/" + NAME]["note"].startswith("1 /compact replayed as recorded")
    assert rows["claude-code/" + NAME]["n_summaries"] == 1
    assert rows["claude-code/tool_heavy.jsonl"]["note"] is None
    dropped = replay(run, replace_path(load_policy("none"), "manual_compactions", "drop"),
                     calibration=cal)
    truth = dropped.requests["truth_tokens"].to_pylist()
    assert dropped.actions.num_rows == 0
    assert truth[:boundary] == recorded[:boundary]
    assert all(t > r for t, r in zip(truth[boundary:], recorded[boundary:]))


def test_claude_code_reproduces_it_until_a_compaction(samples, sample_corpus):  # type: ignore[no-untyped-def]
    recorded, boundary = _recorded_prompts(samples / "claude-code" / NAME)
    rid = _run_id(sample_corpus, "claude-code/" + NAME)
    trace = replay(sample_corpus.prepared(rid), load_policy("claude-code"),
                   calibration=sample_corpus.calibration(rid))
    first = min([a["request"] for a in trace.actions.to_pylist()] + [boundary])
    assert first > 100
    truth = trace.requests["truth_tokens"].to_pylist()
    assert truth[:first] == recorded[:first]


def test_anchored_minus_tokenizer_truth_is_the_anchor_offset(logs_corpus):  # type: ignore[no-untyped-def]
    """Tiers act on estimates, so both truths see the same actions; the difference per request
    is recorded input − raw tokenizer count at the latest request with usage (scale 1)."""
    rid = _run_id(logs_corpus, "refactor-long.jsonl")
    run = logs_corpus.prepared(rid)
    base = load_policy("two-tier-corrected")
    anchored = replay(run, base).requests.to_pydict()  # no calibration: anchored-unscaled, ×1
    plain = replay(run, replace_path(base, "truth.method", "tokenizer")).requests.to_pydict()
    raw = replay(run, replace_path(load_policy("none"), "truth.method", "tokenizer"))
    raw_truth = raw.requests["truth_tokens"].to_pylist()
    assert set(anchored["truth_source"]) == {"anchored-unscaled"}
    assert set(plain["truth_source"]) == {"tokenizer"}
    offset = None
    for k, rec in enumerate(anchored["recorded_input_tokens"]):
        if rec:
            offset = rec - raw_truth[k]
        assert anchored["truth_tokens"][k] - plain["truth_tokens"][k] == offset
    assert any(a > 0 for a in replay(run, base).actions["n_blocks"].to_pylist())


def test_runs_without_usage_fall_back_and_say_so(sample_corpus):  # type: ignore[no-untyped-def]
    rid = _run_id(sample_corpus, "v1fc_gpt4__sweagenttestrepo-1c2844.traj")
    run = sample_corpus.prepared(rid)
    assert all(v is None for v in run.recorded_input)
    got = replay(run, load_policy("two-tier-corrected")).requests.to_pydict()
    plain = replay(run, replace_path(load_policy("two-tier-corrected"), "truth.method",
                                     "tokenizer")).requests.to_pydict()
    assert set(got["truth_source"]) == {"tokenizer-fallback"}
    assert got["truth_tokens"] == plain["truth_tokens"]
    fitted = replay(run, replace_path(load_policy("none"), "truth.method", "calibrated"))
    assert set(fitted.requests["truth_source"].to_pylist()) == {"tokenizer-fallback"}


def test_truth_source_reaches_the_summary(sample_corpus):  # type: ignore[no-untyped-def]
    from analysis.per_run.rollup import RUN_ROLLUP
    from replay.apply_policy import run as run_policy

    result = run_policy(sample_corpus, load_policy("none"), rollup=RUN_ROLLUP)
    sources = {r["source"]: r["truth_source"] for r in result.rollup}
    assert sources["claude-code/" + NAME] == "anchored"
    assert sources["swe-agent/v1fc_gpt4__sweagenttestrepo-1c2844.traj"] == "tokenizer-fallback"
    assert set(sources.values()) <= set(TRUTH_SOURCES)


def test_an_anchored_estimator_adds_the_count_since_to_the_last_reported_size(  # type: ignore[no-untyped-def]
        sample_corpus):
    """Claude Code's ``tokenCountWithEstimation``: last usage + what arrived since.  Checked
    against a replay estimating with the plain tokenizer (the same counts, another path)."""
    rid = _run_id(sample_corpus, "claude-code/" + NAME)
    run = sample_corpus.prepared(rid)
    base = load_policy("none")
    anchored = replace_path(base, "estimator.method", "anchored")
    got = replay(run, anchored).requests.to_pydict()
    plain = replay(run, base).requests.to_pydict()["est_tokens"]
    truth = got["truth_tokens"]
    # before any usage is reported: calibrated without a calibration = the plain count
    assert got["est_tokens"][0] == plain[0]
    assert got["est_tokens"][1:] == [t + p - q for t, p, q in zip(truth, plain[1:], plain)]
    # the estimate the trigger sees tracks the server's count, not the tokenizer's
    assert all(abs(e - t) < abs(p - t) for e, p, t in
               zip(got["est_tokens"][1:50], plain[1:50], truth[1:50]))


def test_claude_code_compacts_where_the_harness_did_and_sends_what_it_sent(  # type: ignore[no-untyped-def]
        samples, sample_corpus):
    """The 258c7280 sample auto-compacted before request 102 (its compact_boundary) at 166,759
    tokens on a 167,000 trigger: the preset fires there, with the run's whole calibration or
    only the first half of it, reuses the recorded summary and sends the recorded prompts."""
    name = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    recorded, boundary = _recorded_prompts(samples / "claude-code" / name)
    rid = _run_id(sample_corpus, "claude-code/" + name)
    run = sample_corpus.prepared(rid)
    from replay.engine.calibrate import from_points, points

    pts = points(run)
    for cal in (sample_corpus.calibration(rid), from_points(pts[:len(pts) // 2])):
        trace = replay(run, load_policy("claude-code"), calibration=cal)
        (action,) = trace.actions.to_pylist()
        assert (action["request"], action["recorded_summary"]) == (boundary, True)
        assert trace.requests.to_pydict()["truth_tokens"] == recorded


def test_a_log_that_begins_after_a_compaction_starts_from_its_summary(tmp_path):  # type: ignore[no-untyped-def]
    """A session continued after an auto-compaction: its file begins with the compact_boundary
    and the summary.  Every policy's first context holds that summary, so ``none`` sends the
    recorded prompts (read here from the raw file) exactly."""
    from replay.corpus import open_corpus
    from tests.conftest import REPO

    path = REPO / "tests" / "fixtures" / "claude_code" / \
        "spotter-8463c716-after-compaction-2.1.39.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    assert first.get("subtype") == "compact_boundary"
    seen: dict[str, int] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant" and not rec.get("isSidechain"):
            u = rec["message"]["usage"]
            seen.setdefault(rec["message"]["id"], u["input_tokens"]
                            + u.get("cache_read_input_tokens", 0)
                            + u.get("cache_creation_input_tokens", 0))
    corpus = open_corpus([path], cache_dir=tmp_path / "ds")
    (rid,) = corpus.replayable()
    trace = replay(corpus.prepared(rid), load_policy("none"), calibration=corpus.calibration(rid))
    assert trace.requests["truth_tokens"].to_pylist() == list(seen.values())
    assert trace.actions.num_rows == 0  # where the run starts, not an action


def test_a_plan_is_memoised_by_what_it_depends_on(sample_corpus):  # type: ignore[no-untyped-def]
    """``truth_plan`` keeps one plan per run, truth counter, overheads and calibration: another
    policy that agrees on them gets the same plan, one that changes any of them its own, the
    one a fresh run (no memo) computes."""
    rid = _run_id(sample_corpus, "claude-code/" + NAME)
    run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
    base = load_policy("none")
    plan = truth_plan(run, base, cal)
    assert truth_plan(run, dataclasses.replace(base, name="other"), cal) is plan
    changed = [replace_path(base, "server.message_overhead_tokens",
                            base.server.message_overhead_tokens + 3),
               replace_path(base, "truth.method", "tokenizer")]
    for policy, calibration in [*((p, cal) for p in changed), (base, None)]:
        got = truth_plan(run, policy, calibration)
        fresh = truth_plan(dataclasses.replace(run, _counts={}), policy, calibration)
        assert (got.source, got.counter, got.offsets, got.reattached) == (
            fresh.source, fresh.counter, fresh.offsets, fresh.reattached)
        assert (got.source, got.offsets) != (plan.source, plan.offsets)


def test_a_calibration_hashes_as_its_fields() -> None:
    """``Calibration``'s own (compiled) hash covers every field, as the dataclass's would."""
    cal = Calibration(overhead_tokens=1.5, scale=1.1, n_points=10, mean_abs_error_frac=0.02,
                      n_points_estimated=1, held_out_error_frac=0.1,
                      held_out_anchored_error_frac=0.2, flags=("few points",), source="corpus")
    assert hash(cal) == hash(tuple(getattr(cal, f.name) for f in dataclasses.fields(cal)))


def test_a_denser_tokenizer_scales_the_replay_with_it(samples, tmp_path):  # type: ignore[no-untyped-def]
    """Claude Opus 4.7's tokenizer reads about 1.2-1.3x as many tokens as 4.6's on the same
    text (harness-policies.md Part C).  The real 217-request sample (Opus 4.6, fitted at
    ~1.6) with every recorded prompt size x 1.25 is that session as 4.7 would count it: its fit
    (a least-squares line: scale and overhead x 1.25, up to the usage's rounding) stays
    usable, so the replay stays anchored and every request's truth is 1.25x the original's,
    what a policy removed included.  With a plausible top of 1.8 the fit (~2.0) was refused
    and the replay anchored unscaled: the tokens a policy removed counted at 1x."""
    from replay.corpus import open_corpus

    factor = 1.25
    lines = []
    for line in (samples / "claude-code" / NAME).read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") if isinstance(rec, dict) else None
        if isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
            usage = msg["usage"]
            for key in ("input_tokens", "cache_read_input_tokens",
                        "cache_creation_input_tokens"):
                if isinstance(usage.get(key), int):
                    usage[key] = round(usage[key] * factor)
            if msg.get("model") == "claude-opus-4-6":
                msg["model"] = "claude-opus-4-7"
        lines.append(json.dumps(rec))
    denser = tmp_path / "opus-4-7.jsonl"
    denser.write_text("\n".join(lines) + "\n")
    orig = open_corpus([samples / "claude-code" / NAME], cache_dir=tmp_path / "a")
    corpus = open_corpus([denser], cache_dir=tmp_path / "b")
    (orig_rid,), (rid,) = orig.replayable(), corpus.replayable()
    cal0, cal = orig.calibration(orig_rid), corpus.calibration(rid)
    assert cal0 is not None and cal0.usable and cal is not None
    assert cal.usable, cal.flags
    assert abs(cal.scale / cal0.scale - factor) < 0.005
    policy = load_policy("two-tier-corrected")
    before = replay(orig.prepared(orig_rid), policy, calibration=cal0).requests.to_pydict()
    after = replay(corpus.prepared(rid), policy, calibration=cal).requests.to_pydict()
    assert set(after["truth_source"]) == {"anchored"}
    ratios = [a / b for a, b in zip(after["truth_tokens"], before["truth_tokens"]) if b]
    assert len(ratios) == len(before["truth_tokens"])
    assert all(abs(r - factor) < 0.01 for r in ratios), (min(ratios), max(ratios))
