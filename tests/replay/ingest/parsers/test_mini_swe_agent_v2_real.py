"""A real mini-swe-agent 2.x trajectory (native tool calls, ``mini-swe-agent-1.1``), read
against counts made here from its raw JSON, and replayed under ``none``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from replay.ingest.parse_file import parse_file
from tests.conftest import REPO
from tests.replay.ingest.parsers.parsed_rows import table_rows

PATH = REPO / "tests" / "fixtures" / "mini_swe_agent" / "astropy__astropy-12907.traj.json"


def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(PATH.read_text())
    assert raw["trajectory_format"] == "mini-swe-agent-1.1"
    return raw


def test_counts_usage_calls_and_results_match_the_raw_json() -> None:
    raw = _raw()
    chat = raw["messages"]
    kept = [m for m in chat if m["role"] != "exit"]  # the exit message: the submission, no context
    replies = [m for m in chat if m["role"] == "assistant"]
    calls = [(c["id"], c["function"]["arguments"]) for m in replies for c in m["tool_calls"]]
    results = [(m["tool_call_id"], m["content"]) for m in chat if m["role"] == "tool"]
    usage = [m["extra"]["response"]["usage"] for m in replies]

    parsed = parse_file(PATH, PATH.parent)
    assert parsed.format == "mini_swe_agent" and not parsed.issues
    (run,) = table_rows(parsed, "runs")
    reqs = table_rows(parsed, "requests")
    msgs = table_rows(parsed, "messages")

    assert run["n_messages"] == len(kept) == 129
    assert run["n_requests"] == len(reqs) == len(replies) == 64
    assert run["n_tool_calls"] == len(calls) and run["n_tool_results"] == len(results)
    assert run["harness"] == f"mini-swe-agent {raw['info']['mini_version']}"
    assert run["model"] == raw["info"]["config"]["model"]["model_name"]
    assert [r["input_tokens"] for r in reqs] == [u["prompt_tokens"] for u in usage]
    assert [r["cache_read_tokens"] for r in reqs] == \
        [u["prompt_tokens_details"]["cached_tokens"] for u in usage]
    assert [r["output_tokens"] for r in reqs] == [u["completion_tokens"] for u in usage]
    assert [r["model"] for r in reqs] == [m["extra"]["response"]["model"] for m in replies]
    assert run["recorded_input_tokens"] == sum(u["prompt_tokens"] for u in usage)

    got_calls = [(m["call_id"], m["text"]) for m in msgs if m["kind"] == "tool_call"]
    got_results = [(m["call_id"], m["text"]) for m in msgs if m["kind"] == "tool_result"]
    assert got_calls == calls and got_results == results
    # the submission's call is the one left unanswered: the run ends with it
    assert {c for c, _ in calls} - {c for c, _ in results} == {calls[-1][0]}
    roles = {m["msg"]: m["role"] for m in msgs}
    assert [roles[k] for k in sorted(roles)] == [m["role"] for m in kept]

    expected = Counter(f"message/{m['role']}" for m in chat)
    expected.update(k for k in raw if k != "messages")
    assert {t: sum(f.values()) for t, f in parsed.coverage.items()} == dict(expected)
    assert parsed.coverage["message/exit"] == {"skipped": 1}


def test_none_sends_every_recorded_prompt(tmp_path: Path) -> None:
    """Anchored truth on the recorded usage: with nothing removed, each request is the
    prompt the log recorded for it."""
    from replay.corpus import open_corpus
    from replay.engine.fold import replay
    from replay.policy import load_policy

    usage = [m["extra"]["response"]["usage"]["prompt_tokens"]
             for m in _raw()["messages"] if m["role"] == "assistant"]
    corpus = open_corpus([PATH], cache_dir=tmp_path / "ds")
    (rid,) = corpus.replayable()
    trace = replay(corpus.prepared(rid), load_policy("none"),
                   calibration=corpus.calibration(rid))
    assert set(trace.requests["truth_source"].to_pylist()) == {"anchored"}
    assert trace.requests["truth_tokens"].to_pylist() == usage
