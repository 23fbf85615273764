"""Codex: a token_count's usage object read as request fields (``codex_items.usage``) the way
``USAGE`` names them, each key in its order: the same fields and the same values said not to be
counts as a loop over ``USAGE`` gives, whatever each key holds."""

from __future__ import annotations

import itertools
from typing import Any

from replay.ingest.parsers.codex_items import USAGE, opt_int, usage

VALUES: tuple[Any, ...] = (None, 0, 7, -1, 2**70, True, 1.5, "12", [3], {"n": 1})
_ABSENT = object()


def _by_loop(u: dict[str, Any], bad: list[str]) -> dict[str, int | None]:
    """``USAGE`` read in a loop: a later key's count wins over an earlier one of the same field,
    a missing or null one does not."""
    out: dict[str, int | None] = {}
    for key, name in USAGE:
        value = opt_int(u, key, bad)
        if value is not None or name not in out:
            out[name] = value
    return out


def test_usage_reads_every_key_of_usage_as_a_loop_over_it_does() -> None:
    keys = [key for key, _ in USAGE]
    assert len(keys) == 6
    for i, combo in enumerate(itertools.product((_ABSENT, None, 5, "x"), repeat=len(keys))):
        u = {k: v for k, v in zip(keys, combo, strict=True) if v is not _ABSENT}
        if i % 7 == 0:  # (other values in the same places)
            u = {k: VALUES[(i + n) % len(VALUES)] for n, k in enumerate(u)}
        got_bad: list[str] = []
        want_bad: list[str] = []
        got, want = usage(u, got_bad), _by_loop(u, want_bad)
        assert got == want and list(got) == list(want), u
        assert got_bad == want_bad, u


def test_a_cache_write_under_either_name_is_read() -> None:
    assert usage({"cache_creation_input_tokens": 3}, [])["cache_write_tokens"] == 3
    assert usage({"cache_write_input_tokens": 4}, [])["cache_write_tokens"] == 4
    assert usage({"cache_creation_input_tokens": 3, "cache_write_input_tokens": 4},
                 [])["cache_write_tokens"] == 4
    assert usage({"cache_creation_input_tokens": 3, "cache_write_input_tokens": None},
                 [])["cache_write_tokens"] == 3
