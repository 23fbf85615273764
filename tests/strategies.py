"""Hypothesis strategies: random well-formed runs and random policies."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replay.engine.prepared import PreparedRun, prepare
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from replay.policy import Policy, policy_from_dict

_TOOLS = [("Read", "read"), ("Write", "write"), ("Edit", "edit"), ("Bash", "exec"), ("Grep", "search")]


def _line_end(i: int) -> str:
    return f" line {i}: value={i * 7 % 13} ok"


_LINE_ENDS = [_line_end(i) for i in range(200)]


def _text(label: str, n_lines: int) -> str:
    """``n_lines`` lines of ``label``; the ends of the first 200 made once (4x faster)."""
    ends = _LINE_ENDS[:n_lines] if n_lines <= len(_LINE_ENDS) else map(_line_end, range(n_lines))
    return "\n".join([label + end for end in ends])


_BOOL = st.booleans()
_TOOLS_READS = [*_TOOLS, *[_TOOLS[0]] * 3]
"""The tools of ``recorded_runs``, a read half the time (re-reads, of results with errors too)."""
_INTS: dict[tuple[int, int], st.SearchStrategy[int]] = {}


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``, made once: the strategies draw a few hundred times an example and
    making each strategy anew cost more than the draw (Hypothesis validates and caches it each
    time). The same strategies drawn in the same order: the examples are the same."""
    got = _INTS.get((lo, hi))
    if got is None:
        got = _INTS[(lo, hi)] = st.integers(lo, hi)
    return got


