"""The summarise tier, directly: the verbatim remainder, its cap, and the newest output, which no
summary ever takes, however large (a newest result over ``keep_max_frac`` used to be evicted)."""

from __future__ import annotations

from replay.engine.fold import replay
from tests.replay.engine.tier_runs import (
    context_end,
    evicted,
    newest_message,
    policy,
    session,
    turns,
)


def _safe_at_or_before(run, b: int) -> int:  # type: ignore[no-untyped-def]
    """The last block at or before ``b`` that a cut may start at: not a tool result (whose call
    would be left behind) — in these runs every message is one block."""
    while b > 0 and run.kind[b] == "tool_result":
        b -= 1
    return b


def test_remainder_is_the_last_keep_messages_walked_back_to_a_safe_split() -> None:
    run = session([40] * 8, every_step=False)
    trace = replay(run, policy([{"type": "summarise", "trigger": {"at_tokens": 1},
                                 "keep_messages": 4}]))
    split = _safe_at_or_before(run, run.req_blocks[-1] - 4)
    assert evicted(run, trace, "summarised") == list(range(split))
    (action,) = trace.actions.to_pylist()
    assert action["kind"] == "summarise" and action["n_blocks"] == split


def test_keep_nothing_still_keeps_the_newest_output_with_its_call() -> None:
    run = session([40] * 8, every_step=False)
    trace = replay(run, policy([{"type": "summarise", "trigger": {"at_tokens": 1},
                                 "keep_messages": 0}]))
    newest = newest_message(run, 0)[0]
    assert run.kind[newest] == "tool_result"
    assert evicted(run, trace, "summarised") == list(range(newest - 1))  # its call stays too


def test_a_newest_result_larger_than_the_cap_is_never_evicted() -> None:
    run = session([40] * 6 + [3000])
    tokens = run.tokens["o200k_base"]
    p = policy([{"type": "summarise", "trigger": {"at_tokens": 2000}, "keep_messages": 4,
                 "keep_max_frac": 0.05}])
    huge = max(range(run.n_blocks), key=tokens.__getitem__)
    assert tokens[huge] > 0.05 * p.usable_tokens  # the case: the newest alone breaks the cap
    trace = replay(run, p)
    k = next(k for k in range(run.n_requests) if context_end(run, k) == huge + 1)
    assert huge in newest_message(run, k)
    assert any(a["request"] == k and a["kind"] == "summarise" for a in trace.actions.to_pylist())
    assert huge not in evicted(run, trace)
    assert trace.requests["truth_tokens"].to_pylist()[k] > tokens[huge]
    for row in trace.evictions.to_pylist():  # no summary ever took its request's newest output
        assert row["msg"] not in {run.msg[b] for b in newest_message(run, row["request"])}


def test_only_at_user_message_waits_for_the_next_turn_and_keeps_that_message() -> None:
    run = turns([4, 4, 4])
    tokens = run.tokens["o200k_base"]
    level = sum(tokens[:context_end(run, 2)])  # crossed inside the first turn

    def starts_a_turn(k: int) -> bool:
        first = newest_message(run, k)[0]
        return run.role[first] == "user" and run.kind[first] == "text"

    over = [k for k in range(run.n_requests) if sum(tokens[:context_end(run, k)]) >= level]
    want = next(k for k in over if starts_a_turn(k))
    assert over[0] < want  # the case: over the level inside a turn, before the next one starts
    tier = {"type": "summarise", "name": "s", "trigger": {"at_tokens": level}, "keep_messages": 1}
    eager = replay(run, policy([tier]))
    assert eager.actions["request"].to_pylist()[0] == over[0]
    trace = replay(run, policy([{**tier, "only_at_user_message": True}]))
    assert trace.actions["request"].to_pylist()[0] == want
    user = newest_message(run, want)[0]
    at_want = [b for b, row in zip(evicted(run, trace), trace.evictions.to_pylist(), strict=True)
               if row["request"] == want]
    assert at_want == list(range(user))  # everything before the user's message, not it
