"""A string under a time key is kept (or moved by ``--shift-days``) only when it is a moment as
a whole: a date, then at most a time of day and an offset.  A text that merely begins with a
date (``2026-08-03 call with Alice``) is the user's text, and none of its words survive."""

from __future__ import annotations

import json

import pytest

from replay.redact.keep_list import keeps
from replay.redact.leaves import Redactor
from replay.redact.time_shift import TIME_KEYS

_TEXT = "2026-08-03 call with Alice about the merger"


def _copy(rec: object, shift_days: int) -> str:
    return json.dumps(Redactor(salt="s", shift_days=shift_days).record(rec))


@pytest.mark.parametrize("shift_days", [0, -30])
@pytest.mark.parametrize("key", sorted(TIME_KEYS))
def test_a_text_that_begins_with_a_date_is_not_kept(key: str, shift_days: int) -> None:
    for rec in ({key: _TEXT}, {"metadata": {key: _TEXT}}):
        copy = _copy(rec, shift_days)
        assert not any(w in copy for w in ("Alice", "merger", "call with")), (rec, copy)


@pytest.mark.parametrize("value", ["2026-08-03T10:48:56.000Z", "2026-08-03T10:48:56.123456-07:00",
                                   "2026-08-03T10:48:56+00:00", "2026-08-03T10:48:56.123456",
                                   "2026-08-03 10:48:56", "2026-08-03"])
def test_a_moment_is_kept_and_moved(value: str) -> None:
    assert keeps("timestamp", value)
    assert _copy({"timestamp": value}, 0) == json.dumps({"timestamp": value})
    moved = json.loads(_copy({"timestamp": value}, 1))["timestamp"]
    assert moved == "2026-08-04" + value[10:]


def test_the_keep_list_does_not_keep_a_text_after_a_date() -> None:
    assert not keeps("timestamp", _TEXT)
