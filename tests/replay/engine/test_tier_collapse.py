"""The collapse tier, directly: trims inside the protected range oldest first until under its
level (never the newest output), then drops the oldest messages (never the newest output)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- drop_frac / keep_first_messages (Cline's and Roo Code's sliding window) ----------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.sampled_from([0.25, 0.5, 0.75, 1.0]), st.sampled_from([0, 1, 2, 3]))
def test_drop_frac_drops_an_even_share_of_the_rest_after_the_first_messages(
        n: int, frac: float, keep_first: int) -> None:
    # one request, after the task and n call/result pairs: messages 0 (task), 2i+1 (call),
    # 2i+2 (result); the newest is result 2n. A cut before a result would orphan it.
    run = session([4] * n, every_step=False)
    tokens, hi = run.tokens["o200k_base"], run.req_blocks[0]
    newest = 2 * n
    first = min(keep_first, newest)
    drop = int((newest - first + 1) * frac) // 2 * 2
    start = min(first + drop, newest)
    while start > first and start % 2 == 0 and start > 0:  # back to a call: the result keeps it
        start -= 1
    if start <= first and drop:  # walking back left nothing to drop: forward, if before the newest
        start = next((o for o in range(first + drop, newest + 1) if o % 2 == 1), first)
    trace = replay(run, policy([{"type": "collapse", "trigger": {"every_request": True},
                                 "drop_frac": frac, "keep_first_messages": keep_first}]))
    dropped = evicted(run, trace, "dropped")
    if not drop or start <= first:
        assert dropped == [] and trace.actions.num_rows == 0
        return
    cut = run.msg_start[start]
    assert dropped == list(range(cut))
    kept_first = [b for b in range(cut) if run.ordinal[b] < keep_first]
    assert trace.requests["truth_tokens"].to_pylist()[0] == (
        sum(tokens[b] for b in kept_first) + sum(tokens[cut:hi]))


def test_a_collapse_on_a_trigger_records_the_trigger_level_not_its_margin() -> None:
    run = session([40] * 9, every_step=False)
    trace = replay(run, policy([{"type": "collapse", "trigger": {"at_tokens": 300},
                                 "keep_messages": 2}], window=100_000))
    (action,) = trace.actions.to_pylist()
    assert action["threshold_tokens"] == 300  # was 0.9 × 100,000, the unused margin's level
