"""What a recorded count is: the one reading of a token (or other) count a log writes.

A count is a JSON whole number (``12``, or ``12.0`` as some writers put it) from 0 to
``MAX_COUNT``, far above any prompt and far below the schema's 64-bit integer columns, so that
every sum made of counts (a prompt's parts, a request's input and output, a run's requests) is
stored and computed as the number it is.  ``json_int`` reads the number
(booleans, strings, NaN and fractions are not counts); ``not_a_count`` says why a value present
in a log is not a count (None when it is one), for the issue that keeps it unknown; ``shown``
quotes a value in that issue; ``count_or_issue`` reads a value as a count or records that
issue, in one wording for every count of a run.

Not here: which counts a run records (``replay.ingest.parsers.builder.RunBuilder``).
"""

from __future__ import annotations

from typing import Any

from replay.ingest.names import MAX_COUNT
from replay.ingest.parsers.source import Issue

INT64_MAX = 2**63 - 1
"""The largest value of the schema's integer columns."""
def json_int(value: Any) -> int | None:
    """A JSON number that is a whole number, else None (sign and range: ``not_a_count``)."""
    if type(value) is int:  # what decoded JSON holds nearly always: one test, no call more
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def not_a_count(value: Any) -> str | None:
    """Why ``value`` (present in a log) is not a count, as an issue says it; None when it is."""
    if type(value) is int and 0 <= value <= MAX_COUNT:  # (the common case, without a call)
        return None
    n = json_int(value)
    if n is None:
        return type(value).__name__
    return None if 0 <= n <= MAX_COUNT else "negative or out of range"


def shown(value: Any) -> str:
    """A recorded value as an issue quotes it: its repr, at most 40 characters (a long whole
    number, such as the int of a float like 1e300, as its head and its number of digits)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = repr(value)
    if isinstance(value, int) and len(text) > 24:
        return f"{text[:12]}… ({len(text.lstrip('-'))} digits)"
    return text if len(text) <= 40 else text[:37] + "..."


def count_or_issue(value: Any, where: str, issues: list[Issue], path: str,
                   line: int) -> int | None:
    """``value`` read as a count: None as it is (not recorded); a value that is no count (a
    string, a boolean, NaN, a fraction, an object, a negative or out-of-range number) one issue
    naming the log's field (``where``, e.g. ``request 3: input_tokens``) and the value, and
    None (unknown): never 0, never dropped without a word."""
    if value is None or value.__class__ is int and 0 <= value <= MAX_COUNT:
        return value  # (nearly every value: no call)
    why = not_a_count(value)
    if why is None:
        return json_int(value)
    issues.append(Issue(path, line, f"{where} {shown(value)} is not a token count ({why}; kept "
                                    "as unknown)"))
    return None
