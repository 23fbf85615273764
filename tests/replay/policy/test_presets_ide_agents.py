"""The presets of Roo Code, Cline and Goose: each loads, names its source at a commit, carries
the source's figures (computed here from the source's own constants, not read back from the
YAML), and on hand-built runs fires at the documented token level and keeps what the harness
keeps (the kept blocks worked out here from the documented rule).

The runs record no usage, so the presets' anchored estimate and truth are the o200k count of
the context (``replay.engine.truth``): the level is compared with a sum of ingest counts."""

from __future__ import annotations

import re

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.policy import Collapse, Summarise, load_policy
from tests.replay.engine.tier_runs import context_end, evicted, newest_message, session, turns

NAMES = ("roo-code", "goose", "cline")

ROO_LEVEL = int(200_000 * (1 - 0.1) - 8_192) + 1  # prevContextTokens > allowedTokens
CLINE_LEVEL = 200_000 - 40_000  # totalTokens >= maxAllowedSize (a 200k window)
GOOSE_LEVEL = int(0.8 * 200_000) + 1  # total / limit > 0.8


@pytest.mark.parametrize("name", NAMES)
def test_each_cites_files_at_a_commit_and_says_what_it_leaves_out(name: str) -> None:
    from replay.policy.doc import PRESETS_DIR

    p = load_policy(name)
    assert re.search(r"@[0-9a-f]{40}", p.source), p.source
    comment = (PRESETS_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    assert "Left out" in comment or "Not modelled" in comment
    assert "assumption" in comment or name == "cline"  # cline makes no summary


def _tokens_before(run: PreparedRun, k: int) -> int:
    """The o200k count of request ``k``'s context as recorded (nothing removed yet)."""
    return sum(run.tokens["o200k_base"][:context_end(run, k)])


def _first_over(run: PreparedRun, level: int) -> int:
    return next(k for k in range(run.n_requests) if _tokens_before(run, k) >= level)


def _acts(trace) -> list[dict]:  # type: ignore[no-untyped-def]
    return [a for a in trace.actions.to_pylist() if not a["undone"]]


def _safe_back(run: PreparedRun, o: int) -> int:
    """Message ``o`` walked back past tool results (whose call would stay behind): in these runs
    a message is one block."""
    while o > 0 and run.kind[run.msg_start[o]] == "tool_result":
        o -= 1
    return o


def test_roo_code_condenses_above_its_allowed_tokens_keeping_the_first_and_the_last_3() -> None:
    p = load_policy("roo-code")
    condense, window = p.tiers
    assert isinstance(condense, Summarise) and isinstance(window, Collapse)
    assert condense.trigger.at_tokens == ROO_LEVEL == 171_809
    assert (condense.keep_first_messages, condense.keep_messages) == (1, 3)
    assert window.trigger is not None and window.trigger.at_tokens == ROO_LEVEL
    assert (window.drop_frac, window.keep_first_messages) == (0.5, 1)
    run = session([200] * 80)
    k = _first_over(run, ROO_LEVEL)
    assert _tokens_before(run, k - 1) < ROO_LEVEL
    trace = replay(run, p)
    (act,) = [a for a in _acts(trace) if a["request"] <= k]
    assert (act["request"], act["tier"], act["threshold_tokens"]) == (k, "condense", ROO_LEVEL)
    newest = run.ordinal[newest_message(run, k)[0]]
    keep_from = run.msg_start[_safe_back(run, newest - 2)]  # the last 3, their calls with them
    assert evicted(run, trace)[:keep_from] == list(range(keep_from))
    tokens = run.tokens["o200k_base"]
    first = [b for b in range(run.n_blocks) if run.ordinal[b] == 0]
    assert trace.requests["truth_tokens"].to_pylist()[k] == (
        sum(tokens[b] for b in first) + act["summary_tokens"]
        + sum(tokens[keep_from:context_end(run, k)]))


def test_cline_drops_half_the_messages_after_the_first_pair_at_window_minus_40k() -> None:
    p = load_policy("cline")
    (tier,) = p.tiers
    assert isinstance(tier, Collapse) and tier.trigger is not None
    assert tier.trigger.at_tokens == CLINE_LEVEL == 160_000
    assert (tier.drop_frac, tier.keep_first_messages, tier.summary_tokens) == (0.5, 2, 0)
    run = session([200] * 80)
    k = _first_over(run, CLINE_LEVEL)
    assert _tokens_before(run, k - 1) < CLINE_LEVEL
    trace = replay(run, p)
    act = _acts(trace)[0]
    assert (act["request"], act["kind"], act["threshold_tokens"]) == (k, "collapse", CLINE_LEVEL)
    # getNextTruncationRange(…, "half"): messages = those in context; rest after the pair
    n_messages = run.ordinal[context_end(run, k) - 1] + 1
    removed = (n_messages - 2) // 4 * 2
    keep_from = run.msg_start[_safe_back(run, 2 + removed)]
    assert [b for b in evicted(run, trace, "dropped") if b < keep_from] == list(range(keep_from))
    tokens = run.tokens["o200k_base"]
    pair = [b for b in range(run.n_blocks) if run.ordinal[b] < 2]
    assert trace.requests["truth_tokens"].to_pylist()[k] == (
        sum(tokens[b] for b in pair) + sum(tokens[keep_from:context_end(run, k)]))


def test_goose_compacts_when_the_users_message_arrives_keeping_that_message() -> None:
    p = load_policy("goose")
    auto, overflow = p.tiers
    assert isinstance(auto, Summarise) and isinstance(overflow, Summarise)
    assert auto.trigger.at_tokens == GOOSE_LEVEL == 160_001 and auto.only_at_user_message
    assert auto.keep_messages == overflow.keep_messages == 1
    assert overflow.trigger.at_tokens == p.server.window_tokens == 200_000
    run = turns([70, 3], result_lines=200)
    over = _first_over(run, GOOSE_LEVEL)
    user = next(k for k in range(over, run.n_requests)
                if run.role[newest_message(run, k)[0]] == "user")
    assert user > over + 1  # crossed inside the first turn's tool loop
    assert _tokens_before(run, user - 1) < 200_000  # and the loop never reached the window
    trace = replay(run, p)
    (act,) = _acts(trace)
    assert (act["request"], act["tier"], act["threshold_tokens"]) == (user, "auto_compact",
                                                                      GOOSE_LEVEL)
    message = newest_message(run, user)
    assert evicted(run, trace) == list(range(message[0]))  # everything but the user's message


def test_goose_compacts_at_the_window_inside_a_long_tool_loop() -> None:
    p = load_policy("goose")
    run = turns([95], result_lines=200)
    k = _first_over(run, 200_000)
    trace = replay(run, p)
    (act,) = _acts(trace)
    assert (act["request"], act["tier"]) == (k, "overflow_compact")
    newest = newest_message(run, k)[0]
    assert run.kind[newest] == "tool_result"
    assert evicted(run, trace) == list(range(newest - 1))  # the newest result and its call stay


@pytest.mark.parametrize("name", NAMES)
def test_replay_run_on_the_embedded_corpus(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from typer.testing import CliRunner

    from replay.cli import app
    from tests.conftest import REPO

    result = CliRunner().invoke(app, ["run", "--policy", name, str(REPO / "logs"),
                                      "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    sources = sorted(p.relative_to(REPO / "logs").as_posix() for p in (REPO / "logs").rglob("*.jsonl"))
    assert sorted(r["source"] for r in rows) == sources
    # the corpus's longest sessions pass every one of these levels: each preset acts somewhere
    assert sum(r["n_summaries"] for r in rows) > 0
