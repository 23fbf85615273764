"""Harbor ATIF parser: counts on real golden trajectories checked against a plain JSON walk."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import atif, detect, detect_format
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "atif"
NAMES = sorted(p.name for p in FIXTURES.glob("*.json"))


def _source(path: Path, data: bytes | None = None) -> Source:
    data = path.read_bytes() if data is None else data
    return Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())


def _independent(doc: dict[str, Any]) -> dict[str, Any]:
    """The counts a reader of the spec expects, by walking the steps directly."""
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    live = [s for s in agent if not s.get("is_copied_context")]
    calls = sum(len(s.get("tool_calls") or []) for s in agent)
    results = sum(1 for s in agent if s.get("tool_calls")
                  for r in (s.get("observation") or {}).get("results", []) if "content" in r)
    compactions = sum(1 for s in doc["steps"] if s["source"] == "system"
                      and re.search("summari[sz]", s.get("message", ""), re.IGNORECASE))
    prompt = [s["metrics"]["prompt_tokens"] for s in live if "prompt_tokens" in s.get("metrics", {})]
    output = [s["metrics"]["completion_tokens"] for s in live
              if "completion_tokens" in s.get("metrics", {})]
    return {"n_requests": len(live), "n_tool_calls": calls, "n_tool_results": results,
            "n_harness_compactions": compactions,
            "recorded_input_tokens": sum(prompt) if prompt else None,
            "recorded_output_tokens": sum(output) if output else None}


def test_fixtures_present() -> None:
    assert len(NAMES) == 5
    assert (FIXTURES / "SOURCES.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_counts_match_the_raw_json(name: str) -> None:
    path = FIXTURES / name
    doc = json.loads(path.read_text(encoding="utf-8"))
    parsed = parse_file(path, path.parent)
    assert parsed.format == "atif"
    assert parsed.tables is not None and not parsed.issues, [str(i) for i in parsed.issues]
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(doc)
    assert {k: run[k] for k in expected} == expected
    assert run["n_orphan_results"] == 0
    assert run["model"] == doc["agent"].get("model_name", "")


@pytest.mark.parametrize("name", NAMES)
def test_every_step_is_counted_in_coverage(name: str) -> None:
    path = FIXTURES / name
    doc = json.loads(path.read_text(encoding="utf-8"))
    src = _source(path)
    atif.parse(src, [])
    steps = sum(n for (t, _), n in src.coverage.counts.items() if t.startswith("step"))
    assert steps == len(doc["steps"])
    assert src.coverage.total("unknown") == 0


def test_summarization_becomes_one_harness_compaction() -> None:
    path = FIXTURES / "terminus2-context-summarization.trajectory.json"
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None
    msgs = parsed.tables.messages.to_pylist()
    summaries = [m for m in msgs if m["kind"] == "summary"]
    assert len(summaries) == 1 and summaries[0]["is_harness_summary"]
    # the request after the handoff has a larger prompt than the one before it: it is read in order
    reqs = parsed.tables.requests.to_pylist()
    assert [r["input_tokens"] for r in reqs][:4] == [682, 750, 820, 1700]


def test_copied_context_is_context_but_no_request() -> None:
    path = FIXTURES / "terminus2-linear-history.trajectory.cont-1.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    copied = [s for s in doc["steps"] if s.get("is_copied_context")]
    assert copied and run["n_requests"] == sum(
        1 for s in doc["steps"] if s["source"] == "agent" and not s.get("is_copied_context"))
    # every step's message text is in the run, copied ones included
    texts = "\n".join(m["text"] for m in parsed.tables.messages.to_pylist())
    assert all(s["message"] in texts for s in copied)


def _doc(steps: list[dict[str, Any]], version: str = "ATIF-v1.6") -> bytes:
    return json.dumps({"schema_version": version, "session_id": "s",
                       "agent": {"name": "a", "version": "1", "model_name": "m"},
                       "steps": steps}).encode()


def test_cached_tokens_are_inside_prompt_tokens(tmp_path: Path) -> None:
    data = _doc([{"step_id": 1, "source": "user", "message": "hi"},
                 {"step_id": 2, "source": "agent", "message": "ok",
                  "metrics": {"prompt_tokens": 1000, "cached_tokens": 800,
                              "completion_tokens": 5,
                              "extra": {"cache_creation_input_tokens": 150}}}])
    issues: list[Issue] = []
    (draft,) = atif.parse(_source(tmp_path / "t.json", data), issues)
    assert not issues
    assert draft.requests["input_tokens"] == [1000]  # the whole prompt, as the schema wants
    assert draft.requests["cache_read_tokens"] == [800]
    assert draft.requests["cache_write_tokens"] == [150]


def test_cached_above_prompt_is_read_as_excluded_and_said(tmp_path: Path) -> None:
    data = _doc([{"step_id": 1, "source": "agent", "message": "ok",
                  "metrics": {"prompt_tokens": 100, "cached_tokens": 900}}], "ATIF-v1.0")
    issues: list[Issue] = []
    (draft,) = atif.parse(_source(tmp_path / "t.json", data), issues)
    assert draft.requests["input_tokens"] == [1000]
    assert len(issues) == 1 and "cached_tokens above prompt_tokens" in issues[0].reason


def test_content_parts_results_by_position_and_embedded_subagents(tmp_path: Path) -> None:
    sub = {"trajectory_id": "sub-1", "agent": {"name": "helper"},
           "steps": [{"step_id": 1, "source": "user", "message": "look"},
                     {"step_id": 2, "source": "agent", "message": "seen"}]}
    data = json.dumps({
        "schema_version": "ATIF-v1.7", "agent": {"name": "a"}, "subagent_trajectories": [sub],
        "steps": [
            {"step_id": 1, "source": "user",
             "message": [{"type": "text", "text": "see"}, {"type": "image", "source": {}}]},
            {"step_id": 2, "source": "agent", "message": "two calls",
             "tool_calls": [{"tool_call_id": "a", "function_name": "read", "arguments": {}},
                            {"tool_call_id": "b", "function_name": "read", "arguments": {}}],
             "observation": {"results": [{"content": "A"}, {"content": "B"}]}},
            {"step_id": 3, "source": "agent", "llm_call_count": 0, "message": "dispatch"},
            {"step_id": 4, "source": "robot", "message": "?"},
        ]}).encode()
    issues: list[Issue] = []
    src = _source(tmp_path / "t.json", data)
    main, child = atif.parse(src, issues)
    assert main.messages["text"][0] == "see\n[image]"
    results = [(c, t) for c, t, k in zip(main.messages["call_id"], main.messages["text"],
                                         main.messages["kind"]) if k == "tool_result"]
    assert results == [("a", "A"), ("b", "B")]
    assert main.run["n_requests"] == 1  # llm_call_count 0 made no call
    assert child.run["parent_run_id"] == main.run["run_id"] and child.run["agent"] == "sub-1"
    assert child.run["n_requests"] == 1
    assert [i.reason for i in issues] == ["steps[3]: unknown source 'robot' (step skipped)"]
    assert src.coverage.by_type()["step/robot"] == {"unknown": 1}


def test_sniff_is_specific() -> None:
    head = (FIXTURES / "openhands-hello-world.trajectory.json").read_bytes()[:65536]
    assert detect_format("trajectory.json", head) == "atif"
    assert detect("trajectory.json", head).reason == "schema_version ATIF-v1.5"
    bare = detect("x.json", b'{"steps": [{"step_id": 1, "source": "agent"}')  # no version
    assert bare.describe() == "atif: steps with step_id and source (no ATIF schema_version)"
    assert not atif.sniff("x.json", b'{"messages": [{"role": "user", "content": "hi"}]}')
    assert not atif.sniff("x.json", b'{"trajectory": [{"observation": "x"}], "info": {}}')
    assert not atif.sniff("x.jsonl", b'{"type": "user", "source": "user"}\n')


def test_truncated_file_keeps_readable_steps(tmp_path: Path) -> None:
    data = (FIXTURES / "terminus2-timeout.trajectory.json").read_bytes()
    cut = data[: len(data) // 2]
    issues: list[Issue] = []
    drafts = atif.parse(_source(tmp_path / "t.json", cut), issues)
    assert issues and "damaged file" in issues[-1].reason
    assert len(drafts) == 1 and drafts[0].run["n_messages"] >= 1


def test_claude_code_converter_steps_of_one_response_make_one_request(tmp_path: Path) -> None:
    """Harbor's Claude Code converter: one step per transcript record, the same usage and
    requestId on each; prompt_tokens = input + cache reads, cache writes in metrics.extra."""
    usage = {"prompt_tokens": 2010, "completion_tokens": 120, "cached_tokens": 2000,
             "extra": {"cache_creation_input_tokens": 350, "cache_read_input_tokens": 2000}}
    steps = [
        {"step_id": 1, "source": "user", "message": "fix it"},
        {"step_id": 2, "source": "agent", "message": "Looking.", "metrics": usage,
         "extra": {"requestId": "req_1"}},
        {"step_id": 3, "source": "agent", "message": "Executed Read toolu_1",
         "tool_calls": [{"tool_call_id": "toolu_1", "function_name": "Read",
                         "arguments": {"file_path": "/a.py"}}],
         "observation": {"results": [{"source_call_id": "toolu_1", "content": "x = 1"}]},
         "metrics": usage, "extra": {"requestId": "req_1"}},
        {"step_id": 4, "source": "agent", "message": "Done.", "metrics": usage,
         "extra": {"requestId": "req_2"}},
    ]
    src = _source(tmp_path / "t.json", _doc(steps))
    (draft,) = atif.parse(src, [])
    assert draft.run["n_requests"] == 2
    assert draft.requests["input_tokens"] == [2360, 2360]  # 2010 + 350 cache writes
    assert "Executed Read toolu_1" not in draft.messages["text"]
    cov = src.coverage.by_type()
    assert cov["note/agent step of the same API response"] == {"skipped": 1}
    assert cov["note/converter placeholder message"] == {"skipped": 1}


_REAL = sorted(FIXTURES.glob("*.json"))


@pytest.mark.parametrize("seed", range(6))
def test_redacted_source_reads_as_the_agent_step_its_fields_show(tmp_path: Path,
                                                                 seed: int) -> None:
    """#26 item 12: a real trajectory whose agent steps' ``source`` is redacted (or removed)
    reads to the same requests, calls and tokens; each is said once per file."""
    import random
    rng = random.Random(seed)
    path = rng.choice(_REAL)
    doc = json.loads(path.read_text(encoding="utf-8"))
    agent = [s for s in doc["steps"] if s["source"] == "agent"
             and (s.get("metrics") or s.get("tool_calls") or s.get("model_name")
                  or s.get("reasoning_content") or (s.get("llm_call_count") or 0) >= 1)]
    hidden = rng.sample(agent, k=max(1, len(agent) // 2))
    for s in hidden:
        if rng.random() < 0.5:
            s["source"] = rng.choice(["[REDACTED]", "", "<redacted>"])
        else:
            del s["source"]
    f = tmp_path / path.name
    f.write_text(json.dumps(doc))
    before, after = parse_file(path, path.parent), parse_file(f, tmp_path)
    assert before.tables is not None and after.tables is not None
    keep = ("n_requests", "n_tool_calls", "n_tool_results", "recorded_input_tokens",
            "recorded_output_tokens", "n_harness_compactions")
    assert [{k: r[k] for k in keep} for r in after.tables.runs.to_pylist()] == \
        [{k: r[k] for k in keep} for r in before.tables.runs.to_pylist()]
    said = [i.reason for i in after.issues if "redacted or missing source" in i.reason]
    assert said == [(f"{len(hidden)} step(s) have a redacted or missing source: read as agent "
                    "steps (they carry llm_call_count, metrics or tool calls)")]


def test_a_redacted_step_with_no_agent_field_stays_unknown(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_bytes(_doc([{"step_id": 1, "source": "user", "message": "hi"},
                        {"step_id": 2, "source": "[REDACTED]", "message": "x"}]))
    parsed = parse_file(f, tmp_path)
    assert any("unknown source" in i.reason for i in parsed.issues)


@pytest.mark.parametrize("how", ["system", "agent-call"])
def test_v17_replace_boundary_is_a_compaction(tmp_path: Path, how: str) -> None:
    """#26 item 10: ATIF 1.7/1.8 marks a compaction with extra.context_management.boundary
    'replace', on a system step or on an agent step calling a compact tool (shapes as the
    public converters write them); the summary is its message and observation."""
    path = FIXTURES / "terminus2-timeout.trajectory.json"  # a real run with no compaction
    doc = json.loads(path.read_text(encoding="utf-8"))
    steps = doc["steps"]
    cut = len(steps) // 2
    mark = {"context_management": {"type": "compaction", "boundary": "replace"}}
    if how == "system":
        boundary = {"step_id": 0, "source": "system", "message": "Context reset",
                    "observation": {"results": [{"content": "Summary: the work so far"}]},
                    "extra": mark}
    else:
        boundary = {"step_id": 0, "source": "agent", "message": "", "llm_call_count": 0,
                    "tool_calls": [{"tool_call_id": "c1", "function_name": "compact",
                                    "arguments": {}}],
                    "observation": {"results": [{"source_call_id": "c1",
                                                 "content": "Summary: the work so far"}]},
                    "extra": mark}
    doc["steps"] = steps[:cut] + [boundary] + steps[cut:]
    doc["schema_version"] = "ATIF-v1.7"
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    parsed = parse_file(f, tmp_path)
    assert parsed.tables is not None and parsed.tables.events is not None
    [ev] = parsed.tables.events.to_pylist()
    msgs = parsed.tables.messages.to_pylist()
    summary = [m["text"] for m in msgs if m["msg"] == ev["summary_msg"]]
    assert "Summary: the work so far" in summary
    run = parsed.tables.runs.to_pylist()[0]
    live = sum(1 for s in steps if s["source"] == "agent" and not s.get("is_copied_context"))
    assert run["n_harness_compactions"] == 1 and run["n_requests"] == live
    assert f"step/{'system' if how == 'system' else 'agent'} (compaction)" in parsed.coverage
