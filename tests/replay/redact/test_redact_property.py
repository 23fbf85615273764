"""A property of ``replay redact``: a Codex rollout whose ids, names, timestamps and texts are
drawn from one small pool of values (the same words as a call id, a tool name, a time and a
message, as the third-party catalog has them) redacts with no issue, i.e. its copy reads back
with every column of the original (the redact check: blocks' sizes and tokens, call ids and
their pairing, tools, times, requests, events), and no value of the pool with a space in it
is left in the copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.redact import redact

_POOL = ("[trimmed for fixture]", "same words", "call-1", "2026-08-03T10:48:56.000Z",
         "shell", "a.txt\nb.txt\n", "the same words here",
         "<environment_context>\n  <cwd>/home/u</cwd>\n</environment_context>")
"""Values shared across roles: texts with spaces, a token id, a date, a tool name, lines, a
context message Codex writes itself (no user turn)."""
_SPACED = [v for v in _POOL if " " in v]


@st.composite
def _rollouts(draw: Any) -> list[dict[str, Any]]:
    value = st.sampled_from(_POOL)
    lines: list[dict[str, Any]] = [{"timestamp": draw(value), "type": "session_meta",
                                    "payload": {"id": "s1", "cli_version": "0.146.0",
                                                "base_instructions": {"text": draw(value)}}}]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("user", "call", "output", "reasoning", "answer",
                                     "compacted")))
        if kind == "user":
            content = [{"type": "input_text", "text": draw(value)}]
            if draw(st.booleans()):
                content.append({"type": "input_image", "image_url": None})
            payload: dict[str, Any] = {"type": "message", "role": "user", "content": content}
        elif kind == "call":
            payload = {"type": "function_call", "call_id": draw(value), "name": draw(value),
                       "arguments": json.dumps({"cmd": draw(value), "note": draw(value)})}
        elif kind == "output":
            output: Any = draw(value) if draw(st.booleans()) else [
                {"type": "input_text", "text": draw(value)},
                {"type": "input_image", "image_url": None}]
            payload = {"type": "function_call_output", "call_id": draw(value),
                       "output": output}
        elif kind == "answer":
            payload = {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": draw(value)}]}
        elif kind == "compacted":  # a history repeating a user message, then its summary
            history = [{"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": draw(value)}]},
                       {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": draw(value)}]}]
            lines.append({"timestamp": draw(value), "type": "compacted",
                          "payload": {"message": "", "replacement_history": history}})
            continue
        else:
            payload = {"type": "reasoning", "summary": [{"type": "summary_text",
                                                         "text": draw(value)}]}
        lines.append({"timestamp": draw(value), "type": "response_item", "payload": payload})
    return lines


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=_rollouts())
def test_shared_values_round_trip(tmp_path_factory: pytest.TempPathFactory,
                                  records: list[dict[str, Any]]) -> None:
    root = tmp_path_factory.mktemp("prop")
    src = root / "in" / "rollout.jsonl"
    src.parent.mkdir()
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = redact([src.parent], root / "out")
    [f] = report.files
    assert f.written and not f.issues, [i.reason for i in f.issues]
    text = (root / "out" / f.archived_as).read_text()
    assert not [v for v in _SPACED if json.dumps(v)[1:-1] in text]


def test_the_pool_shares_values_across_roles() -> None:
    """The property is only worth its time if a value can be an id and a text at once."""
    assert set(_SPACED) and "[trimmed for fixture]" in _POOL and Path(__file__).exists()
