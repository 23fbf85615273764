"""The collapse tier, directly: trims inside the protected range oldest first until under its
level (never the newest output), then drops the oldest messages (never the newest output)."""

from __future__ import annotations

from replay.engine.fold import replay
from replay.ingest.tokens import encoding
from tests.replay.engine.tier_runs import evicted, newest_message, policy, results_of, session


def _gain(run, b: int) -> int:  # type: ignore[no-untyped-def]
    note = f"[Read output trimmed: {run.n_lines[b]} lines, {len(run.text[b])} chars]"
    return run.tokens["o200k_base"][b] - len(encoding("o200k_base").encode_ordinary(note))


def test_trims_inside_oldest_first_until_under_its_level_and_stops() -> None:
    run = session([40] * 9, every_step=False)
    tokens, hi = run.tokens["o200k_base"], run.req_blocks[-1]
    window = 4000
    level = int(0.9 * window)  # margin_frac 0.1
    total = sum(tokens[:hi])
    assert total >= level
    want = []
    for b in results_of(run)[:-1]:  # the oldest first; the newest is never a candidate
        if total < level:
            break
        want.append(b)
        total -= _gain(run, b)
    assert total < level and len(want) < len(results_of(run)) - 1  # it stopped on its own
    trace = replay(run, policy([{"type": "collapse", "margin_frac": 0.1, "may_trim_protected": True,
                                 "keep_messages": None}], window=window))
    assert evicted(run, trace, "trimmed") == want
    assert evicted(run, trace, "dropped") == []
    assert [a["kind"] for a in trace.actions.to_pylist()] == ["collapse_trim"]


def test_a_newest_output_alone_over_the_level_is_kept_everything_before_its_call_dropped() -> None:
    run = session([5, 5, 5, 3000], every_step=False)
    tokens = run.tokens["o200k_base"]
    newest = newest_message(run, 0)[0]
    window = 4000
    assert tokens[newest] > 0.9 * window
    for trim in (False, True):
        trace = replay(run, policy([{"type": "collapse", "margin_frac": 0.1, "keep_messages": None,
                                     "may_trim_protected": trim}], window=window))
        assert newest not in evicted(run, trace)
        assert evicted(run, trace, "dropped") == list(range(newest - 1))
        assert trace.requests["overshoot_tokens"].to_pylist()[-1] > 0  # said, not hidden
