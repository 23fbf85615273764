"""Small built runs for the need rules' tests: a read of one file, then responses that name it."""

from __future__ import annotations

from typing import Any

from replay.engine.needs import RULES, run_needs
from replay.engine.prepared import PreparedRun, prepare
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize

READ = "src/app.py"

Call = tuple[str, dict[str, Any]]
"""A call: (tool, arguments); its result is a short text, an error when the tool is in
``failing``."""


def built_run(*responses: list[str | Call], read: str = READ, users: dict[int, str] | None = None,
              failing: frozenset[str] = frozenset()) -> PreparedRun:
    """A run that reads ``read``, then one request per response (its parts: a text, or a call),
    each call answered; ``users``: response index → a user-role message sent before it."""
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="t", issues=[])
    b.message("user")
    b.text("task")
    n = 0
    for i, parts in enumerate(([("Read", {"file_path": read})], *responses)):
        if users and i - 1 in users:
            b.message("user")
            b.text(users[i - 1])
        b.message("assistant")
        calls = []
        for part in parts:
            if isinstance(part, str):
                b.text(part)
            else:
                b.tool_call(f"c{n}", *part)
                calls.append((f"c{n}", part[0]))
                n += 1
        b.request()
        if calls:
            b.message("tool")
            for cid, tool in calls:
                b.tool_result(cid, "def main():\n    return 1\n" * 5, is_error=tool in failing)
    b.message("assistant")
    b.text("done")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


def need_rules(run: PreparedRun, read: str = READ) -> list[str]:
    """The rules of the needs of the read of ``read``, one per request that has one."""
    needs = run_needs(run, RULES)
    block = next(b for b in needs.blocks if needs.blocks[b].key == f"path:{read}")
    return [n.rule for n in needs.blocks[block].needs]
