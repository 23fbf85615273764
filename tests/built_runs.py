"""Small prepared runs built step by step, for the tests of what a re-read returns and of how
re-reads after compactions are judged (``replay.engine.refetch``, ``analysis.reread_fidelity``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replay.engine.prepared import PreparedRun, prepare
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize

Step = tuple[str, str, dict[str, Any], str]
"""(call id, tool, arguments, result text): one request that makes the call, then its result."""
COMPACT: Step = ("", "", {}, "")
"""A step that is the harness's compaction: its summary, then the next request sends only it."""


def built_run(steps: Sequence[Step], failing: frozenset[str] = frozenset()) -> PreparedRun:
    """A task, one request per step (``COMPACT``: a compaction), then a last answer; the
    results of the calls in ``failing`` (call ids) are errors."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="t", issues=[])
    b.message("user")
    b.text("task")
    for cid, tool, args, result in steps:
        if not cid:
            b.message("user")
            b.summary("summary of the work so far")
            continue
        b.message("assistant")
        b.tool_call(cid, tool, args)
        b.request()
        b.message("tool")
        b.tool_result(cid, result, is_error=cid in failing)
    b.message("assistant")
    b.text("done")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())
