"""Golden traces: small scenarios whose full trace is reviewed as JSON.

Each folder of ``tests/golden`` holds ``input.json`` (a chat-format run), ``policy.yaml`` and
``expected.json`` (the trace: every request, action and eviction).  A change in the engine's
arithmetic shows up as a diff to review; regenerate deliberately with
``python -m pytest tests/replay/engine/test_engine_golden.py --update-golden``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import prepare
from replay.ingest.parse_file import parse_file
from replay.policy import load_policy

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
SCENARIOS = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.json").exists())


def _trace_doc(folder: Path) -> dict:  # type: ignore[type-arg]
    parsed = parse_file(folder / "input.json", folder, fmt="chat")
    assert parsed.tables is not None and not parsed.issues, parsed.issues
    t = parsed.tables
    run = prepare(t.messages, t.requests, t.runs["run_id"][0].as_py())
    trace = replay(run, load_policy(folder / "policy.yaml"))
    drop = {"run_id", "policy", "ts"}
    return {name: [{k: v for k, v in row.items() if k not in drop}
                   for row in getattr(trace, name).to_pylist()]
            for name in ("requests", "actions", "evictions")}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_golden_trace(scenario: str, update_golden: bool) -> None:
    folder = GOLDEN / scenario
    doc = _trace_doc(folder)
    expected_path = folder / "expected.json"
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if update_golden:
        expected_path.write_text(text)
    assert expected_path.exists(), f"{expected_path} missing: run with --update-golden and review it"
    assert json.loads(expected_path.read_text()) == doc


def test_golden_scenarios_show_what_they_are_named_for() -> None:
    """Facts each scenario exists for, independent of the stored JSON."""
    overshoot = _trace_doc(GOLDEN / "limit_overshoot_single_huge_result")
    assert any(r["overshoot_tokens"] > 0 for r in overshoot["requests"])  # after-send: too late
    summary = _trace_doc(GOLDEN / "summary_mid_tool_call")
    summaries = [a for a in summary["actions"] if a["kind"] == "summarise"]
    assert summaries
    removed = {(e["msg"], e["block"]) for e in summary["evictions"] if e["fate"] == "summarised"}
    assert all(a["n_blocks"] > 0 for a in summaries)
    # no summarised tool call leaves its result behind: results of removed calls are removed too
    parsed = parse_file(GOLDEN / "summary_mid_tool_call" / "input.json", fmt="chat")
    rows = parsed.tables.messages.to_pylist()  # type: ignore[union-attr]
    calls = {r["call_id"]: (r["msg"], r["block"]) for r in rows if r["kind"] == "tool_call"}
    for r in rows:
        if r["kind"] == "tool_result" and calls[r["call_id"]] in removed:
            assert (r["msg"], r["block"]) in removed
    parallel = _trace_doc(GOLDEN / "parallel_tool_calls")
    assert any(a["kind"] == "trim" and not a["undone"] for a in parallel["actions"])
    loop = _trace_doc(GOLDEN / "reread_same_file_loop")
    assert len([e for e in loop["evictions"] if e["fate"] == "trimmed"]) >= 5
