"""A run-level text field a log writes as a string (an agent's name and version, a task's
name, a model, a title, a session id): read once for the whole run, so a value of another
type is said once as an issue naming the field and what it held, never read as '' without a
word.  So is JSON's null where the format never writes null there (``nullable`` False: a
field the format writes as a string or leaves out); where it does (an optional field its
writer sets to null), null reads as unknown without a word.

Not here: the wording (``replay.ingest.parsers.content_text``'s ``not_a_string``), a message's
text fields (``content_text``'s ``as_text``, ``named``).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.content_text import kept_as_json, not_a_string
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.source import Issue


def run_text(value: Any, field: str, path: str, issues: list[Issue], *,
             nullable: bool = False) -> str:
    """``value`` when it is a string; '' when absent (the log does not know it: the caller
    passes ``UNSET``, ``d.get(key, UNSET)``); '' for any other type too, said as one issue of
    the file ``path`` (``agent.version is int, not a string (read as empty)``; ``field``:
    where it was, e.g. ``agent.version``).  Null (None) is '' as well: said the same way
    (``eval.model is null, not a string (read as empty)``) unless ``nullable`` (the format's
    writer sets the field to null when it does not know it)."""
    if value.__class__ is str:
        return value
    if value is not UNSET and (value is not None or not nullable):
        issues.append(Issue(path, 0, not_a_string(value, field)))
    return ""


def run_name(value: Any, field: str, path: str, issues: list[Issue], *,
             nullable: bool = True) -> str:
    """An id or a name of the run (a trajectory's id, a session's): ``value`` when it is a
    string, '' when absent (``UNSET``) or null; any other type its JSON (``7``, ``["a"]``), as
    ``content_text.named`` keeps a call's id, said as one issue (``trajectory_id is int, not a
    string (kept as its JSON)``).  A null the format never writes (``nullable`` False) is said
    as ``run_text`` says it (``sessionId is null, not a string (read as empty)``)."""
    if value.__class__ is str:
        return value
    if value is None or value is UNSET:
        if value is None and not nullable:
            issues.append(Issue(path, 0, not_a_string(value, field)))
        return ""
    issues.append(Issue(path, 0, kept_as_json(value, field)))
    return json_text(value)


def odd_run_field(field: str, value: Any, path: str, line: int, issues: list[Issue],
                  said: set[str]) -> None:
    """Say a run-level ``field`` that a log repeats on its lines (Claude Code's ``version``,
    ``sessionId``, a title record's title) when ``value``, at ``line``, is no string (null
    too: the caller passes a value the line holds, never an absent one): once a file per
    field (``said``: the fields said so far), as ``run_text`` says it; the caller reads the
    value as absent."""
    if field not in said:
        said.add(field)
        issues.append(Issue(path, line, not_a_string(value, field)))
