"""Hypothesis strategies: random well-formed runs and random policies."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replay.engine.prepared import PreparedRun, prepare
from replay.ingest.parsers.builder import RunBuilder, RunDraft
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from replay.policy import Policy, policy_from_dict

_TOOLS = [("Read", "read"), ("Write", "write"), ("Edit", "edit"), ("Bash", "exec"), ("Grep", "search")]


def _text(label: str, n_lines: int) -> str:
    return "\n".join(f"{label} line {i}: value={i * 7 % 13} ok" for i in range(n_lines))


_BOOL = st.booleans()
_TOOL = st.sampled_from(_TOOLS)
_TOOL_READS = st.sampled_from([*_TOOLS, *[_TOOLS[0]] * 3])
"""A tool, a read half the time (``recorded_runs``: re-reads, of results with errors too)."""
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

    def is_error(self) -> bool:
        """Whether a tool result is an error (1 in 3)."""
        return self.draw(_ints(0, 2)) == 0

    def compaction(self, b: RunBuilder, step: int, one_in: int) -> None:
        """A harness compaction before a step (or after the last), one time in ``one_in``: its
        summary in a user message."""
        if self.draw(_ints(1, one_in)) == 1:
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
    """The run ``runs`` draws; with ``rec``, ``recorded_runs``'s (its draws, in their places)."""
    issues: list[Any] = []
    b = RunBuilder(source=Source(path="<hyp>", rel="hyp", data=b"", sha256="0" * 64),
                   index=rec.index if rec else 0, format="hyp", issues=issues)
    if rec:
        rec.builder(b)
    if rec is None or rec.task():
        b.message("user")
        b.text(_text("task", draw(_ints(1, 5))))
    n_steps = draw(_ints(1, max_steps))
    lines, n_calls, file_no, step_lines, interject = (
        _ints(1, max_lines), _ints(0, 3), _ints(0, 4 if rec is None else 2), _ints(1, 4),
        _ints(0, 5))
    call = 0
    for step in range(n_steps):
        if rec and step:
            rec.compaction(b, step, 4)
        b.message("assistant")
        if draw(_BOOL):
            b.text(_text(f"thought {step}", draw(step_lines)))
        calls = []
        for _ in range(draw(n_calls)):
            tool, _op = draw(_TOOL if rec is None else _TOOL_READS)
            cid = f"c{call}"
            call += 1
            path = f"src/f{draw(file_no)}.py"
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
        # a shuffle drawn by Fisher-Yates (0 keeps a result in place, so it shrinks to the
        # calls' order), sometimes a user message between two of them (a result several
        # messages after its call, as in the samples: the running minimum of prepare's safe
        # split is what keeps a cut from landing there).
        order = list(calls)
        for i in range(len(order) - 1, 0, -1):
            j = i - draw(_ints(0, i))
            order[i], order[j] = order[j], order[i]
        between = draw(_ints(1, len(order) - 1)) if len(order) > 1 and draw(interject) == 0 else 0
        for k, (cid, tool) in enumerate(order):
            if k == between and k:
                b.message("user")
                b.text("[queued] also check the tests")
            b.message("tool")
            out = _text(f"out {cid}", draw(lines))
            if tool == "Bash" and draw(_BOOL):  # a figure the summariser keeps
                out += f"\n{draw(_ints(0, 40))} passed, {draw(_ints(0, 3))} failed in 0.4s"
            b.tool_result(cid, out, is_error=rec is not None and rec.is_error())
        if draw(interject) == 0:
            b.message("user")
            b.text("please continue")
    if not calls:
        b.message("user")
        b.text("done?")
    b.message("assistant")
    b.text("finished")
    if rec:
        rec.request(b)
        rec.compaction(b, n_steps, 2)  # the log may end with one: no request after it
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
                      "fail_every": draw(_ints(0, 3))})
    if draw(_BOOL):
        tiers.append({"type": "collapse", "name": "c1", "when": draw(_WHEN),
                      "margin_frac": draw(_FLOATS[0.0, 0.5]),
                      "may_trim_protected": draw(_BOOL),
                      "keep_messages": draw(_COLLAPSE_KEPT)})
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