@st.composite
def runs(draw: Any, max_steps: int = 30, max_lines: int = 120) -> PreparedRun:
    """A random agent run: a task, then steps of (assistant with 0–3 calls, their results in
    any order, a user message sometimes between them; a shell result sometimes ends in figures)."""
    tables = tokenize([_drawn_run(draw, max_steps, max_lines, None)], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


_MODEL_NAMES = ("model-a", "model-b")
_MODELS = st.sampled_from(_MODEL_NAMES)
_RUN_WINDOWS = st.sampled_from([None, 200_000, 32_000])


@st.composite
def recorded_runs(draw: Any, index: int = 0, max_steps: int = 12,
                  max_lines: int = 30) -> RunDraft:
    """A random run as ``runs`` draws it (other sizes), with what a log records besides: usage
    at each request (input, cache reads, output; or none: each unknown at random), tool errors,
    the harness's compactions (a summary message), requests of one of two models, a recorded
    window, sometimes no task (the first request sends an empty context).  Not prepared: the
    draft, for ``tokenize`` with others (``index``: its run's place in the file, its id)."""
    return _drawn_run(draw, max_steps, max_lines, _Recorded(draw, index))


class _Recorded:
    """The draws ``recorded_runs`` adds to ``runs``'s: each made where the run is built."""

    def __init__(self, draw: Any, index: int) -> None:
        self.draw, self.index = draw, index
        self.usage = draw(_ints(0, 3))  # 0: none recorded; 1: all; 2-3: some
        self.window = draw(_RUN_WINDOWS)

    def builder(self, b: RunBuilder) -> None:
        """The run's model (its requests' may be the other) and recorded window."""
        b.model, b.window_tokens = self.draw(_MODELS), self.window

    def task(self) -> bool:
        """Whether the run starts with a task (4 in 5): without, its first context is empty."""
        return self.draw(_ints(0, 4)) > 0

    def compaction(self, b: RunBuilder, step: int, drawn: int) -> None:
        """A harness compaction before a step (or after the last) when ``drawn`` is 0 (drawn in
        0-3 before a step, 0-1 after the last): its summary in a user message."""
        if drawn == 0:
            b.message("user")
            b.summary(_text(f"summary before step {step}", self.draw(_ints(1, 6))))

    def request(self, b: RunBuilder) -> None:
        """The request, its usage recorded or not (``usage``): an input of 0-12,000 tokens (0
        often: no request to compare), cache reads unknown or a third or two of it, an output
        of 0-500; its model.  All from one drawn word (a draw a value cost most of the run's
        drawing); it shrinks to 0: recorded (when some are), no input, model-a."""
        word = self.draw(_ints(0, 2**40 - 1))
        word, model = divmod(word, 2)
        word, unknown = divmod(word, 2)
        if self.usage == 0 or self.usage > 1 and unknown:
            b.request(model=_MODEL_NAMES[model])
            return
        word, times = divmod(word, 4)
        word, size = divmod(word, 4001)
        word, read = divmod(word, 3)
        size *= times
        b.request(input_tokens=size, cache_read_tokens=None if read == 0 else size * read // 3,
                  output_tokens=word % 501, model=_MODEL_NAMES[model])


def _drawn_run(draw: Any, max_steps: int, max_lines: int, rec: _Recorded | None) -> RunDraft:
    """The run ``runs`` draws; with ``rec``, ``recorded_runs``'s (its draws, in their places).

    Several values come from one drawn word, split by divmod (a draw cost more than what it
    draws; each word of at most 128 values at the sizes the tests draw, which Hypothesis draws
    uniformly as it does each part alone), each part 0 the simple case or the case a lone draw
    of it shrank to:
    a step's word: its thought (0-3 none, 4-7 one of 1-4 lines: a thought half the time), its
    calls (0-3), and with ``rec`` after the first step a harness compaction before it (0: one,
    1 in 4); a call's word: its tool, its file and (from the second call) the place its result
    takes among those before it (Fisher-Yates: 0 keeps it in place); a result's word: its lines
    and with ``rec`` whether it is an error (0: one, 1 in 3); after a step's calls, one word: a
    user message after the results (0: one, 1 in 6) and, when there are two results or more,
    one between two of them (0: one, 1 in 6) before which result (from the second).  The lines
    of a written file's content and a shell result's figures (a bool, passed, failed) are drawn
    apart."""
    issues: list[Any] = []
    b = RunBuilder(source=Source(path="<hyp>", rel="hyp", data=b"", sha256="0" * 64),
                   index=rec.index if rec else 0, format="hyp", issues=issues)
    if rec:
        rec.builder(b)
    if rec is None or rec.task():
        b.message("user")
        b.text(_text("task", draw(_ints(1, 5))))
    n_steps = draw(_ints(1, max_steps))
    tools, n_files = (_TOOLS, 5) if rec is None else (_TOOLS_READS, 3)
    n_kinds = len(tools) * n_files
    lines, n_errors = _ints(1, max_lines), 1 if rec is None else 3
    result_word = _ints(0, max_lines * n_errors - 1)
    call = 0
    for step in range(n_steps):
        word, thought = divmod(draw(_ints(0, 8 * 4 * (4 if rec and step else 1) - 1)), 8)
        word, n_calls = divmod(word, 4)
        if rec and step:
            rec.compaction(b, step, word)
        b.message("assistant")
        if thought >= 4:
            b.text(_text(f"thought {step}", thought - 3))
        calls, moves = [], []
        for i in range(n_calls):
            word, kind = divmod(draw(_ints(0, n_kinds * (i + 1) - 1)), n_kinds)
            moves.append(word)
            tool, _op = tools[kind % len(tools)]
            cid = f"c{call}"
            call += 1
            path = f"src/f{kind // len(tools)}.py"
            if tool in ("Write", "Edit"):
                args = {"file_path": path, "content": _text("code", draw(lines))}
            elif tool == "Bash":
                args = {"command": "pytest -q"}
            else:
                args = {"file_path": path}
            b.tool_call(cid, tool, args)
            calls.append((cid, tool))
        if rec:
            rec.request(b)
        else:
            b.request()
        # Results in any order (parallel calls answered as they finish: Claude Code, Codex),
        # a shuffle by Fisher-Yates, sometimes a user message between two of them (a result
        # several messages after its call, as in the samples: the running minimum of prepare's
        # safe split is what keeps a cut from landing there).
        order = list(calls)
        for i in range(len(order) - 1, 0, -1):
            j = i - moves[i]
            order[i], order[j] = order[j], order[i]
        n_inside = 6 * (len(order) - 1) if len(order) > 1 else 1
        word, after = divmod(draw(_ints(0, 6 * n_inside - 1)), 6)
        word, inside = divmod(word, 6)
        between = word + 1 if len(order) > 1 and inside == 0 else 0
        for k, (cid, tool) in enumerate(order):
            if k == between and k:
                b.message("user")
                b.text("[queued] also check the tests")
            b.message("tool")
            error, n_lines = divmod(draw(result_word), max_lines)
            out = _text(f"out {cid}", n_lines + 1)
            if tool == "Bash" and draw(_BOOL):  # a figure the summariser keeps
                out += f"\n{draw(_ints(0, 40))} passed, {draw(_ints(0, 3))} failed in 0.4s"
            b.tool_result(cid, out, is_error=rec is not None and error == 0)
        if after == 0:
            b.message("user")
            b.text("please continue")
    if not calls:
        b.message("user")
        b.text("done?")
    b.message("assistant")
    b.text("finished")
    if rec:
        rec.request(b)
        rec.compaction(b, n_steps, draw(_ints(0, 1)))  # the log may end with one: no request
    else:
        b.request()
    return b.build()


_WHEN = st.sampled_from(["before", "after"])
_TRIM_BLOCKS = st.sampled_from([["tool_results"], ["tool_results", "write_args"], ["call_args"]])
_PROTECTS = st.sampled_from([{}, {"messages": 4}, {"tokens": 500}, {"frac": 0.3},
                             {"tool_results": 2}])
_TEMPLATES = st.sampled_from(["[{tool} output trimmed: {lines} lines]",
                              ("[{tool} output trimmed. Call the tool again to "
                               "see the full output.]")])
_FIRST_KEPT = st.sampled_from([0, 0, 1, 2])
_REINSERTS = st.sampled_from([[], ["task"], ["task", "todo"]])
_COLLAPSE_KEPT = st.sampled_from([None, 2, 4, 8])
_DROP_FRACS = st.sampled_from([None, None, 0.5, 0.75, 1.0])
_OLDER_READS = st.sampled_from([None, None, {}, {"enough_frac": 0.0}, {"enough_frac": 0.6}])
_ESTIMATORS = st.sampled_from([{"method": "chars", "chars_per_token": 3.0},
                               {"method": "tokenizer", "scale": 0.9}, {"method": "tokenizer"}])
_RECALLS = st.sampled_from(["immediate", "at_need"])
_PICK = {n: st.sampled_from([[i] for i in range(n)]) for n in (2, 4)}
"""An index (in a list of one) into a list of ``n`` dicts made at each draw, their values drawn
first: drawn as ``st.sampled_from`` of those dicts draws its index, with the same label (that of
a list of unhashable elements: Hypothesis's generation copies spans of equal labels)."""
_FLOATS = {bounds: st.floats(*bounds) for bounds in ((0.1, 0.9), (0.3, 0.95), (0.05, 1.0),
                                                     (0.0, 0.5))}


@st.composite
def policies(draw: Any) -> Policy:
    """A random valid policy with any combination of tiers.  Its strategies are made once (at
    each draw, making and validating them cost as much as drawing): the same draws in the same
    order as when they were made here, so the same policies."""
    window = draw(_ints(3000, 40000))
    reserve = draw(st.integers(0, window // 4))  # not cached: a strategy a window
    tiers: list[dict[str, Any]] = []
    if draw(_BOOL):
        when = draw(_WHEN)
        triggers = [{"every_request": True}, {"at_frac": draw(_FLOATS[0.1, 0.9])},
                    {"after_events": draw(_ints(1, 60))}, {"never": True}]
        tiers.append({"type": "trim", "name": "t1", "when": when,
                      "trigger": triggers[draw(_PICK[4])[0]],
                      "blocks": draw(_TRIM_BLOCKS),
                      "min_chars": draw(_ints(0, 500)),
                      "protect": draw(_PROTECTS),
                      "placeholder": {"head_chars": draw(_ints(0, 80)),
                                      "tail_chars": draw(_ints(0, 40)),
                                      "template": draw(_TEMPLATES)},
                      "min_reclaim_tokens": draw(_ints(0, 2000))})
    if draw(_BOOL):
        triggers = [{"at_frac": draw(_FLOATS[0.3, 0.95])}, {"after_events": draw(_ints(2, 80))}]
        tiers.append({"type": "summarise", "name": "s1",
                      "trigger": triggers[draw(_PICK[2])[0]],
                      "keep_messages": draw(_ints(0, 10)),
                      "keep_first_messages": draw(_FIRST_KEPT),
                      "keep_max_frac": draw(_FLOATS[0.05, 1.0]),
                      "summary_tokens": draw(_ints(20, 300)),
                      "reinsert": draw(_REINSERTS),
                      "fail_every": draw(_ints(0, 3)),
                      "only_at_user_message": draw(_BOOL)})
    if draw(_BOOL):
        drop_frac = draw(_DROP_FRACS)  # (it decides alone: no keep_messages beside it)
        tiers.append({"type": "collapse", "name": "c1", "when": draw(_WHEN),
                      "margin_frac": draw(_FLOATS[0.0, 0.5]),
                      "may_trim_protected": draw(_BOOL),
                      "keep_messages": draw(_COLLAPSE_KEPT) if drop_frac is None else None,
                      "drop_frac": drop_frac,
                      "keep_first_messages": draw(_FIRST_KEPT),
                      "older_reads": draw(_OLDER_READS)})
    return policy_from_dict({
        "name": "hyp",
        "server": {"window_tokens": window, "reserve_tokens": reserve,
                   "message_overhead_tokens": draw(_ints(0, 5))},
        "estimator": draw(_ESTIMATORS),
        "subtract_reserve": draw(_BOOL),
        "tiers": tiers,
        "behaviour": {"max_rereads_per_turn": draw(_ints(0, 6)),
                      "invited_recall": draw(_RECALLS)},
    })
