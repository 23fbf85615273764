"""Codex's own byte arithmetic: what it estimates an encrypted item's content at, and bytes →
tokens, as openai/codex computes them (``codex-rs/core/src/context_manager/history.rs`` @
``a20bf059710752cb1606ac1635ab8af68b214afe``; read with the rest of its auto-compact arithmetic
in ``replay.policy.codex_harness``).

A leaf of its own (the standard library only): the Codex parser sizes an encrypted summary with
it (``replay.ingest.parsers.codex_compaction``) and the engine Codex's hidden reasoning
(``replay.engine.hidden_reasoning``); from ``replay.policy`` the parser, and every ingest
process and worker with it, would load the policy model and its YAML (~80 ms of an ingest's
imports, for two lines of arithmetic).
"""

from __future__ import annotations

from typing import Final

BYTES_PER_TOKEN: Final = 4
"""``APPROX_BYTES_PER_TOKEN`` (``approx_tokens_from_byte_count``: ceil(bytes / 4))."""
REASONING_OVERHEAD_BYTES: Final = 650
"""``estimate_reasoning_length``: encoded × 3 / 4 − 650 (history.rs)."""


def decrypted_bytes(encoded_len: int) -> int:
    """Codex's estimate of an encrypted item's content (``estimate_reasoning_length``)."""
    return max(0, encoded_len * 3 // 4 - REASONING_OVERHEAD_BYTES)


def approx_tokens(n_bytes: int) -> int:
    """Codex's bytes → tokens (``approx_tokens_from_byte_count``: ceil(bytes / 4))."""
    return (n_bytes + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN
