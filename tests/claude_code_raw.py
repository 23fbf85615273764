"""Independent readings of a raw Claude Code log (plain JSON walking, not the parser), for the
tests that check figures against what the file records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def first_run_id(sha256: str, source: str) -> str:
    """The first run's id of the file with these bytes stored as ``source`` (content and
    path, issue 23 item 6), computed here apart from the parser."""
    return f"{sha256[:16]}-{hashlib.sha1(source.encode()).hexdigest()[:8]}-0"


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


USAGE_SAMPLE = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""The 152-request Claude Code sample (its recorded input is 1.5x and more the o200k count)."""
_CACHE_FIELDS = ("cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation")


def rewritten_usage(samples: Path, out: Path, *, factor: float = 1.0,
                    uncached: bool = False) -> Path:
    """The sample with each recorded usage changed: every input field × ``factor`` (rounded),
    or (``uncached``) only ``input_tokens`` kept, as a log recording the uncached input alone."""
    lines = []
    for line in (samples / "claude-code" / USAGE_SAMPLE).read_text().splitlines():
        rec = json.loads(line)
        usage = rec.get("message", {}).get("usage") if isinstance(rec.get("message"), dict) \
            else None
        if isinstance(usage, dict):
            for key in _CACHE_FIELDS if uncached else ():
                usage.pop(key, None)
            for key in ("input_tokens", *_CACHE_FIELDS[:2]):
                if isinstance(usage.get(key), int):
                    usage[key] = round(usage[key] * factor)
        lines.append(json.dumps(rec))
    out.mkdir(parents=True, exist_ok=True)
    path = out / USAGE_SAMPLE
    path.write_text("\n".join(lines) + "\n")
    return path
