"""``redact --shift-days`` over every fixture format: the copy reads back with every timestamp
of the original moved by exactly the days asked, and no moment of the original is left
unshifted in it (an ISO date anywhere, an epoch number: OpenCode's milliseconds, OpenAI's
``created``, Codex's ``resets_at``).  The expectation is computed here from the original's
JSON and columns with ``datetime``, not with the redactor's own shift."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.redact import redact
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
DAYS = 3
_ISO = re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d-[0-3]\d(?!\d)")
_NOT_MOMENTS = frozenset({"model"})
"""Keys whose dates are part of a name (``gpt-4o-2024-08-06``), not a moment."""


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    else:
        yield key, value


def _documents(path: Path) -> list[Any]:
    if zipfile.is_zipfile(path):  # an Inspect .eval: each member is one document
        with zipfile.ZipFile(path) as z:
            return [json.loads(z.read(name)) for name in z.namelist()]
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    try:
        return [json.loads(data)]
    except ValueError:
        return [json.loads(line) for line in data.splitlines() if line.strip()]


def _moments(path: Path) -> tuple[set[str], set[float]]:
    """The dates written in ``path``'s strings and its numbers that can be epoch times."""
    dates: set[str] = set()
    numbers: set[float] = set()
    for doc in _documents(path):
        for key, v in _leaves(doc):
            if isinstance(v, str) and key not in _NOT_MOMENTS:
                dates.update(_ISO.findall(v))
            elif isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1e8:
                numbers.add(v)
    return dates, numbers


def _shifted(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts) + timedelta(days=DAYS)
    except ValueError:
        return None


@pytest.mark.parametrize("folder", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_shift_days_moves_every_timestamp_of_every_format(folder: str, tmp_path: Path) -> None:
    report = redact([FIXTURES / folder], tmp_path / "out", shift_days=DAYS, salt="t")
    written = [f for f in report.files if f.written]
    assert written
    for f in written:
        original = FIXTURES / folder / f.source
        copy = tmp_path / "out" / f.archived_as
        a, b = parse_file(original).tables, parse_file(copy).tables
        assert a is not None and b is not None
        stand_ins: dict[str, str] = {}
        for table in ("messages", "requests"):
            want = [_shifted(t) for t in getattr(a, table)["ts"].to_pylist()]
            got = getattr(b, table)["ts"].to_pylist()
            for t, w, g in zip(getattr(a, table)["ts"].to_pylist(), want, got, strict=True):
                if w is not None:
                    assert datetime.fromisoformat(g) == w, (f.source, table)
                elif t:  # a recorded "time" that is text (the catalog's "[trimmed for
                    # fixture]"): one stand-in token for each such text, never the text
                    assert g != t and g.isalnum() and stand_ins.setdefault(t, g) == g
        assert len(set(stand_ins.values())) == len(stand_ins)
        assert not f.issues, (f.source, [i.reason for i in f.issues])
        dates, numbers = _moments(original)
        moved_dates = {(datetime.fromisoformat(d) + timedelta(days=DAYS)).date().isoformat()
                       for d in dates}
        moved_numbers = {n + DAYS * 86400 * unit for n in numbers for unit in (1, 1000)}
        left_dates, left_numbers = _moments(copy)
        assert left_dates <= moved_dates, (f.source, sorted(left_dates - moved_dates))
        assert left_numbers <= moved_numbers, (f.source, sorted(left_numbers - moved_numbers))
