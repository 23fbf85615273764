"""A Codex compaction in the middle of a turn is the harness's own (``auto``, #26 item 6); one
right after a user's turn starts could be ``/compact`` and stays unknown.  The rollouts are the
real-shaped lines of the 0.148 fixture, reordered here."""

from __future__ import annotations

from pathlib import Path

from replay.ingest.parse_file import parse_file
from tests.conftest import REPO

FIXTURE = (REPO / "tests" / "fixtures" / "codex"
           / "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl")
LINES = FIXTURE.read_text().splitlines()
# 0 session_meta, 1 turn_context, 2 user message, 3 function_call, 4 token_count,
# 5 function_call_output, 6 assistant message, 7 token_count, 9 compacted, 23 user message


def _triggers(order: list[int], tmp_path: Path) -> list[str]:
    path = tmp_path / "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
    path.write_text("".join(LINES[i] + "\n" for i in order))
    tables = parse_file(path, tokenizers=("o200k_base",)).tables
    assert tables is not None
    return [e["trigger"] for e in tables.events.to_pylist() if e["kind"] == "compaction"]


def test_a_compaction_between_a_call_and_the_next_output_is_auto(tmp_path: Path) -> None:
    assert _triggers([0, 1, 2, 3, 4, 5, 9, 6, 7], tmp_path) == ["auto"]


def test_a_compaction_right_after_a_user_turn_starts_is_unknown(tmp_path: Path) -> None:
    assert _triggers([0, 1, 2, 6, 7, 23, 9, 6, 7], tmp_path) == [""]


def test_a_compaction_before_any_model_call_is_unknown(tmp_path: Path) -> None:
    assert _triggers([0, 1, 2, 9, 6, 7], tmp_path) == [""]
