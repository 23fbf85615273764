"""The real TraceLab session segments (Claude Code 2.1.157, Codex 0.114; CC BY 4.0, see the
fixtures' SOURCES.md) read with the counts a plain walk of their JSON lines gives."""

from __future__ import annotations

import json

from replay.ingest.parse_file import parse_file
from tests.conftest import REPO

CLAUDE = REPO / "tests" / "fixtures" / "claude_code" / "tracelab-claude-session-01-2.1.157.jsonl"
CODEX = (REPO / "tests" / "fixtures" / "codex"
         / "rollout-2026-03-21T10-05-38-01a7c9e4-6d12-7b3a-9f42-8c6d5e1a0b73.jsonl")


def _lines(path):  # type: ignore[no-untyped-def]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_claude_code_2_1_157_segment() -> None:
    records = _lines(CLAUDE)
    calls = {r["message"]["id"] for r in records if r.get("type") == "assistant"}
    uses = [b for r in records if r.get("type") == "assistant"
            for b in r["message"]["content"] if b.get("type") == "tool_use"]
    usage = {r["message"]["id"]: r["message"]["usage"] for r in records
             if r.get("type") == "assistant"}
    tables = parse_file(CLAUDE, tokenizers=("o200k_base",)).tables
    assert tables is not None
    (run,) = tables.runs.to_pylist()
    assert (run["n_requests"], run["n_tool_calls"]) == (len(calls), len(uses))
    assert run["harness"] == "claude-code 2.1.157" and run["model"] == "claude-opus-4-8"
    assert run["recorded_input_tokens"] == sum(
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        for u in usage.values())


def test_codex_0_114_segment() -> None:
    records = _lines(CODEX)
    calls = [r for r in records if r["type"] == "response_item"
             and r["payload"].get("type") == "function_call"]
    counts = {json.dumps(r["payload"]["info"]["total_token_usage"]) for r in records
              if r["type"] == "event_msg" and r["payload"].get("type") == "token_count"
              and r["payload"].get("info")}
    tables = parse_file(CODEX, tokenizers=("o200k_base",)).tables
    assert tables is not None
    (run,) = tables.runs.to_pylist()
    assert (run["n_requests"], run["n_tool_calls"]) == (len(counts), len(calls))
    assert run["harness"].startswith("codex 0.114.0")
