"""A frozen dataclass's hash, computed once per object: for the policy values the engine keys its
per-run memos by (``PreparedRun.counts``, a tier's placeholders: ``TokenCounter``,
``Placeholder``, ``Cache``).

The hash a frozen dataclass generates rebuilds the tuple of its fields and hashes it (nested
dataclasses again) at every dict lookup: about 2,000 interpreted instructions, a dozen times a
replay.  ``HashedOnce`` keeps the first result in a slot of its own, outside the fields: equality,
``dataclasses.fields``/``replace``/``asdict`` and the policy's YAML and digest do not see it, and
pickling (which a frozen slotted dataclass does through its fields) leaves it behind, so a copy
in another process, whose string hashes differ, computes its own.

Not here: the dataclasses themselves (``replay.policy.model``, ``replay.policy.providers``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class HashedOnce:
    """Base of a frozen, slotted dataclass decorated with ``hashed_once``: the slot its hash is
    kept in."""

    __slots__ = ("_hash",)


def hashed_once(cls: type[T]) -> type[T]:
    """``cls`` (a frozen dataclass deriving from ``HashedOnce``, decorated after ``@dataclass``)
    with its generated hash computed at the first call and kept."""
    params = getattr(cls, "__dataclass_params__", None)
    if not issubclass(cls, HashedOnce) or params is None or not params.frozen:
        raise TypeError(f"hashed_once: {cls.__name__} is not a frozen HashedOnce dataclass")
    fields_hash: Callable[[Any], int] = cls.__hash__

    def __hash__(self: Any) -> int:
        try:
            got: int = self._hash
        except AttributeError:
            got = fields_hash(self)
            object.__setattr__(self, "_hash", got)  # frozen: past its __setattr__
        return got

    __hash__.__doc__ = fields_hash.__doc__
    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls
