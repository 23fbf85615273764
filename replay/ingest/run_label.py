"""How a run is named to people: its key and its label, defined once.

- ``run_key(run_id, source)``: the run's source path relative to the folder given, with
  ``#N`` for the file's later runs (``eval.json``, ``eval.json#1``): unique in a corpus (a
  source holds each index once), and what a baseline keys runs by.
- ``short_title(text)``: a session title or first prompt as one short line (whitespace
  collapsed, at most ``TITLE_CHARS`` characters with ``…``); what ingest stores as ``Run.title``.
- ``run_labels(runs)``: run id → label, ``[↳ ]KEY[ — TITLE]``: a subagent (a run with a
  ``parent_run_id``) starts with ``↳`` and sorts under its parent in source order, and its
  title is the task its parent gave it.  Labels are unique because keys are.

Labels come from files: they are printed through ``replay.cli.output.printable`` and
HTML-escaped in reports, never trusted.  ``--run`` takes a label, a key, a source, a glob over
any of them or a run id (``replay.run_select``).

Not here: choosing runs (``replay.run_select``), printing (``replay.cli.output``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from replay.ingest.redaction import declared, exact_markers

TITLE_CHARS = 60
"""A title is cut to this many characters (with ``…``)."""
SUBAGENT_MARK = "↳ "
"""What a subagent's label starts with."""
TITLE_SEP = " — "
"""Between a run's key and its title in a label."""
_SPACE = re.compile(r"\s+")
_WRAPPED = re.compile(r"<([A-Za-z][\w-]*)\b[^>]*>.*</\1>", re.DOTALL)
"""A text that is one tagged element (``<system-reminder>…</system-reminder>``,
``<command-name>…``): harness furniture, not what the user asked."""


_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
"""An XML-like tag (``<pr_description>``, ``</uploaded_files>``): dropped, its text kept."""


def short_title(text: str) -> str:
    """``text`` as one line of at most ``TITLE_CHARS`` characters, tags and redaction markers
    dropped ('' when nothing else is left)."""
    line = _SPACE.sub(" ", _TAG.sub(" ", _unredacted(text[:4 * TITLE_CHARS + 400]))).strip()
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"


def first_prompt(texts: Iterable[tuple[str, str, str]]) -> str:
    """The short title of the first user text of ``(role, kind, text)`` blocks in context
    order that is not blank, not one tagged element and not only redaction markers; '' when
    there is none."""
    for role, kind, text in texts:
        if role != "user" or kind != "text":
            continue
        text = _unredacted(text).strip()  # a redaction marker is no title
        if text and not _WRAPPED.fullmatch(text):
            return short_title(text)
    return ""


def _unredacted(text: str) -> str:
    """``text`` without its redaction markers (``replay.ingest.redaction``: shared logs' and
    ``replay redact``'s own)."""
    found = declared(text)
    text = found[0] if found else text
    for m in reversed(exact_markers(text)):
        text = text[:m.start()] + " " + text[m.end():]
    return text


def run_key(run_id: str, source: str) -> str:
    """``source`` for a file's first run, ``source#N`` for its run of index N (the run id's
    suffix)."""
    index = run_id.rsplit("-", 1)[-1]
    return source if index == "0" else f"{source}#{index}"


def label(key: str, title: str, subagent: bool) -> str:
    """A run's label from its key, title and whether it is a subagent."""
    return (SUBAGENT_MARK if subagent else "") + key + (TITLE_SEP + title if title else "")


def label_column(runs: Any) -> list[str]:
    """The label of every row of a ``runs`` table (Arrow, with ``run_id``, ``source``,
    ``parent_run_id`` and, when stored, ``title``), in row order."""
    ids = runs["run_id"].to_pylist()
    titles = runs["title"].to_pylist() if "title" in runs.column_names else [""] * len(ids)
    return [label(run_key(rid, src), title or "", bool(parent))
            for rid, src, parent, title in zip(ids, runs["source"].to_pylist(),
                                               runs["parent_run_id"].to_pylist(), titles)]


def run_labels(runs: Any) -> dict[str, str]:
    """Run id → label for the rows of a ``runs`` table (``label_column``)."""
    return dict(zip(runs["run_id"].to_pylist(), label_column(runs)))


def strip_mark(text: str) -> str:
    """A label typed without its subagent mark matches too."""
    return text.removeprefix(SUBAGENT_MARK).removeprefix(SUBAGENT_MARK.strip())
