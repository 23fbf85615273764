"""The harness presets of #26: each loads, names its source at a commit, carries the figures of
that source (written here from the source, not read back from the YAML), and behaves as the
source says on hand-built runs."""

from __future__ import annotations

import re

import pytest

from replay.engine.fold import replay
from replay.policy import Summarise, Trim, load_policy
from tests.replay.engine.test_triggers import _events_in, _fired_at, _timed
from tests.replay.engine.tier_runs import evicted, results_of, session

NEW = ("gemini-cli", "openhands-condenser", "openhands-condenser-v0", "deepagents",
       "deepagents-no-profile", "claude-code-clearing")


@pytest.mark.parametrize("name", NEW)
def test_each_preset_cites_a_file_at_a_commit_or_says_what_its_source_is(name: str) -> None:
    p = load_policy(name)
    cited = re.search(r"@[0-9a-f]{40}", p.source) or "reverse-engineering" in p.source
    assert cited, p.source


def test_gemini_cli_figures() -> None:
    p = load_policy("gemini-cli")
    collapse, budget, compress = p.tiers
    assert p.server.window_tokens == 1_048_576  # tokenLimit(): DEFAULT_TOKEN_LIMIT
    assert isinstance(compress, Summarise)
    assert compress.trigger.level_tokens(p.usable_tokens) == 524_288  # 0.5 × 1,048,576
    # keep the last 30 % of the context at the trigger: 0.3 × 0.5 of the window
    assert compress.keep_max_frac == pytest.approx(0.3 * 0.5)
    assert isinstance(budget, Trim) and budget.protect.tool_result_tokens == 50_000
    assert isinstance(collapse, Trim) and collapse.protect.tool_results == 3
    assert collapse.placeholder.head_chars == 2048 and collapse.min_chars == 2049
    assert {"read_file", "grep", "glob"} <= set(collapse.exclude_tools)


def test_openhands_condenser_fires_past_240_events_keeping_2_first_and_117_newest() -> None:
    p = load_policy("openhands-condenser")
    (tier,) = p.tiers
    assert isinstance(tier, Summarise)
    assert (tier.trigger.after_events, tier.keep_events, tier.keep_first_messages) == (
        240 + 1, 240 // 2 - 2 - 1, 2)
    old = load_policy("openhands-condenser-v0").tiers[0]
    assert isinstance(old, Summarise)
    assert (old.trigger.after_events, old.keep_events, old.keep_first_messages) == (
        120 + 1, 120 // 2 - 4 - 1, 4)
    run = session([3] * 140)  # 1 + 2k events before request k
    trace = replay(run, p)
    first = _fired_at(trace, "condenser")[0]
    assert _events_in(run, run.req_blocks[first]) > 240
    assert _events_in(run, run.req_blocks[first - 1]) <= 240
    cut = trace.actions.to_pylist()[0]
    kept_events = _events_in(run, run.req_blocks[first]) - _events_in(
        run, [b for b in range(run.n_blocks) if run.msg[b] == cut["last_msg"]][-1] + 1)
    assert kept_events <= 117
    # the first message (the task) is in front of the summary: it was not dropped for good
    req = trace.requests.to_pylist()[first]
    assert req["truth_tokens"] >= run.tokens["o200k_base"][0] + cut["summary_tokens"]


def test_deepagents_figures() -> None:
    with_profile, without = load_policy("deepagents"), load_policy("deepagents-no-profile")
    s = with_profile.tiers[1]
    assert isinstance(s, Summarise) and s.trigger.at_frac == pytest.approx(0.85)
    assert s.keep_max_frac == pytest.approx(0.10)
    s = without.tiers[1]
    assert isinstance(s, Summarise) and s.trigger.at_tokens == 170_000 and s.keep_messages == 6
    args = without.tiers[0]
    assert isinstance(args, Trim) and args.trigger.after_messages == 20
    assert args.protect.messages == 20 and set(args.tools) == {"write_file", "edit_file"}


def test_claude_code_clearing_microcompacts_after_an_hour_idle() -> None:
    p = load_policy("claude-code-clearing")
    mc = p.tiers[0]
    assert isinstance(mc, Trim) and mc.trigger.idle_minutes == 60
    assert mc.protect.tool_results == 5
    assert mc.placeholder.template == "[Old tool result content cleared]"
    tools = ["Read", "Bash", "Task", "Grep", "Read", "Read", "Read", "Glob", "Read"]
    run = _timed([0, 1, 2, 3, 4, 5, 6, 7, 67], tools)  # an idle hour before request 8
    trace = replay(run, p)
    assert _fired_at(trace, "microcompact") == [8]
    res = results_of(run)
    compactable = [i for i in range(8) if tools[i] != "Task"]
    assert sorted(evicted(run, trace)) == [res[i] for i in compactable[:-5]]


def test_gemini_cli_sessions_are_judged_against_the_gemini_cli_preset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from analysis.fidelity import fidelity
    from replay.corpus import open_corpus
    from tests.conftest import REPO

    corpus = open_corpus([REPO / "tests" / "fixtures" / "gemini_cli"], cache_dir=tmp_path / "c")
    rows = fidelity(corpus)
    assert rows and {r.policy for r in rows} == {"gemini-cli"}
    assert {r.policy_trigger_tokens for r in rows} == {1_048_576 // 2}
