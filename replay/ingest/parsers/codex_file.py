"""Codex rollout files as a whole: detection, repeated items, the order of usage and output,
the parent.

``sniff`` / ``evidence`` recognise a rollout from its head, ``unique`` drops an item written
twice (reported), ``usage_first`` tells whether the file writes a token_count before or after
the output it measures, ``parent_run_id`` finds the rollout a fork or subagent came from,
``repeated`` whether a message of the file repeats a text (legacy AGENTS.md copies).

Not here: the walk over the records (``replay.ingest.parsers.codex``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import replay.ingest.parsers.codex_items as it
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.json_decode import JSON_REFUSED
from replay.ingest.parsers.repeats import Repeats
from replay.ingest.parsers.source import Issue, run_id_for, stored_source

ENVELOPE = ("session_meta", "turn_context", "response_item", "event_msg", "compacted",
            "world_state", "inter_agent_communication", "inter_agent_communication_metadata",
            "token_usage_record", "security_risk_score", "realtime_item", "retained_context")
"""Rollout line types (0.146's eight, the uncertain 0.14x ones and 0.149+'s
``retained_context``, harness-policies.md Part C: what a compaction kept, which the
``compacted`` line's replacement history already holds)."""
SKIPPED_LINES = frozenset(ENVELOPE[5:])
"""Line types understood and not context (counted as skipped)."""
_MODERN_HEAD = re.compile(rb'\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*(?:"ordinal"\s*:\s*\d+\s*,'
                          rb'\s*)?"type"\s*:\s*"(?:%s)"\s*,\s*"payload"\s*:\s*\{'
                          % b"|".join(t.encode() for t in ENVELOPE))
_LEGACY_HEAD = re.compile(rb'\s*\{\s*"id"\s*:\s*"[^"]*"\s*,\s*"timestamp"\s*:\s*"[^"]*"\s*,'
                          rb'\s*"(?:instructions|git)"\s*:')
_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{7,63}")
_NO_FIRST, _NO_LAST, _QUOTE = frozenset(b"]},:"), frozenset(b",:{["), ord('"')
"""The first and last bytes of a line no JSON text has (``sniff``)."""
_KEY_LINE = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:')
"""A line (stripped) that opens with a JSON string followed by a colon: no JSON text (``sniff``;
a line holding a NUL in its first four bytes is not tested: ``json.loads`` would read it as
UTF-16 or UTF-32)."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a Codex rollout (modern envelope lines or the legacy pre-envelope layout).

    Args:
        filename: the file name (unused: rollouts are recognised by content).
        head: the first 64 KiB of the file.
    """
    if _MODERN_HEAD.match(head) or _LEGACY_HEAD.match(head):
        return True
    for i, raw in enumerate(head.split(b"\n", 40)[:40]):
        text = raw.strip()  # no JSON text is blank, starts with a closing bracket, comma or
        # colon or ends with a comma, colon or opening bracket: a pretty-printed document's
        # lines are not tried (``json.loads`` raising costs ~10 µs a line)
        if not text or text[0] in _NO_FIRST or text[-1] in _NO_LAST:
            continue  # (bytes as ints: ``text[:1] in b"]},:"`` costs ~2,000 instructions)
        if text[0] == _QUOTE and 0 not in raw[:4] and _KEY_LINE.match(text):
            continue  # a pretty-printed member, ``"key": value``: a JSON text that opens
            # with a string is that string alone, never followed by a colon (one match,
            # not ``json.loads`` raising: ~10,000 instructions a line; the NUL byte looked
            # for as an int: ``b"\x00" in`` first tries the bytes as an int, an error
            # formatted and dropped, ~400 instructions a line)
        try:
            rec = json.loads(raw)
        except JSON_REFUSED:
            continue
        if not isinstance(rec, dict):
            return False
        if isinstance(rec.get("payload"), dict) and "timestamp" in rec:
            if rec.get("type") == "session_meta" and i == 0 or rec.get("type") in ENVELOPE[1:]:
                return True
        elif "payload" not in rec and ("record_type" in rec or (
                i == 0 and "id" in rec and "timestamp" in rec and "type" not in rec
                and ("instructions" in rec or "git" in rec))):
            return True
    return False


def evidence(filename: str, head: bytes) -> str:
    """What of a Codex rollout the head shows: envelope lines by type (a ``session_meta`` first
    line or any other envelope type decides), or the legacy first line; '' when neither."""
    if _LEGACY_HEAD.match(head):
        return "a legacy rollout's first line (id, timestamp, instructions/git)"
    kinds: Counter[str] = Counter()
    for raw in head.split(b"\n", 40)[:40]:
        try:
            rec = json.loads(raw)
        except JSON_REFUSED:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("payload"), dict) \
                and rec.get("type") in ENVELOPE:
            kinds[str(rec["type"])] += 1
    if not kinds:
        return ""
    return "Codex envelope lines in the first 40: " + ", ".join(
        f"{t} x{n}" for t, n in kinds.most_common(4))


