"""``redact --shift-days`` over every fixture format: the copy reads back with every timestamp
of the original moved by exactly the days asked, and no moment of the original is left
unshifted in it (an ISO date anywhere, an epoch number: OpenCode's milliseconds, OpenAI's
``created``, Codex's ``resets_at``).  The expectation is computed here from the original's
JSON and columns with ``datetime``, not with the redactor's own shift."""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.redact import redact
from replay.redact.payload import SUPPORTED
from replay.redact.time_shift import ShiftOutOfRange, shift_ids
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


_NOT_REDACTED = ("openhands_v1",)
"""Fixture folders of a format redact refuses, saying so (``test_a_format_redact_lacks_is_said``)."""


@pytest.mark.parametrize("folder", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()
                                          and p.name not in _NOT_REDACTED))
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


@pytest.mark.parametrize("folder", _NOT_REDACTED)
def test_a_format_redact_lacks_is_said(folder: str, tmp_path: Path) -> None:
    report = redact([FIXTURES / folder], tmp_path / "out", shift_days=DAYS, salt="t")
    assert report.files and not any(f.written for f in report.files)
    for f in report.files:
        want = (f"not redacted: {folder} logs are not supported by redact yet (supported: "
                f"{', '.join(SUPPORTED)})")
        assert [i.reason for i in f.issues] == [want]


def _times_in_ids(path: Path) -> set[int]:
    """The milliseconds inside the ids written in ``path`` (its text whole, names included):
    each UUIDv7's (``uuid.UUID(...).version == 7``, its first 48 bits) and each ``-<13
    digits>-`` of a call id (Gemini CLI's ``run_shell_command-<ms>-0``)."""
    text = path.name + "\n" + "\n".join(json.dumps(d) for d in _documents(path))
    out = set()
    for m in re.finditer(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                         r"[0-9a-fA-F]{12}", text):
        u = uuid.UUID(m.group(0))
        if u.version == 7:
            out.add(int(u.hex[:12], 16))
    out.update(int(m) for m in re.findall(r"[a-z_]-(1\d{12})(?=-|\")", text))
    return out


@pytest.mark.parametrize("where", [FIXTURES / "gemini_cli", REPO.parent / "shared" /
                                   "logs-sample" / "codex"], ids=["gemini_cli", "codex"])
def test_a_time_inside_an_id_moves_with_the_dates(where: Path, tmp_path: Path) -> None:
    """A UUIDv7 (Codex session ids, in the records and the file names) and a Gemini CLI call
    id carry the moment they were made: with --shift-days the copy holds them moved by the
    days asked, never as recorded (calls and results still pair: every file reads back)."""
    report = redact([where], tmp_path / "out", shift_days=DAYS, salt="t")
    checked = 0
    for f in report.files:
        assert f.written and not f.issues, (f.source, [i.reason for i in f.issues])
        before = _times_in_ids(where / f.source)
        after = _times_in_ids(tmp_path / "out" / f.archived_as)
        assert after == {ms + DAYS * 86_400_000 for ms in before}, f.source
        checked += len(before)
    assert checked >= 4


def test_shift_ids_keeps_ids_distinct_and_refuses_a_time_before_1970() -> None:
    a, b = "019a93b9-f380-7600-98ff-940e6b99603c", "019A93B9-F381-7600-98FF-940E6B99603C"
    moved = {shift_ids(v, 1) for v in (a, b, a)}
    assert len(moved) == 2 and shift_ids(b, 1).isupper()
    assert shift_ids(a, 0) == a and shift_ids("cf4def41-21e0-4b91-adb4-5397c1492084", 9) == (
        "cf4def41-21e0-4b91-adb4-5397c1492084")  # a UUIDv4 holds no time
    with pytest.raises(ShiftOutOfRange):
        shift_ids(a, -30_000)
