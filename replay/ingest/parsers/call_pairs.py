"""Tool calls a run's log left unanswered: the calls that got no result although a later
request follows them (the model was called again with a call unanswered: a result the log lost,
or one the harness never sent); and calls whose id an earlier call still waiting for its result
has (a result pairs with the latest call of its id, so which call it answers is a guess).  An
orphan result, the other side, is said as it is met (``RunBuilder.tool_result``).

Not here: building the run (``replay.ingest.parsers.builder``, which calls this once a run).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress, repeat

from replay.ingest.parsers.source import Issue


def call_issues(path: str, kinds: Sequence[str], call_ids: Sequence[str],
                msgs: Sequence[int], outputs: Sequence[int]) -> list[Issue]:
    """A run's issues about pairing its tool calls (its block rows: ``kinds``, ``call_ids``,
    ``msgs``; ``outputs``: each request's output message): ``unanswered_calls`` and
    ``ids_reused_while_open``, the calls picked out once for both."""
    # (the rows picked out in C: a pass in Python over every block cost ~1 % of a parse)
    calls = list(compress(call_ids, map(operator.eq, kinds, repeat("tool_call"))))
    called = set(calls)
    issues = []
    if issue := unanswered_calls(path, kinds, call_ids, msgs, outputs, called):
        issues.append(issue)
    unnamed = calls.count("")  # (calls without an id: never paired, never a doubt)
    if len(called) - (unnamed > 0) != len(calls) - unnamed and (
            issue := ids_reused_while_open(path, kinds, call_ids, msgs)):
        issues.append(issue)  # (nearly every run gives no id twice: no walk)
    return issues


def unanswered_calls(path: str, kinds: Sequence[str], call_ids: Sequence[str],
                     msgs: Sequence[int], outputs: Sequence[int],
                     called: set[str] | None = None) -> Issue | None:
    """One issue for a run's tool calls (its block rows: ``kinds``, ``call_ids``, ``msgs``)
    that no result answers although a request after them (``outputs``: each request's output
    message) follows; None when every call is answered.  The last calls of an interrupted
    session, with no request after them, are not counted, nor a call without an id (it
    cannot be paired).  ``called``: the ids of the calls, when the caller has them."""
    if called is None:
        called = set(compress(call_ids, map(operator.eq, kinds, repeat("tool_call"))))
    called = called - set(compress(call_ids, map(operator.eq, kinds, repeat("tool_result"))))
    called.discard("")
    if not called:  # (nearly every run: every call answered)
        return None
    last = max(outputs, default=-1)
    missing = [(msg, c) for k, c, msg in zip(kinds, call_ids, msgs)
               if k == "tool_call" and c in called and msg < last]
    if not missing:
        return None
    return Issue(path, 0, f"{len(missing)} tool call(s) got no result although a later request "
                          f"follows (first {missing[0][1]!r}, message {missing[0][0]}): the log "
                          "lost their results, or the harness sent none")


def ids_reused_while_open(path: str, kinds: Sequence[str], call_ids: Sequence[str],
                          msgs: Sequence[int]) -> Issue | None:
    """One issue for a run's tool calls that take the id of an earlier call with no result yet
    (``RunBuilder.tool_result`` pairs a result with the latest call of its id: the earlier
    call then looks answered by the later one's result, or the results are each other's);
    None when no call does (an id used again after its result is no doubt: each pairs in
    turn)."""
    open_ids: set[str] = set()
    reused: list[tuple[int, str]] = []
    for k, c, msg in zip(kinds, call_ids, msgs):
        if not c:
            continue
        if k == "tool_call":
            if c in open_ids:
                reused.append((msg, c))
            open_ids.add(c)
        elif k == "tool_result":
            open_ids.discard(c)
    if not reused:
        return None
    return Issue(path, 0, f"{len(reused)} tool call(s) take the id of an earlier call still "
                          f"waiting for its result (first {reused[0][1]!r}, message "
                          f"{reused[0][0]}): each result is paired with the latest call of its "
                          "id, so which call a result answers is a guess there")
