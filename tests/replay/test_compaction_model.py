"""Counterfactual compactions modelled on the recorded ones (issue #15 item 2), the recorded
compactions' facts (item 1), and truth without the unseen restoration of a recorded compaction
the replay did not reuse."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.compaction_fit import (
    DEFAULT,
    MIN_COMPACTIONS,
    RecordedCompaction,
    fit_compactions,
    recorded_compactions,
)
from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.policy import TokenCounter, load_policy, replace_path

NAME = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
SPOTTER = "spotter-8463c716-after-compaction-2.1.39.jsonl"


def _rid(corpus, suffix):  # type: ignore[no-untyped-def]
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith(suffix))


def _stub(corpus, **restore):  # type: ignore[no-untyped-def]
    """claude-code with recorded reuse off (every compaction counterfactual) and ``restore``."""
    policy = replace_path(load_policy("claude-code"), "tiers.0.restore.recorded_within_requests",
                          None)
    for key, value in restore.items():
        policy = replace_path(policy, f"tiers.0.restore.{key}", value)
    rid = _rid(corpus, NAME)
    return corpus.prepared(rid), replay(corpus.prepared(rid), policy,
                                        calibration=corpus.calibration(rid))


def test_the_files_read_last_are_reattached_after_a_counterfactual_summary(sample_corpus):  # type: ignore[no-untyped-def]
    run, without = _stub(sample_corpus, files=0)
    _, with_files = _stub(sample_corpus, files=3, file_max_tokens=10**6,
                          files_max_tokens=10**7)
    cut = next(a for a in without.actions.to_pylist() if a["kind"] == "summarise")
    at = cut["request"]
    # the last 3 distinct paths read before the cut, walked plainly: their results' truth
    removed = {(e["msg"], e["block"]) for e in without.evictions.to_pylist()
               if e["request"] == at}
    pos = {(m, b): i for i, (m, b) in enumerate(zip(run.msg, run.block))}
    split = max(pos[k] for k in removed) + 1
    paths: list[str] = []
    results: list[int] = []
    for b in range(split - 1, -1, -1):
        call = run.call_of[b]
        if (run.kind[b] == "tool_result" and call >= 0 and run.op[call] == "read"
                and run.path[call] and not run.is_error[b] and run.path[call] not in paths):
            paths.append(run.path[call])
            results.append(b)
            if len(paths) == 3:
                break
    assert len(results) == 3
    cal = sample_corpus.calibration(_rid(sample_corpus, NAME))
    counts = run.counts(TokenCounter(method="tokenizer", tokenizer="o200k_base", scale=cal.scale),
                        cal)
    t0 = without.requests["truth_tokens"].to_pylist()
    t1 = with_files.requests["truth_tokens"].to_pylist()
    assert t1[:at] == t0[:at]
    assert t1[at] - t0[at] == sum(counts[b] for b in results)


def test_the_modelled_summary_size_replaces_the_fixed_stub(sample_corpus):  # type: ignore[no-untyped-def]
    _, fixed = _stub(sample_corpus, summary_base_tokens=None)  # the fixed 6,000-token stub
    _, small = _stub(sample_corpus, summary_base_tokens=1000)
    _, grows = _stub(sample_corpus, summary_base_tokens=0, summary_tokens_per_summarised=0.01)
    size = {name: next(a["summary_tokens"] for a in t.actions.to_pylist()
                       if a["kind"] == "summarise")
            for name, t in (("fixed", fixed), ("small", small), ("grows", grows))}
    # summary_tokens is the stub's truth: ~1.1-1.6 provider tokens per stub token here
    assert size["small"] < size["fixed"] / 4
    summarised = next(a for a in grows.actions.to_pylist() if a["kind"] == "summarise")
    assert 0.5 * 0.01 * summarised["reclaimed_tokens"] < size["grows"] < 3 * 0.01 * (
        summarised["reclaimed_tokens"] + size["grows"])


def test_the_recorded_compactions_of_real_logs(samples, tmp_path):  # type: ignore[no-untyped-def]
    corpus = open_corpus([samples / "claude-code" / NAME, FIXTURES / SPOTTER],
                         cache_dir=tmp_path / "ds")
    got = {c.source.rsplit("/", 1)[-1]: c for c in recorded_compactions(corpus)}
    s, f = got[NAME], got[SPOTTER]
    assert (s.trigger, s.first_request, s.summary_tokens > 2000) == ("auto", 102, True)
    assert s.summary_text.startswith("This session is being continued")
    # the last prompt before the boundary, as the log recorded it (input + cache read + write)
    rows = [json.loads(line) for line in (samples / "claude-code" / NAME).read_text().splitlines()]
    prompts: dict[str, int] = {}
    for r in rows:
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
            break
        if r.get("type") == "assistant" and not r.get("isSidechain"):
            u = r["message"]["usage"]
            prompts[r["message"]["id"]] = (u["input_tokens"] + u["cache_read_input_tokens"]
                                           + u["cache_creation_input_tokens"])
    assert s.tokens_before == list(prompts.values())[-1]
    assert s.reattached_tokens is not None and 0 < s.reattached_tokens < 20000
    assert s.files_tokens_by_count is not None and s.files_tokens_by_count[0] == 0
    # the fixture starts at its boundary: the harness's preTokens, no history before
    assert (f.trigger, f.first_request, f.tokens_before) == ("auto", 0, 167731)
    assert f.files_tokens_by_count is None


def _compaction(x: int, y: int, reattached: int, files: tuple[int, ...]) -> RecordedCompaction:
    return RecordedCompaction(run_id=str(x), source=str(x), index=0, trigger="auto",
                              first_request=5, tokens_before=x + 20000, summarised_tokens=x,
                              summary_tokens=y, reattached_tokens=reattached,
                              files_tokens_by_count=files, summary_text="")


def test_too_few_compactions_give_the_documented_defaults_and_say_so() -> None:
    few = [_compaction(100000, 3000, 0, (0,) * 11)] * (MIN_COMPACTIONS - 1)
    got = fit_compactions(few)
    assert got.restore == DEFAULT
    assert got.source.count("defaults") == 2 and "fewer than" in got.source


def test_the_fit_follows_the_recorded_compactions() -> None:
    files = tuple(1000 * k for k in range(11))
    rising = [_compaction(x, 500 + x // 50, 3000, files) for x in (50000, 100000, 150000)]
    got = fit_compactions(rising)
    assert got.summary_trend and got.source.count("corpus") == 2
    assert got.restore.summary_base_tokens == 500
    assert abs(got.restore.summary_tokens_per_summarised - 0.02) < 1e-9
    assert got.restore.files == 3 and got.reattached_error_median_tokens == 0
    flat = [_compaction(x, y, 0, files) for x, y in ((50000, 4000), (100000, 3000),
                                                      (150000, 3500))]
    got = fit_compactions(flat)  # no rising trend: the median summary, nothing re-attached
    assert not got.summary_trend
    assert (got.restore.summary_base_tokens, got.restore.summary_tokens_per_summarised,
            got.restore.files) == (3500, 0.0, 0)


def test_calibrate_reports_the_model(sample_corpus) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(app, ["calibrate", str(sample_corpus.root), "--compactions",
                                      "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["model"]["source"].startswith("summary: defaults")  # 2 real ones in the samples
    assert doc["model"]["files"] == DEFAULT.files
    assert any(r["trigger"] == "manual" for r in doc["compactions"])
    assert all(isinstance(r["summary_tokens"], int) for r in doc["compactions"])
    text = CliRunner().invoke(app, ["calibrate", str(sample_corpus.root), "--compactions"])
    assert text.exit_code == 0 and "restore: {summary_base_tokens: 3500" in text.output
    assert "defaults (2 measured" in text.output


def test_a_replay_that_kept_the_history_sends_no_unseen_restoration(sample_corpus):  # type: ignore[no-untyped-def]
    rid = _rid(sample_corpus, NAME)
    run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
    truth = replay(run, load_policy("none"), calibration=cal).requests["truth_tokens"].to_pylist()
    counts = run.counts(TokenCounter(method="tokenizer", tokenizer="o200k_base", scale=cal.scale),
                        cal)
    first = run.harness_first_request[0]
    arrived = sum(counts[run.req_blocks[first - 1]:run.req_blocks[first]])
    # across the recorded compaction the uncompacted replay grows by what arrived, not by what
    # the harness re-attached after its own summary
    assert truth[first] - truth[first - 1] == arrived


def test_a_negative_jump_is_no_reattachment(tmp_path: Path) -> None:
    """claude-code-log's compaction test file records 10 input tokens a request: its prompt after
    the compaction is smaller than the counted summary (a jump of -19), which is the count's
    error, not something re-attached."""
    corpus = open_corpus([FIXTURES / "dag_compact_after_rewind.jsonl"], cache_dir=tmp_path)
    (c,) = recorded_compactions(corpus)
    assert c.reattached_tokens == 0 and c.first_request == 3
