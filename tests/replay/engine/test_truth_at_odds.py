"""Truth when a log's recorded usage is at odds with its own text (``replay.engine.truth``): a
recorded input below the replay's count of the same context.  Anchored on it as it is, a replay
that removed more than the difference sent a negative number of tokens (and cost); now the
scale is lowered until no offset is negative, or the usage is set aside, and the run says so."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.corpus import Corpus, open_corpus
from replay.engine.calibrate import NEGATIVE_OVERHEAD_TOKENS, PLAUSIBLE_SCALE
from replay.engine.fold import replay
from replay.engine.prepared_run import Calibration
from replay.engine.truth import NOT_RECORDED, TRUTH_SOURCES, USAGE_AT_ODDS
from replay.ingest.run_tables import tokenize
from replay.policy import load_policy, policy_from_dict, replace_path
from tests.claude_code_raw import USAGE_SAMPLE, recorded_prompts, rewritten_usage
from tests.strategies import policies, recorded_runs

NAME = USAGE_SAMPLE
"""The 152-request Claude Code sample (``tests.claude_code_raw.USAGE_SAMPLE``)."""
MASK_ALL = policy_from_dict({
    "name": "mask-all", "server": {"window_tokens": 128_000, "reserve_tokens": 4096},
    "truth": {"method": "anchored", "tokenizer": "o200k_base"},
    "tiers": [{"type": "trim", "name": "mask", "trigger": {"every_request": True},
               "blocks": ["tool_results"], "protect": {"tool_results": 0},
               "placeholder": {"template": "x"}}]})
"""Every tool result but none masked at every request: a replay far smaller than the log."""


def _run(path: Path, cache: Path):  # type: ignore[no-untyped-def]
    corpus = open_corpus([path], cache_dir=cache)
    sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
    return corpus, next(r for r in corpus.replayable() if sources[r] == NAME)


def test_only_the_uncached_input_is_not_taken_for_the_prompt(samples, tmp_path):  # type: ignore[no-untyped-def]
    """A log whose usage holds the uncached input alone (a few tokens a request against tens
    of thousands in context): the tokenizer counts, never a negative size, and the run's note
    says why."""
    path = rewritten_usage(samples, tmp_path / "logs", uncached=True)
    prompts, boundary = recorded_prompts(path)
    assert max(prompts) < 1_000  # (the independent reading: what the file now records)
    corpus, rid = _run(path, tmp_path / "cache")
    run, cal = corpus.prepared(rid), corpus.calibration(rid)
    for policy in (load_policy("none"), load_policy("observation-masking"), MASK_ALL):
        got = replay(run, policy, calibration=cal).requests.to_pydict()
        plain = replay(run, replace_path(policy, "truth.method", "tokenizer"),
                       calibration=cal).requests.to_pydict()
        assert set(got["truth_source"]) == {"tokenizer-implausible-usage"}
        assert got["truth_tokens"] == plain["truth_tokens"]
        assert min(got["truth_tokens"]) > 0 and min(got["cost_usd"]) >= 0
        fitted = replay(run, replace_path(policy, "truth.method", "calibrated"),
                        calibration=cal).requests.to_pydict()  # (its fit: a scale of ~0)
        assert set(fitted["truth_source"]) == {"tokenizer-implausible-usage"}
        assert fitted["truth_tokens"] == plain["truth_tokens"]
    # what the anchor made of it before: the recorded prompt + (replayed − recorded) counts
    plain_none = replay(run, replace_path(load_policy("none"), "truth.method",
                                          "tokenizer")).requests["truth_tokens"].to_pylist()
    plain_masked = replay(run, replace_path(MASK_ALL, "truth.method",
                                            "tokenizer")).requests["truth_tokens"].to_pylist()
    old, offset = [], None
    for k, prompt in enumerate(prompts[:boundary]):
        offset = prompt - plain_none[k] if prompt else offset
        old.append(plain_masked[k] + (offset or 0))
    assert min(old) < 0
    from analysis.per_run.rollup import RUN_ROLLUP
    from replay.apply_policy import run as run_policy

    (row,) = [r for r in run_policy(corpus, MASK_ALL, rollup=RUN_ROLLUP).rollup
              if r["source"] == NAME]
    assert row["tokens_sent"] > 0 and row["cost_usd"] > 0
    assert row["truth_source"] == "tokenizer-implausible-usage"
    assert "truth tokenizer-implausible-usage: " + TRUTH_SOURCES[row["truth_source"]] in row["note"]


def test_usage_below_the_count_lowers_the_scale_and_keeps_the_recorded_prompts(  # type: ignore[no-untyped-def]
        samples, tmp_path):
    """Every recorded input × 0.55 (the lowest recorded input ÷ count falls from ~1.5 to ~0.84),
    anchored without a fit (scale 1): the lowered scale sends the recorded prompts unchanged
    under ``none`` (up to the harness's compaction) and never a negative size."""
    path = rewritten_usage(samples, tmp_path / "logs", factor=0.55)
    prompts, boundary = recorded_prompts(path)
    assert boundary == 102  # the harness's compaction, which ``none`` does not make
    prompts = prompts[:boundary]
    corpus, rid = _run(path, tmp_path / "cache")
    run = corpus.prepared(rid)
    none = replay(run, load_policy("none")).requests.to_pydict()
    assert set(none["truth_source"]) == {"anchored-scaled-down"}
    for truth, prompt in zip(none["truth_tokens"][:boundary], prompts, strict=True):
        assert abs(truth - prompt) <= prompt // 1000  # (a lowered scale's per-block rounding)
    masked = replay(run, MASK_ALL).requests.to_pydict()
    assert set(masked["truth_source"]) == {"anchored-scaled-down"}
    assert min(masked["truth_tokens"]) > 0 and min(masked["cost_usd"]) >= 0


def test_a_fitted_scale_never_sizes_a_smaller_context_below_nothing(samples, tmp_path):  # type: ignore[no-untyped-def]
    """Three requests of the 152-request sample recorded at half their usage (a proxy that lost
    the cache fields of a few requests): the run's fit is still usable (scale ~1.26) and kept,
    so those requests' offsets are negative.  Anchored on them, every tool result masked sent
    -14,754 tokens and a negative cost; now no request is sized below the lowest plausible
    scale (0.7) × its plain count, while ``none`` still sends every recorded prompt."""
    lines, seen = [], []
    for line in (samples / "claude-code" / NAME).read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else None
        if rec.get("type") == "assistant" and msg and isinstance(msg.get("usage"), dict):
            if msg["id"] not in seen:
                seen.append(msg["id"])
            if 60 <= len(seen) <= 62:
                for key in ("input_tokens", "cache_read_input_tokens",
                            "cache_creation_input_tokens"):
                    if isinstance(msg["usage"].get(key), int):
                        msg["usage"][key] = round(msg["usage"][key] * 0.5)
        lines.append(json.dumps(rec))
    path = tmp_path / "logs" / NAME
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    prompts, boundary = recorded_prompts(path)  # (the independent reading of the file)
    corpus, rid = _run(path, tmp_path / "cache")
    run, cal = corpus.prepared(rid), corpus.calibration(rid)
    assert cal is not None and cal.usable and cal.scale > 1.0
    none = replay(run, load_policy("none"), calibration=cal).requests.to_pydict()
    assert set(none["truth_source"]) == {"anchored"}
    assert none["truth_tokens"][:boundary] == prompts[:boundary]  # (the halved ones too)
    assert not any(none["truth_floored"])
    masked = replay(run, MASK_ALL, calibration=cal).requests.to_pydict()
    plain = replay(run, replace_path(MASK_ALL, "truth.method", "tokenizer"),
                   calibration=cal).requests.to_pydict()["truth_tokens"]
    assert min(masked["cost_usd"]) > 0
    for truth, count, at_floor in zip(masked["truth_tokens"], plain, masked["truth_floored"],
                                      strict=True):
        low = PLAUSIBLE_SCALE[0] * count
        assert truth >= 0.995 * low  # (per-block rounding)
        assert at_floor == (truth <= 1.005 * low)  # (flagged: exactly those at the floor)
    assert min(masked["truth_tokens"]) > 10_000 and any(masked["truth_floored"])
    from analysis.per_run.rollup import RUN_ROLLUP
    from replay.apply_policy import run as run_policy

    (row,) = run_policy(corpus, MASK_ALL, rollup=RUN_ROLLUP).rollup
    assert f"{sum(masked['truth_floored'])} request(s) sized at the truth's floor" in row["note"]


def test_a_fit_with_a_slightly_negative_overhead_is_used_by_calibrated_truth(sample_corpus):  # type: ignore[no-untyped-def]
    """Three real mini-swe-agent runs fit usable lines whose overhead is a little below 0
    (fitting noise: ``calibrate`` flags only below -500).  ``truth: calibrated`` refused them
    all as usage at odds with the text (``tokenizer-implausible-usage``); now it uses each fit
    (overhead + scale × count, within a token a block of a plain count × the scale), and a
    context masked small is floored, never below nothing."""
    sources = dict(zip(sample_corpus.run_ids, sample_corpus.runs["source"].to_pylist()))
    noisy = [rid for rid in sample_corpus.replayable()
             if (cal := sample_corpus.calibration(rid)) is not None and cal.usable
             and NEGATIVE_OVERHEAD_TOKENS <= cal.overhead_tokens < 0]
    assert sorted(sources[r].split("/")[-1] for r in noisy) == [
        "django__django-11095.traj.json", "django__django-11163.traj.json",
        "sympy__sympy-14248.traj.json"]
    for rid in noisy:
        run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
        none = replace_path(load_policy("none"), "truth.method", "calibrated")
        got = replay(run, none, calibration=cal).requests.to_pydict()
        plain = replay(run, replace_path(load_policy("none"), "truth.method", "tokenizer"),
                       calibration=cal).requests.to_pydict()["truth_tokens"]
        assert set(got["truth_source"]) == {"fitted"}
        for truth, count, blocks in zip(got["truth_tokens"], plain, got["n_blocks"], strict=True):
            assert abs(truth - (cal.overhead_tokens + cal.scale * count)) <= blocks + 1
        masked = replay(run, replace_path(MASK_ALL, "truth.method", "calibrated"),
                        calibration=cal).requests.to_pydict()
        assert set(masked["truth_source"]) == {"fitted"} and min(masked["truth_tokens"]) > 0


_FACTORS = st.sampled_from([1.0, 0.5, 0.1, 0.02, 0.001])
"""What the drawn recorded inputs are multiplied by."""


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_no_request_is_ever_sent_with_fewer_than_no_tokens(data) -> None:  # type: ignore[no-untyped-def]
    """Whatever usage a log records (drawn at random, unrelated to its text, then scaled down)
    and whatever the policy removes, anchored with the scale assumed (no fit) or with a fitted
    scale (drawn over the plausible range: it keeps its negative offsets, floored,
    ``replay.engine.truth.floored``), or fitted (``calibrated``, the run's fit or one of a
    drawn overhead down to the noise calibrate allows, floored too): no request's truth, cache
    read, invalidated tokens or cost is negative, no action sizes a context below nothing,
    and a run's truth is one of ``TRUTH_SOURCES``."""
    draft = data.draw(recorded_runs())
    tables = tokenize([draft], ("o200k_base",))
    rid = draft.run["run_id"]
    at = tables.requests.schema.get_field_index("input_tokens")
    recorded = tables.requests["input_tokens"]  # (a recorded input stays one: at least 1)
    if data.draw(st.booleans(), label="near the count"):  # each recorded input its request's
        plain = Corpus.from_tables(tables.runs, tables.messages, tables.requests)  # count ×
        if rid not in plain.replayable():  # a ratio drawn over the plausible scales
            return
        counts = replay(plain.prepared(rid), replace_path(load_policy("none"), "truth.method",
                                                          "tokenizer")).requests["truth_tokens"]
        ratios = data.draw(st.lists(st.floats(*PLAUSIBLE_SCALE), min_size=len(counts),
                                    max_size=len(counts)), label="recorded ÷ count")
        scaled = pa.array([max(1, round(c * r)) for c, r in zip(counts.to_pylist(), ratios)])
    else:  # the drawn usage (mostly above the small runs' counts) × a factor
        factor = data.draw(_FACTORS)
        scaled = pc.max_element_wise(pc.round(pc.multiply(recorded, factor)), 1)
    requests = tables.requests.set_column(at, tables.requests.schema.field(at), pc.cast(
        pc.if_else(pc.greater(recorded, 0), scaled, recorded), pa.int64()))
    corpus = Corpus.from_tables(tables.runs, tables.messages, requests)
    if rid not in corpus.replayable():
        return
    run, cal = corpus.prepared(rid), corpus.calibration(rid)
    fitted = replace_path(MASK_ALL, "truth.method", "calibrated")
    scale = data.draw(st.floats(*PLAUSIBLE_SCALE), label="fitted scale")
    fit = Calibration(overhead_tokens=0.0, scale=scale, n_points=10, mean_abs_error_frac=0.0)
    noisy = Calibration(overhead_tokens=data.draw(st.floats(NEGATIVE_OVERHEAD_TOKENS, 0.0),
                                                  label="fitted overhead"),
                        scale=scale, n_points=10, mean_abs_error_frac=0.0)
    drawn = data.draw(policies())
    for policy, given_fit in ((drawn, None), (MASK_ALL, None), (fitted, cal), (drawn, fit),
                              (MASK_ALL, fit), (fitted, noisy)):
        trace = replay(run, policy, calibration=given_fit)
        req = trace.requests.to_pydict()
        assert min(req["truth_tokens"]) >= 0
        assert min(req["cached_tokens"]) >= 0 and min(req["fresh_tokens"]) >= 0
        assert min(req["cost_usd"]) >= 0 and min(req["invalidated_tokens"]) >= 0
        assert all(c <= t for c, t in zip(req["cached_tokens"], req["truth_tokens"]))
        assert min(trace.actions["context_after_tokens"].to_pylist(), default=0) >= 0
        assert set(req["truth_source"]) <= set(TRUTH_SOURCES)
    assert USAGE_AT_ODDS <= set(TRUTH_SOURCES) and set(NOT_RECORDED) <= set(TRUTH_SOURCES)


def test_replay_run_says_how_many_runs_the_tokenizer_judged(samples, tmp_path):  # type: ignore[no-untyped-def]
    """Under its table, ``replay run`` counts the runs judged by the tokenizer count although
    the policy asked for recorded usage, by why: a SWE-agent trajectory (it records no usage)
    and the uncached-only sample; the other sample, anchored, is not counted."""
    from typer.testing import CliRunner

    from replay.cli import app

    odd = rewritten_usage(samples, tmp_path / "logs", uncached=True)
    swe = samples / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj"
    text = swe.read_text()  # (the independent reading: no request's usage in the file, only
    assert not any(k in text for k in ('"usage"', "input_tokens", "prompt_tokens"))  # totals)
    args = ["run", "-q", "--policy", "two-tier-corrected", str(odd), str(swe),
            str(samples / "claude-code" / "short.jsonl"), "--cache-dir", str(tmp_path / "c"),
            "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert ("note: 2 of 3 replayed runs are judged by the tokenizer count, not by recorded "
            "usage: 1 recorded none (tokenizer-fallback), 1 recorded usage at odds with their "
            "text (tokenizer-implausible-usage)") in " ".join(result.output.split())
    plain = CliRunner().invoke(app, [*args[:3], "none", *args[4:]])
    assert "judged by the tokenizer" in plain.output
    tokenizer = tmp_path / "tokenizer.yaml"
    tokenizer.write_text("name: plain\ntruth: {method: tokenizer, tokenizer: o200k_base}\n")
    asked = CliRunner().invoke(app, [*args[:3], str(tokenizer), *args[4:]])
    assert asked.exit_code == 0 and "judged by the tokenizer" not in asked.output


def test_usage_falling_after_a_compactions_jump_never_sends_negative_tokens() -> None:
    """The case the property above found: after a harness compaction the recorded input jumps
    (500 tokens the harness re-attached), then falls back (10 above the count): taking the
    whole jump off the later offset left it at -490, and masking the big result sent fewer
    than no tokens.  The jump is now taken off only as far as every later offset holds it."""
    from replay.ingest.parsers.builder import RunBuilder
    from replay.ingest.parsers.source import Source

    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="hyp", issues=[])
    b.message("user")
    b.text("fix the failing test in a.py")
    for k, (size, compact) in enumerate([(5, False), (2000, True), (5, False)]):
        if compact:
            b.message("user")
            b.summary("the agent read a.py and found the failing assertion")
        b.message("assistant")
        b.tool_call(f"c{k}", "Read", {"file_path": f"f{k}.py"})
        b.request()
        b.message("tool")
        b.tool_result(f"c{k}", "\n".join(f"line {i}: value = {i * 7}" for i in range(size)))
    b.message("assistant")
    b.text("done")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    rid = b.run_id
    plain = Corpus.from_tables(tables.runs, tables.messages, tables.requests)
    counts = replay(plain.prepared(rid), replace_path(load_policy("none"), "truth.method",
                                                      "tokenizer")).requests["truth_tokens"]
    counts = counts.to_pylist()
    recorded = [counts[0], counts[1] + 500, counts[2] + 10, counts[3] + 10]
    at = tables.requests.schema.get_field_index("input_tokens")
    requests = tables.requests.set_column(at, tables.requests.schema.field(at),
                                          pa.array(recorded, pa.int64()))
    run = Corpus.from_tables(tables.runs, tables.messages, requests).prepared(rid)
    assert run.harness_first_request == [1]
    none = replay(run, load_policy("none")).requests.to_pydict()
    assert none["truth_tokens"][:1] == recorded[:1]
    masked = replay(run, MASK_ALL).requests.to_pydict()
    assert masked["n_blocks"][2] <= none["n_blocks"][2]
    assert min(masked["truth_tokens"]) >= 0 and min(masked["cost_usd"]) >= 0
