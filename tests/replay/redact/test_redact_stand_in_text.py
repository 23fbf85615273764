"""``replay.redact.readback``: the original's texts as the copy should read them, every value
that got a stand-in replaced by it: as written, and quoted as its repr in an issue, whole or
cut at 40 characters (``'…'...``), as parsers quote values."""

from __future__ import annotations

from replay.redact.readback import _StandIns

_LONG = "a long call id with spaces that runs past forty characters"


def test_values_and_their_quoted_forms_are_replaced() -> None:
    s = _StandIns({"call 1": "x1", _LONG: "x2", "call 12": "x3"})
    assert s.text("tool result for call 1 and call 12") == "tool result for x1 and x3"
    assert s.text(f"no call for {'call 12'!r}") == "no call for 'x3'"
    assert s.text(f"no call for {repr(_LONG)[:37]}...") == "no call for 'x2'"
    assert s.text(f"no call for {_LONG!r}") == "no call for 'x2'"
    assert s.text("nothing here") == "nothing here"
    assert _StandIns({}).text("call 1") == "call 1"
