"""Small hand-built runs for the per-tier tests, and independent readings of a trace.

``session`` builds: a task, then for each entry of ``results`` an assistant message with one
``Read`` call and a tool message with its result of that many lines; then a final answer.  Every
assistant message is a request's output (or only the last one, ``every_step=False``), so the
newest message in a request's context is the tool result just before it.
"""

from __future__ import annotations

from typing import Any

from replay.engine.prepared import PreparedRun, prepare
from replay.engine.trace import Trace
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from replay.policy import Policy, policy_from_dict


def lines(label: str, n: int) -> str:
    """``n`` lines of distinct filler text."""
    return "\n".join(f"{label} line {i}: value={i * 7 % 13} ok" for i in range(n))


def start() -> RunBuilder:
    """A hand-built run over a stand-in source (no file behind it), holding the task: a user
    message of three lines."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="test", issues=[])
    b.message("user")
    b.text(lines("task", 3))
    return b


def prepared(b: RunBuilder) -> PreparedRun:
    """The built run, its blocks counted with o200k, prepared for replay."""
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


def session(results: list[int], *, every_step: bool = True,
            files: list[int] | None = None) -> PreparedRun:
    """A task, one read per entry of ``results`` (its result that many lines), a final answer.
    Read ``i`` reads ``src/f{i}.py``, or ``src/f{files[i]}.py`` when ``files`` is given."""
    b = start()
    for i, n in enumerate(results):
        b.message("assistant")
        b.tool_call(f"c{i}", "Read", {"file_path": f"src/f{i if files is None else files[i]}.py"})
        if every_step:
            b.request()
        b.message("tool")
        b.tool_result(f"c{i}", lines(f"out {i}", n))
    b.message("assistant")
    b.text("finished")
    b.request()
    return prepared(b)


def turns(steps: list[int], *, result_lines: int = 40) -> PreparedRun:
    """Per entry of ``steps`` a turn: a user message (the first turn's is the task), that many
    reads (each call a request's output, its result ``result_lines`` lines), then an answer (a
    request's output).  A turn's first request has the user's message as its newest."""
    b = start()
    for t, n in enumerate(steps):
        if t:
            b.message("user")
            b.text(lines(f"ask {t}", 2))
        for i in range(n):
            b.message("assistant")
            b.tool_call(f"c{t}.{i}", "Read", {"file_path": f"src/t{t}f{i}.py"})
            b.request()
            b.message("tool")
            b.tool_result(f"c{t}.{i}", lines(f"out {t}.{i}", result_lines))
        b.message("assistant")
        b.text(f"answer {t}")
        b.request()
    return prepared(b)


def policy(tiers: list[dict[str, Any]], *, window: int = 100_000) -> Policy:
    """A policy counting with the o200k tokenizer for both estimate and truth, no overheads: a
    block's estimated size is its ingest token count."""
    return policy_from_dict({"name": "t", "server": {"window_tokens": window},
                             "estimator": {"method": "tokenizer"},
                             "truth": {"method": "tokenizer"}, "tiers": tiers})


def results_of(run: PreparedRun) -> list[int]:
    """The run's tool-result blocks, in order."""
    return [b for b in range(run.n_blocks) if run.kind[b] == "tool_result"]


def evicted(run: PreparedRun, trace: Trace, fate: str | None = None) -> list[int]:
    """Blocks (run indices) in the evictions table, with ``fate`` when given, in row order."""
    index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
    return [index[(r["msg"], r["block"])] for r in trace.evictions.to_pylist()
            if fate is None or r["fate"] == fate]


def context_end(run: PreparedRun, request: int) -> int:
    """One past the last block in ``request``'s context (blocks arrive, never leave the end)."""
    return max(run.req_blocks[:request + 1])


def newest_message(run: PreparedRun, request: int) -> list[int]:
    """The blocks of the newest message in ``request``'s context."""
    hi = context_end(run, request)
    return [b for b in range(hi) if run.msg[b] == run.msg[hi - 1]]
