"""Claude Code assistant records without ``message.id``: which ones are one response.

An API response is streamed one content block per record, its records grouped by
``message.id`` (``claude_code_emit.order``).  A record without one (a log whose ids were
stripped, a tool that rewrote it) was each its own response (``line-<n>``): a response of four
blocks read as four requests, and the blocks of one response, chained one under the other, read
as a rewind's abandoned branch (the audit's ``tool_heavy.jsonl`` without ids: 8 requests for 4
and an ``abandoned-1`` run).

``NoIds`` gives such a record the response of the id-less record before it in the file when it
is the same chain step: its parent is a record of that response (or a user record carrying only
tool results, whose parent is: Claude Code runs a tool while the response still streams; or a
record that is no message, a ``progress``, between them) and its
prompt usage (``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``) is
that response's (``output_tokens`` grows as it streams).  A new call after a tool result sends a
longer prompt; a retry of the same prompt is a sibling, not a child.  Said in one issue per file.

Not here: reading a record (``claude_code_records.record``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replay.ingest.parsers.claude_code_records import Rec
from replay.ingest.parsers.source import Issue, Source

_HOPS = 16
"""Records that are no message (progress, system) looked through from a record to its response."""
_PROMPT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class NoIds:
    """The id-less response being read (its records' uuids and prompt usage), and counts."""

    __slots__ = ("first", "group", "grouped", "open", "prompt", "records", "responses", "uuids")

    def __init__(self) -> None:
        self.open = False
        """An id-less response was the last response read."""
        self.group = ""
        self.uuids: set[str] = set()
        self.prompt: tuple[Any, ...] = ()
        self.records = self.grouped = self.responses = self.first = 0

    def see(self, no: int, rec: Rec, mid: Any, links: Mapping[str, str | None]) -> None:
        """Record ``rec`` (line ``no``; ``mid``: its ``message.id`` as JSON has it) read: an id-less
        assistant record joins the response before it or starts one.  ``links``: the parents
        of the session's records that are no message (a ``progress`` record between two blocks
        of a response is a link of the chain)."""
        if rec.role == "user":
            blocks = rec.blocks
            if self.child(rec, links) and blocks.__class__ is tuple and blocks and \
                    all(b[0] == "result" for b in blocks) and isinstance(rec.uuid, str):
                self.uuids.add(rec.uuid)  # a tool's result written while the response streams
            return
        if rec.role != "assistant":
            return
        if isinstance(mid, str) and mid:
            self.open = False
            self.uuids = set()
            return
        usage = rec.usage or {}
        prompt = tuple(usage.get(k) for k in _PROMPT)
        self.records += 1
        self.first = self.first or no
        if self.open and prompt == self.prompt and self.child(rec, links):
            rec.msg_id = self.group  # type: ignore[misc]  # (a Reply: its own field)
            self.grouped += 1
        else:
            self.open, self.group, self.prompt, self.uuids = True, rec.msg_id, prompt, set()
            self.responses += 1
        if isinstance(rec.uuid, str) and rec.uuid:
            self.uuids.add(rec.uuid)

    def child(self, rec: Rec, links: Mapping[str, str | None]) -> bool:
        """Whether ``rec``'s parent is a record of the response, through records that are no
        message (at most ``_HOPS``)."""
        parent = rec.parent
        for _ in range(_HOPS):
            if parent is None:
                return False
            if parent in self.uuids:
                return True
            if parent not in links:
                return False
            parent = links[parent]
        return False

    def report(self, src: Source, issues: list[Issue]) -> None:
        """One issue when id-less assistant records were met."""
        if self.records:
            issues.append(Issue(src.path, self.first, f"{self.records} assistant record(s) have "
                                "no message.id (first at this line): read as "
                                f"{self.responses} response(s), {self.grouped} record(s) joined "
                                "to the response before them (the same chain step: its child, "
                                "with the same prompt usage)"))
