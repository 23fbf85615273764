"""An identity test (``is``) of the compiled ingest parts that compares values compiled code
makes, strings, holds compiled as pure (run under either build; ``CTXREPLAY_PURE=1`` for the
pure one).  Compiled code passes a ``str``, a list or a class's instance on as it is; it boxes
an int, a float or a typed tuple anew at each use (``codex_file.unique`` once compared such a
tuple and dropped every item).  The other ``is`` tests of the compiled modules compare
``UNSET``, ``AGAIN``, types, pyarrow types, lists, dicts or instances; the ingest's as a whole
is compared over damaged logs by ``test_compiled_hostile.py``."""

from __future__ import annotations

from replay.ingest import ops


def test_a_command_without_quotes_has_no_words_apart_from_its_split() -> None:
    """``_written_words``: ``masked is text`` (the line unmasked: no quote, no escape)."""
    assert ops._written_words("cat a b", 2) is None
    assert ops._written_words('cat "a b" c', 2) == ['"a b"', "c"]

