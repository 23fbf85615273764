"""The trace's groups of action kinds as sets, for the fast functions that pick actions out in
C: ``map(SET.__contains__, kinds)`` calls a set's method (a hash lookup) where a tuple's
``__contains__`` goes through a slot wrapper, some three times slower a value; the same answers
(a kind is a string: in the set exactly when equal to one of the tuple's).  The groups themselves
are ``replay.engine.trace``'s."""

from __future__ import annotations

from replay.engine.trace import SUMMARY_KINDS, TRIM_KINDS

SUMMARY_KIND_SET: frozenset[str] = frozenset(SUMMARY_KINDS)
"""``SUMMARY_KINDS`` as a set."""
TRIM_KIND_SET: frozenset[str] = frozenset(TRIM_KINDS)
"""``TRIM_KINDS`` as a set."""
