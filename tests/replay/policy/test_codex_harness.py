"""Codex's auto-compact arithmetic per run (#26 items 6, 8): the window and limit the rollout
records or the model table, Codex's settings under their config.toml names, and the earlier
turns' encrypted reasoning its trigger counts.  Expected levels are written from openai/codex's
formulas (context_window × 9 / 10; window = recorded × 100 / 95), not read back from the code."""

from __future__ import annotations

import dataclasses

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun, prepare
from replay.errors import PolicyError
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from replay.policy import Policy, load_policy, replace_path
from replay.policy.harness import resolve
from tests.replay.engine.tier_runs import lines

CODEX = "codex"


@pytest.mark.parametrize(("window", "level"), [
    (258_400, 272_000 * 9 // 10),   # gpt-5.x: 258,400 = 95 % of 272,000
    (121_600, 128_000 * 9 // 10),   # gpt-5.3-codex-spark: 95 % of 128,000
])
def test_the_level_follows_the_recorded_window(window: int, level: int) -> None:
    r = resolve(load_policy(CODEX), "codex 0.142.1", "gpt-5.5", window_tokens=window)
    assert r.level_tokens == level and r.policy.tiers[0].trigger.at_tokens == level
    assert r.policy.server.window_tokens == window * 100 // 95
    assert not r.window_from_table and not r.estimated and f"{window:,}" in r.basis


@pytest.mark.parametrize(("model", "window", "assumed"), [
    ("gpt-5.3-codex-spark", 128_000, False), ("gpt-5.5", 272_000, False),
    ("openai/gpt-5.2-codex", 272_000, False), ("codex-mini-latest", 272_000, False),
    ("o3", 272_000, True), ("", 272_000, True),
])
def test_without_a_recorded_window_the_model_table_is_taken_and_said(
        model: str, window: int, assumed: bool) -> None:
    r = resolve(load_policy(CODEX), "codex 0.58.0", model)
    assert r.policy.server.window_tokens == window and r.level_tokens == window * 9 // 10
    assert r.window_from_table and "the log records none" in r.basis
    assert r.estimated is assumed


def test_a_recorded_limit_and_the_settings() -> None:
    p = load_policy(CODEX)
    assert resolve(p, "codex 0.148.0", "gpt-5.5", window_tokens=258_400,
                   compact_limit_tokens=220_000).level_tokens == 220_000
    mine = replace_path(p, "harness.model_auto_compact_token_limit", 150_000)
    assert resolve(mine, "codex 0.148.0", "gpt-5.5", window_tokens=258_400,
                   compact_limit_tokens=220_000).level_tokens == 150_000
    wide = replace_path(p, "harness.model_context_window", 400_000)
    r = resolve(wide, "codex 0.148.0", "gpt-5.5", window_tokens=258_400)
    assert r.level_tokens == 360_000 and r.policy.server.window_tokens == 400_000


def test_a_level_the_user_wrote_in_the_tier_stands() -> None:
    p = replace_path(load_policy(CODEX), "tiers.0.trigger.at_tokens", 100_000)
    r = resolve(p, "codex 0.142.1", "gpt-5.5", window_tokens=121_600)
    assert r.level_tokens == 100_000 and "set by the policy" in r.basis
    assert r.policy.server.window_tokens == 128_000


@pytest.mark.parametrize(("key", "value"), [
    ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", 80), ("autoCompactWindow", 400_000),
    ("model_auto_compact_token_limit", 0), ("model_context_window", -1),
])
def test_settings_of_another_harness_or_out_of_range_are_refused(key: str, value: object) -> None:
    with pytest.raises(PolicyError) as err:
        replace_path(load_policy(CODEX), f"harness.{key}", value)
    assert f"harness.{key}" in str(err.value)


def test_codex_settings_are_refused_for_claude_code() -> None:
    with pytest.raises(PolicyError):
        replace_path(load_policy("claude-code"), "harness.model_auto_compact_token_limit", 1000)


ENCODED = 20_000
"""Each reasoning item's encrypted length: Codex estimates ceil((20,000 × 3/4 − 650) / 4)."""
PER_ITEM = (ENCODED * 3 // 4 - 650 + 3) // 4


def _turns(n_turns: int, steps: int) -> PreparedRun:
    """``n_turns`` user turns of ``steps`` model calls each: reasoning (encrypted), a read, its
    result; no recorded usage."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="codex", issues=[])
    for t in range(n_turns):
        b.message("user")
        b.text(lines(f"turn {t}", 3))
        for i in range(steps):
            b.message("assistant")
            b.text("", kind="reasoning", encrypted_bytes=ENCODED)
            b.tool_call(f"c{t}-{i}", "Read", {"file_path": f"src/f{t}{i}.py"})
            b.request()
            b.message("tool")
            b.tool_result(f"c{t}-{i}", lines(f"out {t} {i}", 40))
    b.message("assistant")
    b.text("finished")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    run = prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())
    return dataclasses.replace(run, harness="codex 0.142.1", model="gpt-5.5")


def _policy(level: int, *, included: bool = False) -> Policy:
    p = replace_path(load_policy(CODEX), "harness.model_auto_compact_token_limit", level)
    return replace_path(p, "harness.server_reasoning_included", included) if included else p


def _first(run: PreparedRun, p: Policy) -> int | None:
    fired = [r["request"] for r in replay(run, p).actions.to_pylist()
             if r["tier"] == "auto_compact"]
    return fired[0] if fired else None


def test_earlier_turns_reasoning_brings_the_compaction_forward() -> None:
    run = _turns(4, 3)
    tokens = run.tokens["o200k_base"]
    sizes = [sum(tokens[:hi]) for hi in run.req_blocks]
    # reasoning items before the newest user turn start, counted as Codex estimates them
    user_starts = [b for b in range(run.n_blocks) if run.role[b] == "user"
                   and (b == 0 or run.msg[b - 1] != run.msg[b])]
    hidden = []
    for hi in run.req_blocks:
        turn = max(u for u in user_starts if u < hi)
        hidden.append(PER_ITEM * sum(1 for b in range(turn) if run.kind[b] == "reasoning"))
    level = sizes[-1] // 2 + hidden[len(sizes) // 2]
    with_hidden = next(k for k in range(len(sizes)) if sizes[k] + hidden[k] >= level)
    without = next((k for k in range(len(sizes)) if sizes[k] >= level), None)
    assert with_hidden != without  # the term matters on this run
    assert _first(run, _policy(level)) == with_hidden
    assert _first(run, _policy(level, included=True)) == without
