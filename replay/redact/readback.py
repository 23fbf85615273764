"""A redacted copy read back as ingest reads it: its blocks' texts (which draft markers each
shows: ``block_texts``), and every column of its blocks, requests, events and runs against the
original's (``verify_copy``: paths read as their hashes, timestamps shifted as asked).

Not here: writing the copy (``replay.redact.archive``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.run_tables import tokenize
from replay.ingest.schema import SCHEMAS, TOKENIZERS
from replay.redact.leaves import Redactor

_COMPARED = {
    "messages": ("msg", "block", "role", "kind", "call_id", "tool", "op", "path", "n_bytes",
                 "n_chars", "n_lines", "tokens_o200k", "tokens_cl100k", "is_error",
                 "tokens_estimated", "is_harness_summary", "ts", "agent"),
    "runs": tuple(c for c in SCHEMAS["runs"].names
                  if c not in ("run_id", "parent_run_id", "source", "sha256", "title")),
    "requests": None, "events": None,
}
"""Columns a redacted file must read back equal (None: every column but ``run_id``; a run's id
and its parent's derive from the file's sha256, which redaction changes; a run's title is its
session title or first prompt, text that redaction replaces)."""


def block_texts(path: Path, rel: str, fmt: str, data: bytes) -> list[str] | None:
    """Every block's text as ``fmt``'s parser reads ``data``, in ingest order."""
    sha = hashlib.sha256(data).hexdigest()
    drafts = PARSERS[fmt].parse(Source(path=str(path), rel=rel, data=data, sha256=sha), [])
    return [t for d in drafts for t in d.messages["text"]] if drafts else None


def verify_copy(path: Path, rel: str, fmt: str, data: bytes, original: Any,
                redactor: Redactor) -> list[Issue]:
    """Issues for every column of the redacted copy that reads other than the original's, and
    for what its parse reports that the original's did not."""
    want = original.tables
    stand_ins = _StandIns(redactor.idents)
    known = {(i.line, stand_ins.text(i.reason)) for i in original.issues}
    issues: list[Issue] = []
    sha = hashlib.sha256(data).hexdigest()
    drafts = PARSERS[fmt].parse(Source(path=str(path), rel=rel, data=data, sha256=sha), issues)
    if not drafts:
        return [Issue(str(path), 0, "the redacted copy holds no run")]
    got = tokenize(drafts, TOKENIZERS)
    out = [Issue(str(path), i.line, f"the redacted copy: {i.reason}") for i in issues
           if (i.line, i.reason) not in known]
    for table, columns in _COMPARED.items():
        a, b = getattr(want, table), getattr(got, table)
        if a.num_rows != b.num_rows:
            out.append(Issue(str(path), 0, f"{table}: {b.num_rows} rows, the original "
                                           f"{a.num_rows}"))
            continue
        for col in columns or [c for c in a.column_names if c != "run_id"]:
            expected = _expected(col, a[col].to_pylist(), redactor, stand_ins)
            n = sum(x != y for x, y in zip(expected, b[col].to_pylist()))
            if n:
                out.append(Issue(str(path), 0, f"{table}.{col}: {n} of {a.num_rows} rows read "
                                               f"other than the original's"))
    return out


class _StandIns:
    """Original values that got a stand-in (``Redactor.idents``), replaced in a text: each
    value, and its repr as an issue quotes it (whole, or cut at 40 characters), found by one
    regular expression each (longest first), not by a scan per value."""

    def __init__(self, idents: dict[str, str]) -> None:
        self.idents = idents
        self.shown: dict[str, str] = {}
        for value, standin in idents.items():
            shown = repr(value)
            self.shown[shown] = repr(standin)
            if len(shown) > 40:
                self.shown.setdefault(shown[:37] + "...", repr(standin))
        self.pattern = _any_of(idents)
        self.shown_pattern = _any_of(self.shown)

    def text(self, text: str) -> str:
        """``text`` (a column value or an issue a parser wrote: Inspect's run agent ``sample
        <id> epoch <n>``, a quoted call id) with every original value that has a stand-in
        replaced by it, as the copy's parser writes it."""
        if self.pattern is None or self.shown_pattern is None:
            return text
        text = self.shown_pattern.sub(lambda m: self.shown[m.group(0)], text)
        return self.pattern.sub(lambda m: self.idents[m.group(0)], text)


def _any_of(texts: dict[str, str]) -> re.Pattern[str] | None:
    """A pattern matching any of ``texts``' keys, the longest first (None: no key)."""
    alternatives = sorted(texts, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, alternatives))) if alternatives else None


def _expected(col: str, values: list[Any], redactor: Redactor,
              stand_ins: _StandIns) -> list[Any]:
    """The original's column as the redacted copy should read it (paths as their hashes, ids
    and timestamps that could not be kept as their stand-ins, timestamps shifted, the moments
    inside kept ids too)."""
    if col == "path":
        return [redactor.path_hash(v) if v else v for v in values]
    if stand_ins.pattern is not None:
        values = [stand_ins.text(v) if isinstance(v, str) else v for v in values]
    if col == "ts" and redactor.shift_days:
        return [redactor.shift(v) if isinstance(v, str) else v for v in values]
    if redactor.shift_days:  # the moments inside ids kept as written moved with the dates
        return [redactor.kept_id(v) if isinstance(v, str) else v for v in values]
    return values
