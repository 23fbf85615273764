"""Fidelity judges a Codex run by what Codex compared with its level: the last request's input
and output plus its estimate of earlier turns' encrypted reasoning (#26 item 6: the 0.104
rollout compacted at 209,950 recorded tokens and was called "configured otherwise")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.fidelity import fidelity
from replay.corpus import open_corpus
from replay.policy import Policy, load_policy, replace_path

ENCODED = 40_000


def _line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2026-09-10T10:00:00.000Z", "type": kind, "payload": payload})


def _msg(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _usage(n: int, out: int) -> dict[str, Any]:
    last = {"input_tokens": n, "cached_input_tokens": 0, "output_tokens": out,
            "reasoning_output_tokens": 0, "total_tokens": n + out}
    return {"type": "token_count", "info": {"last_token_usage": last,
                                            "total_token_usage": dict(last),
                                            "model_context_window": 258_400}}


def _reasoning() -> dict[str, Any]:
    return {"type": "reasoning", "summary": [], "encrypted_content": "x" * ENCODED}


def _rollout(folder: Path) -> Path:
    lines = [
        _line("session_meta", {"id": "s1", "cli_version": "0.142.1", "originator": "codex_cli_rs",
                               "base_instructions": {"text": "You are Codex."}}),
        _line("turn_context", {"model": "gpt-5.5"}),
        _line("response_item", _msg("user", "task one")),
        _line("response_item", _reasoning()),
        _line("response_item", _msg("assistant", "one done")),
        _line("event_msg", _usage(10_000, 100)),
        _line("response_item", _msg("user", "task two")),
        _line("response_item", _reasoning()),
        _line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                "arguments": "{\"command\": [\"ls\"]}"}),
        _line("event_msg", _usage(12_000, 200)),
        _line("response_item", {"type": "function_call_output", "call_id": "c1",
                                "output": "a.py"}),
        _line("compacted", {"message": "summary of both tasks"}),
        _line("response_item", _msg("assistant", "two done")),
        _line("event_msg", _usage(3_000, 50)),
    ]
    path = folder / "rollout-2026-09-10T10-00-00-0199a000-0000-7000-8000-000000000002.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _row(tmp_path: Path, policy: Policy) -> Any:
    folder = tmp_path / "logs"
    folder.mkdir(exist_ok=True)
    _rollout(folder)
    corpus = open_corpus([folder], cache_dir=tmp_path / "ds")
    (row,) = fidelity(corpus, policy=policy)
    return row


def test_a_codex_run_is_judged_by_what_codex_compared(tmp_path: Path) -> None:
    # the reasoning of the first turn, as Codex estimates it: (encoded x 3/4 - 650) / 4
    earlier = (ENCODED * 3 // 4 - 650 + 3) // 4
    compared = 12_000 + 200 + earlier
    p = replace_path(load_policy("codex"), "harness.model_auto_compact_token_limit", compared)
    row = _row(tmp_path, p)
    assert row.recorded_trigger == "auto"
    assert row.recorded_pre_tokens == compared
    assert row.recorded_pre_basis == "last request with its output and earlier turns' reasoning"
    assert row.not_judged_reason == ""
    # told that the server counted the reasoning, Codex compares the prompt alone: far below
    q = replace_path(p, "harness.server_reasoning_included", True)
    other = _row(tmp_path, q)
    assert other.recorded_pre_tokens == 12_000 and "configured otherwise" in other.not_judged_reason
