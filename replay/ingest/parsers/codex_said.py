"""The message items a Codex rollout has said, for finding the ones a compaction's replacement
history repeats (``Said``).

Not here: the walk that adds them and looks them up (``replay.ingest.parsers.codex_walk_items``,
``codex_walk_compaction``).
"""

from __future__ import annotations

Key = tuple[str, str]
"""A message item's role and joined text."""


class Said:
    """(role, text) of each message item and its message, in order; made a dict only when a
    compaction looks one up (``index``), so a rollout with no compaction hashes no message's
    text."""

    __slots__ = ("_added", "_index", "_read")

    def __init__(self) -> None:
        self._added: list[tuple[Key, int]] = []
        self._index: dict[Key, int] = {}
        self._read = 0  # (the items of ``_added`` in ``_index``)

    def add(self, key: Key, msg: int) -> None:
        """Message ``msg`` says ``key``."""
        self._added.append((key, msg))

    def index(self) -> dict[Key, int]:
        """(role, text) -> the last message that said it, every item added so far in it."""
        if self._read < len(self._added):  # the messages since the last look-up
            self._index.update(self._added[self._read:])
            self._read = len(self._added)
        return self._index
