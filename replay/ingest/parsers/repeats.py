"""Records written twice: a record under an identity (a tool call's id, an item's id) that equals
an earlier record of the same identity is a repeat; another record under the same identity is
not (``Repeats.earlier``).

Not here: what a parser does with a repeat (it skips it and says so: ``chat``,
``codex_file.unique``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


class Repeats:
    """The records met so far under each identity.  A record of an identity not met before
    (most records) costs one dict lookup; once an identity repeats, its records are told apart
    by a digest of their JSON (keys sorted), one lookup each, never compared with each earlier
    record of the identity in turn (a log that gives every turn's call the same id, ``call_0``,
    cost as many comparisons as turns a record: 10,000 turns took 22 s)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[Any, tuple[int, Any] | dict[bytes, int]] = {}

    def earlier(self, ident: Any, value: Any, line: int) -> int | None:
        """The line of an earlier record of identity ``ident`` that is the same JSON value as
        ``value`` (None: none; ``value`` is then remembered, at ``line``)."""
        got = self._seen.get(ident)
        if got is None:
            self._seen[ident] = (line, value)
            return None
        if got.__class__ is tuple:
            first_line, first = got
            got = self._seen[ident] = {_digest(first): first_line}
        assert isinstance(got, dict)
        key = _digest(value)
        found = got.get(key)
        if found is None:
            got[key] = line
        return found


def _digest(value: Any) -> bytes:
    """A digest of ``value`` as JSON with its keys sorted (equal for two equal JSON values,
    whatever order their keys were written in)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=repr)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
