"""A summary that keeps the newest user messages within a budget (Codex's
``build_compacted_history``: the most recent real user messages up to 20,000 tokens, newest
first, the one at the edge cut), the ``user_messages`` re-insert of a summarise tier."""

from __future__ import annotations

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun, prepare
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from tests.replay.engine.tier_runs import lines, policy


def _turns(sizes: list[int]) -> PreparedRun:
    """One user turn per entry of ``sizes`` (its prompt that many lines), each a read and its
    result, then a final answer."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="test", issues=[])
    for t, n in enumerate(sizes):
        b.message("user")
        b.text(lines(f"ask {t}", n))
        b.message("assistant")
        b.tool_call(f"c{t}", "Read", {"file_path": f"src/f{t}.py"})
        b.request()
        b.message("tool")
        b.tool_result(f"c{t}", lines(f"out {t}", 30))
    b.message("assistant")
    b.text("finished")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


def _truth_at_cut(run: PreparedRun, reinsert: list[str], budget: int) -> tuple[int, int]:
    """The request the one summary takes effect at (the last: its level is only reached there)
    and its true size."""
    tokens = run.tokens["o200k_base"]
    sizes = [sum(tokens[:hi]) for hi in run.req_blocks]
    assert sizes[-2] < sizes[-1] - 1
    tier = {"type": "summarise", "trigger": {"at_tokens": sizes[-1] - 1}, "keep_messages": 0,
            "reinsert": reinsert, "reinsert_user_tokens": budget,
            "restore": {"recorded_within_requests": None}}
    trace = replay(run, policy([tier]))
    (first,) = [a["request"] for a in trace.actions.to_pylist() if a["kind"] == "summarise"]
    return first, trace.requests["truth_tokens"].to_pylist()[first]


def test_the_newest_user_messages_within_the_budget_follow_the_summary() -> None:
    run = _turns([5, 8, 12, 20, 6])
    tokens = run.tokens["o200k_base"]
    users = [b for b in range(run.n_blocks) if run.role[b] == "user"]
    last, second, third = users[-1], users[-2], users[-3]
    # whole: the two newest user messages; a third only partly
    whole = tokens[last] + tokens[second]
    budget = whole + tokens[third] // 2
    k, without = _truth_at_cut(run, [], budget)
    k2, with_users = _truth_at_cut(run, ["user_messages"], budget)
    assert k == k2
    assert k == run.n_requests - 1 and max(users) < run.req_blocks[k]  # all summarised
    added = with_users - without
    assert whole < added < whole + tokens[third]  # the two whole, the third cut near half


def test_a_budget_of_nothing_keeps_nothing() -> None:
    run = _turns([5, 8, 12])
    _, without = _truth_at_cut(run, [], 0)
    _, with_users = _truth_at_cut(run, ["user_messages"], 0)
    assert with_users == without
