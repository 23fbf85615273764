"""A Claude Code record's place in the session's tree: its line, uuid, parent and rarer links.

``Node`` is one record's place (a ``claude_code_records.Rec`` is one, with its content); ``Tie``
holds what most records lack — a compaction boundary's links, and whether the record is a
sidechain's or has no ``parentUuid`` key — shared by every record with the same (``tie``), so a
record of a big transcript is five slots, not ten (#24 item 3).

Not here: walking the tree (``replay.ingest.parsers.claude_code_path``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tie:
    """A record's rarer links and flags, one object for all of them: a record with none shares
    ``NO_TIE``, a sidechain record ``SIDE_TIE`` (``tie``), not slots of its own (a transcript
    has hundreds of thousands of records)."""

    logical: str | None = None
    """``logicalParentUuid`` (compaction boundaries)."""
    preserved: tuple[str, ...] = ()
    """Records a partial compaction re-attached after its summary, oldest first."""
    segment: tuple[str, str, str] | None = None
    """A boundary's ``preservedSegment``: (head, anchor, tail) uuids."""
    sidechain: bool = False
    """``isSidechain: true``."""
    unlinked: bool = False
    """The record has no ``parentUuid`` key at all."""


NO_TIE = Tie()
"""The links of a record that has none of them."""
_PLAIN = {(side, unlinked): Tie(sidechain=side, unlinked=unlinked)
          for side in (False, True) for unlinked in (False, True)}
_PLAIN[False, False] = NO_TIE
SIDE_TIE = _PLAIN[True, False]
"""The links of a sidechain record that has no other."""


def tie(logical: str | None, preserved: tuple[str, ...], segment: tuple[str, str, str] | None,
        *, sidechain: bool, unlinked: bool) -> Tie:
    """The ``Tie`` of these links: a shared one when there is no link (most records)."""
    if logical is None and not preserved and segment is None:
        return _PLAIN[sidechain, unlinked]
    return Tie(logical, preserved, segment, sidechain, unlinked)


MESSAGE_ROLES = frozenset(("user", "assistant"))
"""The roles of a message record (``Node.message``)."""


@dataclass(slots=True)
class Node:
    """One record's place in the tree."""

    line: int
    uuid: str
    parent: str | None
    """``parentUuid`` (None for null or absent)."""
    ts: str = ""
    tie: Tie = NO_TIE
    """Its ``logicalParentUuid``, preserved records, segment and flags (``Tie``)."""
    role = ""  # (no field: a bare Node has no role; a ``claude_code_records.Rec`` has its
    # record's, a field of its own)

    @property
    def message(self) -> bool:
        """A user/assistant record (a candidate leaf); a bare ``Node`` is none."""
        return self.role in MESSAGE_ROLES

    @property
    def sidechain(self) -> bool:
        """``isSidechain: true``."""
        return self.tie.sidechain

    @property
    def has_parent_key(self) -> bool:
        """False when the record has no ``parentUuid`` key at all (an unlinked record)."""
        return not self.tie.unlinked

    @property
    def logical(self) -> str | None:
        """``logicalParentUuid`` (compaction boundaries)."""
        return self.tie.logical

    @property
    def preserved(self) -> tuple[str, ...]:
        """Records a partial compaction re-attached after its summary, oldest first."""
        return self.tie.preserved

    @property
    def segment(self) -> tuple[str, str, str] | None:
        """A boundary's ``preservedSegment``: (head, anchor, tail) uuids."""
        return self.tie.segment
