"""A recorded timestamp as the engine reads it (``replay.ingest.timestamps.timestamp_seconds``):
the same on every machine.  Before, one without an offset (OpenHands writes them) was read in
the machine's time zone, so an idle gap across a DST change differed by an hour between a
machine in UTC and one in New York: the engine read its environment."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from replay.ingest.timestamps import timestamp_seconds


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
def test_a_naive_timestamp_is_utc_whatever_the_machine_s_zone() -> None:
    before, after = "2026-03-08T01:30:00", "2026-03-08T03:30:00"  # New York springs forward
    gap = timestamp_seconds(after)
    start = timestamp_seconds(before)
    assert gap is not None and start is not None
    assert gap - start == 2 * 3600  # two hours of UTC (one hour of New York wall clock)
    assert timestamp_seconds("2026-03-08T01:30:00Z") == start
    assert timestamp_seconds("2026-03-08T01:30:00-05:00") == start + 5 * 3600
