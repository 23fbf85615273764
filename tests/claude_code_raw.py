"""Independent readings of a raw Claude Code log (plain JSON walking, not the parser), for the
tests that check figures against what the file records."""

from __future__ import annotations

import json
from pathlib import Path


def recorded_prompts(path: Path) -> tuple[list[int], int | None]:
    """Per request (assistant message id, main chain, in order): the recorded prompt, input +
    cache read + cache write; and the index of the first request after the first
    compact_boundary (None: the log has none)."""
    prompts: dict[str, int] = {}
    after = None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("isSidechain"):
            continue
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            after = len(prompts) if after is None else after
        if rec.get("type") == "assistant" and rec["message"]["id"] not in prompts:
            u = rec["message"]["usage"]
            prompts[rec["message"]["id"]] = (u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                                             + u.get("cache_creation_input_tokens", 0))
    return list(prompts.values()), after
