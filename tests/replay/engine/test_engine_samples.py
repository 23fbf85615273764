"""The engine on the real sample logs: the behaviour the seed harnesses' authors measured."""

from __future__ import annotations

import json
from pathlib import Path

from replay.engine.fold import replay
from replay.policy import load_policy, replace_paths


def _run_id(corpus, suffix: str) -> str:  # type: ignore[no-untyped-def]
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith(suffix))


def _recorded_auto_compaction(samples: Path, name: str) -> int:
    """Index of the first request after the auto compact_boundary, counted from the raw file."""
    ids, seen_boundary, first_after = [], False, None
    for line in (samples / "claude-code" / name).read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary" and \
                rec["compactMetadata"]["trigger"] == "auto":
            seen_boundary = True
        if rec.get("type") == "assistant" and rec["message"]["id"] not in ids:
            ids.append(rec["message"]["id"])
            if seen_boundary and first_after is None:
                first_after = len(ids) - 1
    assert first_after is not None
    return first_after


def test_claude_code_preset_compacts_where_the_recorded_harness_did(samples, sample_corpus):  # type: ignore[no-untyped-def]
    name = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    rid = _run_id(sample_corpus, "claude-code/" + name)
    cal = sample_corpus.calibration(rid)
    assert cal is not None and cal.mean_abs_error_frac < 0.05
    trace = replay(sample_corpus.prepared(rid), load_policy("claude-code"), calibration=cal)
    summaries = [a["request"] for a in trace.actions.to_pylist() if a["kind"] == "summarise"]
    recorded = _recorded_auto_compaction(samples, name)
    assert summaries, "the preset never compacted"
    assert abs(summaries[0] - recorded) <= 3, (summaries, recorded)


def test_original_two_tier_overshoots_a_32k_window_where_the_corrected_does_not(sample_corpus):  # type: ignore[no-untyped-def]
    def small(name: str):  # type: ignore[no-untyped-def]
        # truth counted by the tokenizer: judged by the recorded usage, the unseen system
        # prompt and tool schemas alone (17,800-26,000 tokens) nearly fill a 32k window
        return replace_paths(load_policy(name), (
            ("server.window_tokens", 32768), ("server.reserve_tokens", 4096),
            ("truth.method", "tokenizer"), ("tiers.1.trigger.at_tokens", 20000)))

    original, corrected = small("two-tier-original"), small("two-tier-corrected")
    long_runs = [r for r in sample_corpus.replayable() if sample_corpus.prepared(r).n_requests >= 100]
    assert len(long_runs) >= 3
    usable = 32768 - 4096
    over_original = over_corrected = 0
    for rid in long_runs:
        run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
        over_original += sum(x > 0 for x in replay(run, original, calibration=cal)
                             .requests["overshoot_tokens"].to_pylist())
        rows = replay(run, corrected, calibration=cal).requests.to_pylist()
        for row in rows:
            if row["overshoot_tokens"] > 0:
                over_corrected += 1
                # the one overshoot left: the newest output alone nearly fills the window, and
                # it is never evicted (the model has not seen it); counted from the raw stream
                hi = max(run.req_blocks[:row["request"] + 1])
                newest = [b for b in range(hi) if run.msg[b] == run.msg[hi - 1]]
                assert sum(run.tokens["o200k_base"][b] for b in newest) > 0.9 * usable
    assert over_original >= 1
    assert over_corrected <= 1 < over_original


def test_every_preset_replays_every_sample_without_orphans(sample_corpus):  # type: ignore[no-untyped-def]
    from replay.policy import presets

    for name in presets():
        policy = load_policy(name)
        for rid in sample_corpus.replayable():
            run = sample_corpus.prepared(rid)
            trace = replay(run, policy, calibration=sample_corpus.calibration(rid))
            assert trace.requests.num_rows == run.n_requests
            removed = {(e["msg"], e["block"]) for e in trace.evictions.to_pylist()
                       if e["fate"] != "trimmed"}
            for b in range(run.n_blocks):
                c = run.call_of[b]
                if c >= 0 and (run.msg[b], run.block[b]) not in removed:
                    assert (run.msg[c], run.block[c]) not in removed


def test_a_replay_is_the_same_whatever_was_replayed_before_on_the_run(sample_corpus):  # type: ignore[no-untyped-def]
    """The per-run memos (token sums, the need plan, the re-reads' sizes keyed by block and file
    version, placeholders) are shared by every policy and sweep setting that replays a run: a
    replay on a run whose memos other policies filled equals one on a copy with none."""
    import dataclasses

    from replay.engine.trace import INDUCED_REREAD, TRACE_SCHEMAS

    names = ("observation-masking", "two-tier-original", "anthropic-context-editing",
             "corecoder", "two-tier-corrected")
    policies = [load_policy(n) for n in names]
    induced = 0
    for run_id in sample_corpus.replayable():
        cal = sample_corpus.calibration(run_id)
        warm = sample_corpus.prepared(run_id)
        for p in policies:
            replay(warm, p, calibration=cal)
        for p in reversed(policies):
            cold = dataclasses.replace(warm, _counts={})
            a = replay(warm, p, calibration=cal)
            b = replay(cold, p, calibration=cal)
            for table in TRACE_SCHEMAS:
                assert a.table(table).equals(b.table(table)), (run_id, p.name, table)
            induced += a.table("actions").column("kind").to_pylist().count(INDUCED_REREAD)
    assert induced  # the memos of induced re-reads were exercised
