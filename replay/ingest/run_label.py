"""How a run is named to people: its key and its label, defined once.

- ``run_key(run_id, source)``: the run's source path relative to the folder given, with
  ``#N`` for the file's later runs (``eval.json``, ``eval.json#1``): unique in a corpus (a
  source holds each index once), and what a baseline keys runs by.
- ``short_title(text)``: a session title or first prompt as one short line (whitespace
  collapsed, at most ``TITLE_CHARS`` characters with ``…``); what ingest stores as ``Run.title``.
- ``run_labels(runs)``: run id → label, ``[↳ ]KEY[ — TITLE]``: a subagent (a run with a
  ``parent_run_id``) starts with ``↳`` and sorts under its parent in source order, and its
  title is the task its parent gave it.  Labels are unique because keys are.

``short_labels(labels, width)``: the labels cut to ``width`` characters for a table, in the
middle of the key (its head and the file name's tail — what tells runs apart, a subagent's id —
are kept, the title goes first), or None when they would not stay distinct at that width;
``distinct_width(labels)``: the narrowest width at which they do.  Within one table no two runs
show the same label.

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


_TAIL_SHARES = (None, 0.5, 0.8, 0.35, 0.95, 0.2)
"""How much of a cut key is its tail, tried in turn until the labels are distinct: None is the
file name (with its ``/``) when it takes at most two thirds of the room, else two thirds."""


def short_label(text: str, width_chars: int, tail_share: float | None = None) -> str:
    """``text`` in at most ``width_chars`` characters: whole when it fits; else the subagent
    mark, the key and as much of the title as fits (cut at its end); else the key cut in the
    middle, its head and its tail (``tail_share`` of the room, None: the file name) kept."""
    if len(text) <= width_chars:
        return text
    mark = SUBAGENT_MARK if text.startswith(SUBAGENT_MARK) else ""
    key, sep, title = text[len(mark):].partition(TITLE_SEP)
    room = width_chars - len(mark)
    if len(key) <= room:
        title_room = room - len(key) - len(sep)
        if sep and title_room >= 4:
            return mark + key + sep + title[:title_room - 1].rstrip() + "…"
        return mark + key
    if room < 3:
        return (mark + key)[:max(0, width_chars - 1)] + "…"
    if tail_share is None:
        name = len(key) - key.rstrip("/").rfind("/")
        tail = min(name, (room - 1) * 2 // 3)
    else:
        tail = round((room - 1) * tail_share)
    tail = max(1, min(tail, room - 2))
    return mark + key[:room - 1 - tail] + "…" + key[len(key) - tail:]


def short_labels(labels: list[str], width_chars: int) -> list[str] | None:
    """``labels`` each cut to ``width_chars`` (``short_label``) so that different labels stay
    different (a label repeated stays one label), or None when no cut does at this width."""
    wanted = len(set(labels))
    for share in _TAIL_SHARES:
        cut = [short_label(t, width_chars, share) for t in labels]
        if len(set(cut)) == wanted:
            return cut
    return None


def distinct_width(labels: list[str], least_chars: int = 1) -> int:
    """The narrowest width (at least ``least_chars``) at which ``short_labels`` keeps
    ``labels`` apart (their longest length at most: whole labels are apart)."""
    longest = max((len(t) for t in labels), default=0)
    for w in range(min(least_chars, longest), longest):
        if short_labels(labels, w) is not None:
            return w
    return longest
