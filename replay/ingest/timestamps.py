"""A recorded timestamp as an instant: the one reading of a request's time, for its idle gap.

``timestamp_seconds`` reads an ISO-8601 timestamp as seconds since the epoch (one without an
offset as UTC), and only one inside ``PLAUSIBLE_YEARS``: a timestamp before 2000 or from 2100
on is a broken or crafted clock (a device that lost its time reads 1970 or 2000-01-01; a
writer's bug or a hostile file 5026), not when a coding agent called a model, so it is no
instant the replay measures an idle gap from (a gap of thousands of years was an ordinary
idle gap: the prefix cache expired on it and an ``idle_minutes`` trigger fired).  Ingest
says each run holding such timestamps (``implausible``, ``RunBuilder.build``); the engine
reads none of them (``replay.engine.prepared``), as it reads no unreadable one.

Why no bound on the gap between two timestamps inside the window: a gap's only use is whether
it passed the cache's time to live (at most an hour) or an ``idle_minutes`` trigger, which any
gap past them does whatever its length, and a session resumed after months (``claude
--resume``, a Codex rollout reopened) writes such a gap truly: no length tells a clock error
from a pause (the longest gap in the real samples, fixtures and logs/ is 45 minutes).

Not here: what a missing or unreadable timestamp means to the replay (``replay.engine``).
"""

from __future__ import annotations

from datetime import UTC, datetime

PLAUSIBLE_YEARS = (2000, 2100)
"""The years a recorded request may be in: from 2000-01-01T00:00:00Z (included) to
2100-01-01T00:00:00Z (excluded); every real log (2024-2026 in the samples) is well inside."""
_FROM_S = datetime(PLAUSIBLE_YEARS[0], 1, 1, tzinfo=UTC).timestamp()
_UNTIL_S = datetime(PLAUSIBLE_YEARS[1], 1, 1, tzinfo=UTC).timestamp()
WINDOW_SAID = f"outside {PLAUSIBLE_YEARS[0]}-{PLAUSIBLE_YEARS[1] - 1}"
"""How an issue or a note names a timestamp outside the window."""


def instant_seconds(ts: str) -> float | None:
    """An ISO-8601 timestamp as seconds since the epoch, whatever its year (None when missing
    or not ISO 8601).  One without an offset (OpenHands writes them) is read as UTC, never in
    the machine's time zone: the replay of a log is the same everywhere (a local reading moved
    an idle gap across a DST change)."""
    if not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def timestamp_seconds(ts: str) -> float | None:
    """A recorded timestamp as seconds (``instant_seconds``), None when missing, not ISO 8601
    or outside ``PLAUSIBLE_YEARS``: such a request never has an idle gap, and the next one's
    is measured from the request before it (``replay run``'s note counts them)."""
    seconds = instant_seconds(ts)
    return seconds if seconds is not None and _FROM_S <= seconds < _UNTIL_S else None


def implausible(ts: str) -> bool:
    """Whether ``ts`` is an ISO-8601 timestamp naming an instant outside ``PLAUSIBLE_YEARS``
    (a missing or unreadable one is not: it names no instant).  A timestamp written from year
    2001 to 2098 is inside whatever its offset, without reading it (nearly every one: its
    string sorts between ``"2001"`` and ``"2099"``; any other string there names no instant)."""
    if "2001" <= ts < "2099":
        return False
    seconds = instant_seconds(ts)
    return seconds is not None and not _FROM_S <= seconds < _UNTIL_S


def implausible_said(ts: list[str]) -> str | None:
    """The issue of a run whose requests (their timestamps ``ts``, in order) include some
    ``implausible`` ones: how many, the first's index, what the replay makes of them; None
    when none is.  The timestamp itself is not quoted: a redacted copy shifts it
    (``replay redact --shift-days``), and its read-back compares the copy's issues with the
    original's by their text."""
    hi = max(ts, default="")  # (every one from 2001 to 2098, or none timed: two C-level
    # passes, nearly every run; else each looked at)
    if hi == "" or hi < "2099" and min(ts) >= "2001":
        return None
    odd = [k for k, t in enumerate(ts) if t and not "2001" <= t < "2099" and implausible(t)]
    if not odd:
        return None
    return (f"{len(odd)} of {len(ts)} request(s) timestamped {WINDOW_SAID} (first: request "
            f"{odd[0]}): a broken or crafted clock, not when a model was called; no idle gap is "
            "measured to or from them (no cache expiry, no idle_minutes trigger)")