def unique(records: list[tuple[int, dict[str, Any]]], path: str, issues: list[Issue],
           coverage: Coverage) -> list[tuple[int, dict[str, Any]]]:
    """``records`` without repeats of an earlier context item with the same identity (a call's
    or output's ``call_id``, an item's ``id``, a reasoning item's ``encrypted_content``): an item
    written twice is reported and counted as skipped in ``coverage`` under its type (every
    line accounted for), not counted twice.  Messages carry no identity and may legitimately
    repeat.  ``records`` itself when nothing repeats (most files)."""
    firsts: dict[str, dict[str, Any]] = {}  # item type -> identity -> the (line, record)
    # pair of its first item (the pair ``records`` holds: no tuple made an item); None once
    # ``seen`` holds its items
    seen = Repeats()  # (the items of an identity met twice or more: most files have none)
    skip: set[int] = set()  # lines of the repeats (a line holds one record)
    pairs: list[Any] = records  # (each pair as it is: compiled, a typed tuple is a new box)
    for pair in pairs:
        rec: dict[str, Any] = pair[1]
        item = rec.get("payload", rec)  # (legacy: bare items)
        if item is not rec and rec.get("type") != "response_item":
            continue  # (no item: no identity)
        if type(item) is not dict or (t := item.get("type")).__class__ is not str:
            continue
        value = item.get("call_id")  # the identity: the first of these keys holding a
        if type(value) is not str or not value:  # non-empty string (no loop: no iterator)
            value = item.get("id")
            if type(value) is not str or not value:
                value = item.get("encrypted_content")
                if type(value) is not str or not value:
                    continue
        of_type = firsts.get(t)
        if of_type is None:
            of_type = firsts[t] = {}
        met = of_type.setdefault(value, pair)
        if met is pair:  # (an identity not met before, nearly every one: no call)
            continue
        ident = (t, value)
        if met is not None:  # its second item: Repeats takes the first, then decides
            first_rec = met[1]
            seen.earlier(ident, first_rec.get("payload", first_rec), met[0])
            of_type[value] = None
        no = pair[0]
        first = seen.earlier(ident, item, no)
        if first is not None:
            issues.append(Issue(path, no, f"duplicate of the {t} item on line "
                                          f"{first} (record skipped)"))
            coverage.skipped(f"response_item/{t}")
            skip.add(no)
    if not skip:
        return records
    return [pair for pair in records if pair[0] not in skip]


def usage_first(records: list[tuple[int, dict[str, Any]]]) -> bool:
    """True when the file's first usage-bearing token_count comes before any model output."""
    outputs = (*it.CALLS, *it.HOSTED, "reasoning")
    for _, rec in records:
        p = rec.get("payload", rec)
        if not isinstance(p, dict):
            continue
        if rec.get("type") == "event_msg" and p.get("type") == "token_count":
            if p.get("info") is not None:
                return True
        elif (rec.get("type") in outputs or rec.get("type") in ("response_item", "message")) and (
                p.get("type") in outputs or p.get("role") == "assistant"):
            return False
    return False


def parent_run_id(path: Path, session: str, rel: str) -> str:
    """Run id of the rollout of ``session`` beside ``path`` (stored as ``rel``) or in its
    ``sessions/YYYY/MM/DD`` tree ('' when not found; the id must look like a session id, no
    path characters)."""
    if not _SESSION_ID.fullmatch(session):
        return ""
    pattern = f"rollout-*-{session}.jsonl"
    here = path.parent
    places = [(here, pattern)]
    if _is_day_folder(here):  # (only a sessions tree's day: else the glob three folders up
        # scanned whatever lay there, e.g. every user's home for a file in ~/logs/a/)
        places.append((here.parent.parent.parent, f"*/*/*/{pattern}"))
    for folder, glob in places:
        try:
            for found in sorted(folder.glob(glob)):
                if found.is_file() and found.resolve() != path.resolve():
                    st = found.stat()
                    return _run_id_of(str(found), st.st_ino, st.st_size, st.st_mtime_ns,
                                      stored_source(path, rel, found))
        except OSError:  # a folder or file gone, or unreadable, while looked through: the
            continue  # parent is not found there (as if it were not there)
    return ""


_DAY_PARTS = (re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"\d{2}"))
"""A Codex sessions tree's day folder: ``YYYY/MM/DD``."""


def _is_day_folder(folder: Path) -> bool:
    """Whether ``folder`` ends in ``YYYY/MM/DD`` below some folder (a sessions tree's day)."""
    parts = folder.parts
    return len(parts) > 3 and all(rx.fullmatch(part) for rx, part in zip(_DAY_PARTS, parts[-3:]))


@functools.lru_cache(maxsize=64)
def _run_id_of(path: str, inode: int, size: int, mtime_ns: int, source: str) -> str:
    """Run id of the rollout at ``path`` (hashed once per version of the file)."""
    with open(path, "rb") as f:
        return run_id_for(hashlib.file_digest(f, "sha256").hexdigest(), 0, source)


def repeated(records: list[tuple[int, dict[str, Any]]], text: str) -> bool:
    """Whether a message item of the file contains ``text`` (legacy AGENTS.md copies)."""
    needle = text.strip()
    for _, rec in records:
        p = rec.get("payload", rec)
        if isinstance(p, dict) and p.get("type") == "message" and p.get("role") != "assistant" \
                and isinstance(p.get("content"), (list, str)) \
                and any(needle in t for _, t in it.content(p["content"])):
            return True
    return False
