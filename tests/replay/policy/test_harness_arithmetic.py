"""Claude Code's auto-compact arithmetic per recorded version and model, and its settings under
their own names (#26 items 5 and 6).  Expected levels are written from the documented figures
(window − output reserve − buffer), not read back from the table."""

from __future__ import annotations

import dataclasses

import pytest

from replay.engine.fold import replay
from replay.errors import PolicyError
from replay.policy import Policy, load_policy, replace_path
from replay.policy.harness import resolve
from tests.replay.engine.tier_runs import session

CC = "claude-code"


def _level(harness: str, model: str, policy: Policy | None = None) -> int:
    return resolve(policy or load_policy(CC), harness, model).level_tokens


@pytest.mark.parametrize(("version", "level"), [
    ("2.0.30", 200_000 - 45_000),   # /context "Autocompact buffer 45.0k (22.5 %)"
    ("2.0.53", 200_000 - 45_000),
    ("2.1.7", 200_000 - 45_000),    # three sessions compacted at 154.0k-154.5k recorded
    ("2.1.25", 200_000 - 33_000),   # 2.1.25-2.1.45 sessions compacted at 167,000
    ("2.1.45", 200_000 - 33_000),
    ("2.1.153", 200_000 - 33_000),  # /context 33k (claude-code#63015)
])
def test_the_buffer_follows_the_recorded_version(version: str, level: int) -> None:
    assert _level(f"claude-code {version}", "claude-opus-4-6") == level


def test_the_2_1_7_level_explains_its_recorded_compactions() -> None:
    level = _level("claude-code 2.1.7", "claude-sonnet-4-5")
    for recorded in (154_000, 154_500):  # the last prompts before each compaction
        assert recorded < level and (level - recorded) / level < 0.01


def test_versions_between_the_measured_ones_are_said_to_be_estimates() -> None:
    p = load_policy(CC)
    assert resolve(p, "claude-code 2.1.12", "claude-opus-4-6").estimated
    assert not resolve(p, "claude-code 2.1.39", "claude-opus-4-6").estimated
    unknown = resolve(p, "codex 0.104.0", "gpt-5.3-codex")  # not a Claude Code version
    assert unknown.estimated and "not recorded" in unknown.basis


@pytest.mark.parametrize(("model", "window"), [
    ("claude-opus-4-6", 200_000), ("claude-opus-4-6[1m]", 1_000_000),
    ("claude-opus-5", 1_000_000), ("claude-opus-5-20261001", 1_000_000),
    ("claude-sonnet-5-5", 1_000_000), ("claude-haiku-4-5-20251001", 200_000),
])
def test_the_window_follows_the_model(model: str, window: int) -> None:
    r = resolve(load_policy(CC), "claude-code 2.1.219", model)
    assert r.policy.server.window_tokens == window
    assert r.level_tokens == window - 20_000 - 13_000


@pytest.mark.parametrize(("settings", "level"), [
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": 80}, 144_000),    # floor(180,000 × 0.8)
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": 95}, 167_000),    # min(171,000, 167,000): only lowers
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": 50.5}, 90_900),
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": 150_000}, 117_000),
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": 500_000}, 167_000),  # capped at the real window
    ({"autoCompactWindow": 400_000}, 167_000),
    ({"autoCompactWindow": 120_000}, 87_000),
    ({"autoCompactWindow": "auto"}, 167_000),
    ({"autoCompactWindow": 120_000, "CLAUDE_CODE_AUTO_COMPACT_WINDOW": 150_000}, 117_000),
])
def test_settings_under_their_own_names(settings: dict[str, object], level: int) -> None:
    p = load_policy(CC)
    for key, value in settings.items():
        p = replace_path(p, f"harness.{key}", value)
    assert _level("claude-code 2.1.39", "claude-opus-4-6", p) == level


def test_auto_compact_window_on_a_1m_model() -> None:
    p = replace_path(load_policy(CC), "harness.autoCompactWindow", 400_000)
    assert _level("claude-code 2.1.311", "claude-opus-5", p) == 400_000 - 33_000


@pytest.mark.parametrize(("key", "value"), [
    ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", 0), ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", 101),
    ("autoCompactWindow", 99_999), ("autoCompactWindow", 1_000_001),
    ("autoCompactWindow", "max"), ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", 0), ("tier", "nope"),
])
def test_settings_out_of_range_are_refused(key: str, value: object) -> None:
    with pytest.raises(PolicyError) as err:
        replace_path(load_policy(CC), f"harness.{key}", value)
    assert f"harness.{key}" in str(err.value)


def _first_compaction(harness: str) -> tuple[int | None, int]:
    run = dataclasses.replace(session([300] * 30), harness=harness, model="claude-opus-4-6")
    p = replace_path(load_policy(CC), "harness.CLAUDE_CODE_AUTO_COMPACT_WINDOW", 60_000)
    level = resolve(p, run.harness, run.model).level_tokens
    trace = replay(run, p)
    fired = [r["request"] for r in trace.actions.to_pylist() if r["tier"] == "autocompact"]
    return (fired[0] if fired else None), level


@pytest.mark.parametrize(("version", "level"), [("2.1.7", 60_000 - 45_000),
                                                ("2.1.39", 60_000 - 33_000)])
def test_a_replay_compacts_where_the_run_s_version_would(version: str, level: int) -> None:
    first, got = _first_compaction(f"claude-code {version}")
    assert got == level
    run = session([300] * 30)
    tokens = run.tokens["o200k_base"]
    # no recorded usage: the estimate is the context's o200k count (anchored on the truth)
    sizes = [sum(tokens[:hi]) for hi in run.req_blocks]
    assert first == next(k for k, size in enumerate(sizes) if size >= level)


def test_a_level_the_user_wrote_in_the_tier_stands_and_is_said() -> None:
    p = replace_path(load_policy(CC), "tiers.0.trigger.at_tokens", 100_000)
    r = resolve(p, "claude-code 2.1.7", "claude-opus-5")
    assert r.level_tokens == 100_000 and "set by the policy" in r.basis
    assert r.policy.tiers[0].trigger.at_tokens == 100_000
    assert r.policy.server.window_tokens == 1_000_000  # the model's window still applies


def test_harness_null_fixes_the_level_whatever_the_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fixed.yaml"
    path.write_text("extends: claude-code\nharness: null\n")
    p = load_policy(path)
    assert p.harness is None
    run = dataclasses.replace(session([300] * 3), harness="claude-code 2.1.7",
                              model="claude-opus-5")
    # with the harness, this run would plan against 1,000,000; without, the policy's 200,000
    assert set(replay(run, load_policy(CC)).columns("requests")["window_tokens"]) == {1_000_000}
    assert set(replay(run, p).columns("requests")["window_tokens"]) == {200_000}
