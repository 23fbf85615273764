"""The names ingest's options and the store's columns use, importable without pyarrow (the CLI
shows them in ``--help``, which loads no parser): the log formats, the tokenizers; and the
largest count a row holds (``MAX_COUNT``), the parsers' bound and the stored rows' check."""

from __future__ import annotations

FORMATS: tuple[str, ...] = ("claude_code", "codex", "swe_agent", "mini_swe_agent", "atif",
                            "gemini_cli", "inspect_ai", "opencode", "openhands_v1",
                            "openhands", "chat")
"""Every parser's ``NAME``, in the order sniffing tries them (more specific formats first):
``replay.ingest.parsers.PARSERS`` is built in this order and refuses to load otherwise."""

TOKEN_COLUMN: dict[str, str] = {"o200k_base": "tokens_o200k", "cl100k_base": "tokens_cl100k"}
"""Tokenizer → its column in the messages table (the store has a column for these only)."""

DEFAULT_TOKENIZERS: tuple[str, ...] = ("o200k_base",)
"""What ``replay ingest`` counts unless told (``--tokenizers``)."""

MAX_COUNT = 2**40
"""The largest count a log may record (1,099,511,627,776: ~1,000x the largest context window of
any model).  A larger one is no measurement; up to ``INT64_MAX`` it was taken, and the sums of
such counts passed the 64-bit columns: a run with an input and an output of 2**62 tokens ended
every command that replays it in a traceback (OverflowError) or a cost of 4e11 USD.  The
parsers keep no larger count (``replay.ingest.parsers.counts``), and a stored row holding one
is a damaged dataset (``replay.ingest.run_checks``)."""
