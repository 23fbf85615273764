"""The names ingest's options and the store's columns use, importable without pyarrow (the CLI
shows them in ``--help``, which loads no parser): the log formats and the tokenizers."""

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
