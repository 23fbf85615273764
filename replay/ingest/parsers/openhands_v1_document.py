"""An OpenHands V1 conversation document read into its parts: the ``base_state.json`` object and
the events by their number (``replay.ingest.openhands_v1_folder`` makes the document of a
conversation folder: a header line, then one line a file, its text or why it was refused).
Every file that cannot be read, is not JSON, is not an event file or repeats a number is
counted in the coverage and said; the numbers missing from the sequence are counted in one
issue.

Not here: what the events become (``replay.ingest.parsers.openhands_v1``), the usage records
(``replay.ingest.parsers.openhands_v1_usage``).
"""

from __future__ import annotations

from typing import Any

from replay.ingest.openhands_v1_folder import BASE_STATE, EVENT_NAME, HEADER_KEY
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.source import Issue, Source


def read_document(src: Source, issues: list[Issue]
                  ) -> tuple[dict[str, Any] | None, dict[int, tuple[str, Any]]] | None:
    """The conversation's ``base_state.json`` object (None when missing or not an object) and
    its events, number -> (file name, decoded JSON); None when ``src`` is no conversation
    document (an issue says so).  The source's bytes are let go once split into lines."""
    lines = bytes(src.data).split(b"\n")
    src.release_data()
    cov = src.coverage
    try:
        header = _obj(loads(lines[0]))
    except JSON_REFUSED:
        header = {}
    if not isinstance(header.get(HEADER_KEY), str):
        issues.append(Issue(src.path, 1, "not an OpenHands V1 conversation document"))
        return None
    base: dict[str, Any] | None = None
    events: dict[int, tuple[str, Any]] = {}
    for no, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        rec = _record(raw)
        name = _str(rec.get("file")) or f"line {no}"
        if not isinstance(rec.get("text"), str):
            why = _str(rec.get("refused")) or "no text"
            cov.unknown(f"file ({_short(why)})")
            issues.append(Issue(src.path, no, f"{name}: not read ({why})"))
            continue
        try:
            doc = loads(rec["text"])
        except JSON_REFUSED as exc:
            cov.unknown("file (not JSON: cut short?)")
            issues.append(Issue(src.path, no, f"{name}: not JSON ({_short(str(exc))}); skipped"))
            continue
        if name.endswith(BASE_STATE):
            base = doc if isinstance(doc, dict) else None
            cov.count("base_state", "modelled" if base is not None else "unknown")
            continue
        m = EVENT_NAME.match(name.rsplit("/", 1)[-1])
        if m is None:
            cov.unknown("file (not an event file)")
            issues.append(Issue(src.path, no, f"{name}: not an event file name; skipped"))
            continue
        idx = int(m["idx"])
        if idx in events:
            cov.unknown("file (repeated event index)")
            issues.append(Issue(src.path, no, f"{name}: a second event numbered {idx}; skipped"))
            continue
        if isinstance(doc, dict) and doc.get("id") != m["event_id"]:
            issues.append(Issue(src.path, no, f"{name}: its event's id {_str(doc.get('id'))!r} "
                                              "is not the one in its name (kept)"))
        events[idx] = (name, doc)
    _say_gaps(src, issues, sorted(events))
    return base, events


def _record(raw: bytes) -> dict[str, Any]:
    try:
        return _obj(loads(raw))
    except JSON_REFUSED:
        return {}


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _say_gaps(src: Source, issues: list[Issue], present: list[int]) -> None:
    """One issue naming the event numbers missing from the sequence (0 to the highest read)."""
    if not present:
        return
    n_missing = present[-1] + 1 - len(present)  # (counted, not listed: a name may say 10**12)
    if n_missing:
        first: list[int] = []
        for a, b in zip([-1, *present], present):
            first.extend(range(a + 1, min(b, a + 1 + 10 - len(first))))
            if len(first) == 10:
                break
        shown = ", ".join(map(str, first)) + (", ..." if n_missing > 10 else "")
        src.coverage.unknown("event (missing from the sequence)", n_missing)
        issues.append(Issue(src.path, 0, f"{n_missing} event file(s) missing from the "
                                          f"numbering ({shown}): the events after a gap are read "
                                          "(the SDK stops at the first)"))
