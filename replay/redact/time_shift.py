"""``--shift-days``: which timestamps of a log move and how (one definition; used by
``replay.redact.leaves`` when it writes a copy and by ``replay.redact.readback`` through it).

A moment is an ISO date at the start of a string under ``TIME_KEYS``, or an epoch number (in
seconds, or milliseconds) under ``EPOCH_KEYS`` or inside a ``time`` object (OpenCode).  Not
moved: a date inside a model name.  A time inside an id kept as written — a UUIDv7's 48-bit
milliseconds, a Gemini CLI call id's ``run_shell_command-<ms>-0`` — moves with the dates
(``shift_ids``): the same for every occurrence, so calls and results still pair, and the id no
longer tells the moment the dates were moved to hide.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from replay.errors import ReplayError

TIME_KEYS = frozenset({"timestamp", "ts", "created_at", "updated_at", "started_at",
                       "completed_at"})
"""Keys whose strings are moments (Codex's turn events write ``started_at`` / ``completed_at``
as ISO strings): one that is a moment (``MOMENT``) is kept (moved by ``--shift-days``); one of another
shape gets a stand-in (``replay.redact.leaves``)."""
EPOCH_KEYS = TIME_KEYS | {"created", "resets_at"}
"""Keys whose numbers are epoch times (OpenAI's ``created``, Codex's ``completed_at`` and rate
limits' ``resets_at``): shifted (``shift_epoch``); their strings are text unless ``TIME_KEYS``."""
CLOCK_KEY = "time"
"""An object of moments (OpenCode's ``time: {created, completed, start, end, compacted}``): its
numbers are epoch times, shifted like ``TIME_KEYS``' numbers (``shift_epoch``)."""
_EPOCH_S_MIN, _EPOCH_MS_MIN = 1e8, 1e11
"""A number under a time key is an epoch time from 1e8 (1973 in seconds) on, in milliseconds
from 1e11 (1973 in milliseconds; year 5138 in seconds); a smaller one (a duration, an offset)
is not a moment and is kept."""
DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)?"
                    r"(?:Z|[+-]\d{2}(?::?\d{2})?)?")
"""A moment as a whole string (``fullmatch``): an ISO date, then at most a time of day and an
offset.  Only such a string under ``TIME_KEYS`` is kept (moved by ``--shift-days``): a text that
merely begins with a date (``2026-08-03 call with Alice``) is the user's, never kept."""


class ShiftOutOfRange(ReplayError):
    """``--shift-days`` moves a timestamp of the file outside the years a date can have."""


MAX_SHIFT_DAYS = (date.max - date.min).days
"""A larger ``--shift-days`` moves every date out of range (a usage error)."""


def shift_date(value: str, shift_days: int) -> str:
    """A timestamp moved by ``shift_days`` (its time of day and format kept); a value that
    is not a date is returned as it is.

    Raises:
        ShiftOutOfRange: the moved date is not in the years 1-9999.
    """
    m = DATE.match(value) if shift_days else None
    if m is None:
        return value
    try:
        day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:  # not a date (a month 13): not a timestamp
        return value
    try:
        return (day + timedelta(days=shift_days)).isoformat() + value[10:]
    except OverflowError:
        raise ShiftOutOfRange(f"--shift-days {shift_days} moves {value[:10]} outside the "
                              "years 1-9999") from None


def shift_epoch(value: float, shift_days: int) -> float:
    """An epoch time (seconds, or milliseconds from ``_EPOCH_MS_MIN``) moved by
    ``shift_days``; a smaller number (not a moment) is returned as it is.

    Raises:
        ShiftOutOfRange: the moved moment is not in the years 1-9999.
    """
    if not shift_days or abs(value) < _EPOCH_S_MIN:
        return value
    unit = 1000 if abs(value) >= _EPOCH_MS_MIN else 1
    moved = value + shift_days * 86400 * unit
    try:
        datetime.fromtimestamp(value / unit, tz=UTC)
    except (OverflowError, OSError, ValueError):  # not a moment a date can hold
        return value
    try:
        datetime.fromtimestamp(moved / unit, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise ShiftOutOfRange(f"--shift-days {shift_days} moves the epoch time "
                              f"{value} outside the years 1-9999") from None
    return moved


UUID7 = re.compile(r"\b([0-9a-fA-F]{8})-([0-9a-fA-F]{4})(-7[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}"
                   r"-[0-9a-fA-F]{12})\b")
"""A UUIDv7: its first 48 bits are the Unix time in milliseconds."""
ID_EPOCH_MS = re.compile(r"(?<=-)1\d{12}(?=-|$)")
"""Milliseconds since the epoch between dashes inside an id (2001-2286: Gemini CLI's
``<tool>-<ms>-<n>`` call ids)."""
_DAY_MS = 86_400_000


def shift_ids(value: str, shift_days: int) -> str:
    """``value`` (an id kept as written) with the moments inside it moved by ``shift_days``:
    each UUIDv7's milliseconds and each ``ID_EPOCH_MS``; equal values stay equal, distinct
    ones distinct.

    Raises:
        ShiftOutOfRange: a moved UUIDv7 time is before 1970 or past its 48 bits.
    """
    if not shift_days or "-" not in value:
        return value
    return ID_EPOCH_MS.sub(lambda m: _moved_ms(int(m.group(0)), shift_days),
                           UUID7.sub(lambda m: _moved_uuid7(m, shift_days), value))


def _moved_uuid7(m: re.Match[str], shift_days: int) -> str:
    ms = int(m.group(1) + m.group(2), 16) + shift_days * _DAY_MS
    if not 0 <= ms < 1 << 48:
        raise ShiftOutOfRange(f"--shift-days {shift_days} moves the time of the UUIDv7 "
                              f"{m.group(0)} outside what it can hold")
    digits = f"{ms:012x}"
    if m.group(1).isupper() or m.group(2).isupper():
        digits = digits.upper()
    return f"{digits[:8]}-{digits[8:]}{m.group(3)}"


def _moved_ms(ms: int, shift_days: int) -> str:
    return str(int(shift_epoch(ms, shift_days)))
