"""Cline's duplicate-file-read removal meets the replay's induced re-reads
(``replay.engine.tiers.collapse._replace_older_reads``): a re-read the agent makes is a read of
its file like any other, so (a) a recorded read of the file older than a live re-read of it gets
the notice, and (b) a live re-read that a later read of its file follows gets it too; the newest
read of each file and the newest output are never touched.

The run is built by hand and the expected rows and tokens are worked out here from the blocks'
own ingest counts (o200k, the policy counting with it and no message overhead)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.engine.tiers.actions import action_rows
from replay.engine.tiers.base import Env, Evictions
from replay.engine.tiers.collapse import CollapseState, _older_induced, _replace_older_reads
from replay.engine.trace import COLLAPSE_TRIM, INDUCED_REREAD, Trace
from replay.ingest.tokens import encoding
from replay.policy import Collapse, Policy, policy_from_dict
from replay.policy.tier_model import DUPLICATE_READ_NOTICE
from tests.replay.engine.tier_runs import lines, prepared, start

A = "src/a.py"


def _run() -> PreparedRun:
    """A task, then one call a request (its result in the next request's context): a whole read
    of ``A`` (message 2), a read of b, a read of part of ``A`` (message 6), a read of c, an edit
    of ``A`` (the recorded run needs ``A``'s content there), a read of d, a whole read of ``A``
    again (message 14), a read of e, then an answer."""
    b = start()
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("Read", {"file_path": A}, lines("a", 120)),
        ("Read", {"file_path": "src/b.py"}, lines("b", 30)),
        ("Read", {"file_path": A, "offset": 10, "limit": 20}, lines("a part", 20)),
        ("Read", {"file_path": "src/c.py"}, lines("c", 30)),
        ("Edit", {"file_path": A, "old_string": "a line 3: value=8 ok", "new_string": "x"},
         "edited"),
        ("Read", {"file_path": "src/d.py"}, lines("d", 30)),
        ("Read", {"file_path": A}, lines("a again", 120)),
        ("Read", {"file_path": "src/e.py"}, lines("e", 30)),
    ]
    for n, (tool, args, result) in enumerate(steps):
        b.message("assistant")
        b.tool_call(f"c{n}", tool, args)
        b.request()
        b.message("tool")
        b.tool_result(f"c{n}", result)
    b.message("assistant")
    b.text("finished")
    b.request()
    return prepared(b)


def _policy_dict() -> dict[str, Any]:
    """A collapse tier firing at every request whose only change is Cline's older-reads step
    (a window far above the run: its truncation never finds anything to drop)."""
    return {"name": "t", "server": {"window_tokens": 100_000},
            "estimator": {"method": "tokenizer"}, "truth": {"method": "tokenizer"},
            "tiers": [{"type": "collapse", "name": "reads", "trigger": {"every_request": True},
                       "keep_messages": None, "older_reads": {"enough_frac": 0.0}}]}


def _policy() -> Policy:
    return policy_from_dict(_policy_dict())


def _rows(trace: Trace, table: str) -> list[dict[str, Any]]:
    return trace.table(table).to_pylist()


def test_a_re_read_replaces_the_older_read_and_a_later_read_replaces_the_re_read() -> None:
    run = _run()
    tokens = run.tokens["o200k_base"]
    notice = len(encoding("o200k_base").encode_ordinary(DUPLICATE_READ_NOTICE))
    whole, part, again = 2, 6, 14  # the blocks (one a message) of A's three recorded reads
    assert [run.msg[b] for b in (whole, part, again)] == [2, 6, 14]
    assert [run.path[b] for b in (whole, part, again)] == [A, A, A]
    trace = replay(run, _policy())
    acts = [(a["request"], a["kind"], a["n_blocks"], a["first_msg"], a["last_msg"],
             a["reclaimed_tokens"], a["induced"]) for a in _rows(trace, "actions")]
    assert acts == [
        # request 3 (the part read in context): the whole read is older, replaced
        (3, COLLAPSE_TRIM, 1, 2, 2, tokens[whole] - notice, False),
        # request 4 (the edit): the agent re-reads A (its call and the file whole as read);
        # (a) the part read, older than that re-read, gets the notice
        (4, INDUCED_REREAD, 1, 2, 2, -(tokens[whole - 1] + tokens[whole]), True),
        (4, COLLAPSE_TRIM, 1, 6, 6, tokens[part] - notice, False),
        # request 7 (the whole read again in context): (b) the re-read, older, gets the notice
        (7, COLLAPSE_TRIM, 1, 2, 2, tokens[whole] - notice, True),
    ]
    assert [(e["request"], e["msg"], e["fate"], e["induced"])
            for e in _rows(trace, "evictions")] == [
        (3, 2, "trimmed", False), (4, 6, "trimmed", False), (7, 2, "trimmed", True)]
    # the tokens after: every block to request 7's context, the two recorded reads and the
    # re-read's result each as the notice, the re-read's call whole
    sent = trace.columns("requests")["truth_tokens"]
    hi = run.req_blocks[7]
    assert sent[7] == (sum(tokens[:hi]) - (tokens[whole] - notice) - (tokens[part] - notice)
                       + tokens[whole - 1] + notice)
    assert [a["context_after_tokens"] for a in _rows(trace, "actions")][-1] == sent[7]
    # the newest read of A (the whole read again) and the newest output stay whole
    assert sent[8] == sent[7] + sum(tokens[hi:run.req_blocks[8]])


def test_without_the_re_read_the_part_read_and_the_copy_stayed() -> None:
    """The same run with induced re-reads off: the part read is the newest read of A until the
    whole read again, so it is replaced only then (what the rule did to the re-read's older read
    before, in both directions, is what this change is about)."""
    run = _run()
    policy = policy_from_dict({**_policy_dict(), "behaviour": {"rereads": False}})
    trace = replay(run, policy)
    assert [(a["request"], a["first_msg"], a["induced"]) for a in _rows(trace, "actions")] == [
        (3, 2, False), (7, 6, False)]


def _context(run: PreparedRun, hi: int) -> Context:
    ctx = Context(run, run.tokens["o200k_base"], run.tokens["o200k_base"], 0)
    ctx.hi = hi
    return ctx


def test_older_induced_orders_re_reads_among_the_reads_of_their_file() -> None:
    """The ordering rule itself, on items added by hand: an item follows its ``pos`` (newer
    than that block, older than the next); of two re-reads of a file the older is replaced; a
    re-read made after the newest output's start is never returned, though it makes the reads
    before it older; a re-read of what is not a read of a file (the edit's result) is none."""
    run = _run()
    whole, part, again, edit = 2, 6, 14, 10
    ctx = _context(run, run.req_blocks[8])  # everything in context; newest output: block 16
    newest = ctx.newest_output_start()
    assert newest == 16
    ind = ctx.induced
    size = (1, 1, 1)
    first = ind.add(8, whole, size, size)     # follows the read of c: after the part read
    second = ind.add(12, part, size, size)    # a second re-read of A, before the whole again
    ind.add(12, edit, size, size)             # not a read: never counted
    newest_of = {A: again}
    older: list[int] = []
    assert _older_induced(ctx, newest_of, older, newest) == [first, second]
    assert older == []  # the whole read again (block 14) is the newest of A
    # a re-read of A following the whole read again: that read becomes older, and a re-read
    # made after the newest output's start is itself never replaced
    late = ind.add(14, whole, size, size)
    end = ind.add(16, whole, size, size)
    older = []
    assert _older_induced(ctx, newest_of, older, newest) == [first, second, late]
    assert older == [again]
    assert end not in _older_induced(ctx, newest_of, [], newest)
    # a trimmed re-read is no read any more (Cline skips what it altered)
    ind.trimmed[late] = True
    older = []
    assert _older_induced(ctx, newest_of, older, newest) == [first, second]
    assert older == [again]


# -- the rule itself over random contexts (hypothesis) -----------------------------------------


@st.composite
def _contexts(draw: Any) -> tuple[Context, int]:
    """A run of reads (whole or part) and searches of three files, its context cut at a drawn
    request, some of its results trimmed already, and induced re-reads of drawn results (some
    trimmed already) following drawn blocks; and the context's head bytes."""
    b = start()
    n_steps = draw(st.integers(2, 10))
    for n in range(n_steps):
        f = f"src/f{draw(st.integers(0, 2))}.py"
        tool, args = draw(st.sampled_from([
            ("Read", {"file_path": f}), ("Read", {"file_path": f, "offset": 1, "limit": 9}),
            ("Grep", {"pattern": "x", "path": f})]))
        b.message("assistant")
        b.tool_call(f"c{n}", tool, args)
        b.request()
        b.message("tool")
        b.tool_result(f"c{n}", lines(f"r{n}", draw(st.integers(1, 30))))
    b.message("assistant")
    b.text("finished")
    b.request()
    run = prepared(b)
    tokens = run.tokens["o200k_base"]
    ctx = Context(run, tokens, [2 * t for t in tokens], draw(st.integers(0, 3)))
    ctx.hi = run.req_blocks[draw(st.integers(1, run.n_requests - 1))]
    results = [x for x in range(ctx.hi) if run.kind[x] == "tool_result"]
    for x in results:
        if draw(st.booleans()) and draw(st.booleans()):  # a quarter trimmed before
            ctx.set_block(x, 1, 2, 3)
    pos = sorted(draw(st.lists(st.integers(0, ctx.hi - 1), max_size=6)))
    for p in pos:
        size = draw(st.integers(1, 400))
        i = ctx.induced.add(p, draw(st.sampled_from(results)), (5, 10, 20), (size, 2 * size,
                                                                                 4 * size))
        if draw(st.booleans()) and draw(st.booleans()):
            ctx.induced.shrink(i, (1, 2, 3), 0)
    return ctx, draw(st.integers(0, 2000))


def _reads_in_order(ctx: Context) -> list[tuple[str, str, int]]:
    """The live whole reads of the context in the order the agent saw them: (file, "block" or
    "item", index); an item right after the block it follows."""
    run, ind = ctx.run, ctx.induced
    seq: list[tuple[float, str, str, int]] = []
    for b in range(ctx.lo, ctx.hi):
        if run.kind[b] == "tool_result" and run.op[b] == "read" and not ctx.trimmed[b]:
            seq.append((b, run.path[b], "block", b))
    for i in range(ind.lo, len(ind.pos)):
        s = ind.src[i]
        if not ind.trimmed[i] and run.kind[s] == "tool_result" and run.op[s] == "read":
            seq.append((ind.pos[i] + 0.5 + i / 1000, run.path[s], "item", i))
    return [(p, what, x) for _, p, what, x in sorted(seq)]


@settings(max_examples=60, deadline=None)
@given(_contexts(), st.sampled_from([0.0, 0.3, 0.9]))
def test_every_read_but_the_newest_of_each_file_gets_the_notice(drawn: tuple[Context, int],
                                                                 enough: float) -> None:
    ctx, head_bytes = drawn
    run, ind = ctx.run, ctx.induced
    ctx.head_n_bytes = head_bytes
    policy = policy_from_dict({**_policy_dict(), "tiers": [
        {"type": "collapse", "name": "reads", "trigger": {"every_request": True},
         "keep_messages": None, "older_reads": {"enough_frac": enough}}]})
    (tier,) = policy.tiers
    assert isinstance(tier, Collapse)
    env = Env(policy=policy, calibration=None, action_rows=[], evictions=Evictions(),
              fixed_est=0, fixed_truth=0, truth_counter=policy.truth)
    newest = ctx.newest_output_start()
    reads = _reads_in_order(ctx)
    last = {p: (what, x) for p, what, x in reads}
    protected = {(what, x) for _, what, x in reads
                 if (x >= newest if what == "block" else ind.pos[x] >= newest)}
    expect = [(what, x) for p, what, x in reads
              if last[p] != (what, x) and (what, x) not in protected]
    block_truth, item_truth = list(ctx.cur_truth), list(ind.truth)
    trimmed, item_trimmed = list(ctx.trimmed), list(ind.trimmed)
    total = (head_bytes + sum(ctx.cur_bytes[ctx.lo:ctx.hi]) + sum(ind.result_bytes[ind.lo:])
             + sum(ind.call_bytes[ind.lo:]))
    notice = len(DUPLICATE_READ_NOTICE.encode())
    notice_tokens = len(encoding("o200k_base").encode_ordinary(DUPLICATE_READ_NOTICE))
    saved = sum((ctx.cur_bytes[x] if what == "block" else ind.result_bytes[x]) - notice
                for what, x in expect)

    enough_saved = _replace_older_reads(tier, CollapseState(), ctx, env, newest, 0)

    assert enough_saved == (bool(expect) and total > 0 and saved >= enough * total)
    got = ([("block", x) for x in range(run.n_blocks) if ctx.trimmed[x] and not trimmed[x]]
           + [("item", i) for i in range(len(ind.pos)) if ind.trimmed[i] and not item_trimmed[i]])
    assert sorted(got) == sorted(expect)
    for what, x in expect:  # each the notice now (message overhead and call kept)
        ov = ctx.msg_overhead
        if what == "block":
            assert ctx.cur_bytes[x] == notice
        else:
            assert ind.result_bytes[x] == notice  # (the policy's truth: o200k, as counted here)
            assert ind.truth[x] == ind.call_truth[x] + notice_tokens + ov
    untouched = [x for x in range(run.n_blocks) if ("block", x) not in expect]
    assert [ctx.cur_truth[x] for x in untouched] == [block_truth[x] for x in untouched]
    assert [ind.truth[i] for i in range(len(ind.pos)) if ("item", i) not in expect] == \
        [item_truth[i] for i in range(len(ind.pos)) if ("item", i) not in expect]
    # the running totals are those of a recount, and the rows say what was replaced
    assert ctx.truth() == (sum(ctx.cur_truth[ctx.lo:ctx.hi]) + sum(ind.truth[ind.lo:]))
    assert ind.live_result_bytes == sum(ind.result_bytes[ind.lo:])
    rows = action_rows(env, run.run_id)
    assert len(rows) == (1 if expect else 0)
    if expect:
        assert rows[0].n_blocks == len(expect)
        assert rows[0].induced == any(what == "item" for what, _ in expect)
    assert env.evictions.n == len(expect)
    assert len(env.evictions.induced_rows) == sum(what == "item" for what, _ in expect)
