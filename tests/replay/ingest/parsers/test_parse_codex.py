"""Codex rollout parser on the real samples: checked against facts counted from the raw JSONL,
spot values read by eye, and format detection. Hand-made rollouts and bad input are in
test_parse_codex_rollouts.py."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.discover import LOG_SUFFIXES
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import codex, detect_format
from tests.replay.ingest.parsers.parsed_rows import one_run_rows

SAMPLE_FILES = (
    "example-legacy-2025-09-10.jsonl",
    "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
)
OUTPUT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                "web_search_call"}


@cache
def _parsed(path: str) -> ParsedFile:
    p = Path(path)
    return parse_file(p, p.parent)


def _raw_facts(path: Path) -> dict[str, Any]:
    """Facts counted straight from the raw lines, without the parser."""
    lines = path.read_text(encoding="utf-8").splitlines()
    recs = [json.loads(line) for line in lines if line.strip()]
    modern = "payload" in recs[0]
    if modern:
        items = [r["payload"] for r in recs if r["type"] == "response_item"]
    else:
        items = [r for r in recs if "type" in r]
    infos = [r["payload"]["info"] for r in recs if r["type"] == "event_msg"
             and r["payload"]["type"] == "token_count" and r["payload"]["info"]] if modern else []
    deduped, prev = [], None
    for info in infos:
        if info["total_token_usage"] != prev:
            deduped.append(info["last_token_usage"])
        prev = info["total_token_usage"]
    calls = [i for i in items if i["type"] in ("function_call", "custom_tool_call")]
    outputs = [i for i in items if i["type"] in ("function_call_output", "custom_tool_call_output")]
    call_ids = {c["call_id"] for c in calls}
    runs, in_run = 0, False  # runs of model-output items between context inputs
    for i in items:
        if i["type"] == "ghost_snapshot":
            continue
        is_output = i["type"] in OUTPUT_ITEMS or i.get("role") == "assistant"
        runs += is_output and not in_run
        in_run = is_output
    models = Counter(r["payload"]["model"] for r in recs if r.get("type") == "turn_context")
    return {
        "modern": modern, "usage": deduped, "runs": runs, "n_calls": len(calls),
        "n_other_calls": sum(i["type"] in ("web_search_call", "local_shell_call") for i in items),
        "n_outputs": len(outputs),
        "n_hosted": sum(i["type"] in ("web_search_call", "image_generation_call") for i in items),
        "orphans": sum(o["call_id"] not in call_ids for o in outputs),
        "compactions": sum(r.get("type") == "compacted" for r in recs),
        "model": models.most_common(1)[0][0] if models else "",
        "cli": recs[0]["payload"].get("cli_version", "") if modern else "",
    }


def test_sample_list_is_complete(samples: Path) -> None:
    assert sorted(p.name for p in (samples / "codex").glob("*.jsonl")) == sorted(SAMPLE_FILES)


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_sample_matches_raw_counts(samples: Path, name: str) -> None:
    path = samples / "codex" / name
    facts = _raw_facts(path)
    parsed = _parsed(str(path))
    run, msgs, reqs = one_run_rows(parsed)
    assert parsed.format == "codex"
    assert parsed.issues == ()
    assert run["n_tool_calls"] == facts["n_calls"] + facts["n_other_calls"]
    named = [m for m in msgs if m["kind"] == "tool_call" and m["tool"] != "web_search"]
    assert len(named) == facts["n_calls"]
    # a hosted call (web search) carries its result: the call gets one, in its own message
    assert run["n_tool_results"] == facts["n_outputs"] + facts["n_hosted"]
    assert run["n_orphan_results"] == facts["orphans"] == 0
    assert run["n_harness_compactions"] == facts["compactions"] == 0
    assert run["n_requests"] == len(reqs) == facts["runs"]
    assert run["model"] == facts["model"]
    assert run["harness"].startswith("codex") and facts["cli"] in run["harness"]
    # one request per assistant message, each pointing at an assistant message, in order
    assistant_msgs = sorted({m["msg"] for m in msgs if m["role"] == "assistant"})
    assert [r["output_msg"] for r in reqs] == assistant_msgs
    if facts["modern"]:
        usage = facts["usage"]
        assert len(reqs) == len(usage)  # every run closed by exactly one deduped token_count
        assert [r["input_tokens"] for r in reqs] == [u["input_tokens"] for u in usage]
        assert [r["cache_read_tokens"] for r in reqs] == [u["cached_input_tokens"] for u in usage]
        assert [r["output_tokens"] for r in reqs] == [u["output_tokens"] for u in usage]
        assert [r["reasoning_tokens"] for r in reqs] == [
            u["reasoning_output_tokens"] for u in usage]
        assert run["recorded_input_tokens"] == sum(u["input_tokens"] for u in usage)
        assert run["recorded_output_tokens"] == sum(u["output_tokens"] for u in usage)
        assert all(r["cache_write_tokens"] is None for r in reqs)
        assert all(r["model"] == facts["model"] for r in reqs)
        # attachment check: a response without a reasoning item spent no reasoning tokens
        with_reasoning = {m["msg"] for m in msgs if m["kind"] == "reasoning"}
        for r in reqs:
            if r["output_msg"] not in with_reasoning:
                assert r["reasoning_tokens"] == 0, r
    else:
        assert run["recorded_input_tokens"] is None and run["model"] == ""
        assert all(r["input_tokens"] is None and r["output_tokens"] is None for r in reqs)


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_sample_results_pair_with_earlier_calls(samples: Path, name: str) -> None:
    _, msgs, _ = one_run_rows(_parsed(str(samples / "codex" / name)))
    seen: Counter[str] = Counter()
    for m in msgs:
        if m["kind"] == "tool_call":
            seen[m["call_id"]] += 1
        elif m["kind"] == "tool_result":
            assert seen[m["call_id"]] == 1, m["call_id"]
            # a hosted call's result is part of the model's response (one output item)
            assert m["role"] == ("assistant" if m["tool"] == "web_search" else "tool")
    assert {m["role"] for m in msgs} <= {"system", "user", "assistant", "tool"}
    by_msg = Counter(m["msg"] for m in msgs)
    assert sorted(by_msg) == list(range(len(by_msg)))  # dense message numbering


def test_sample_known_values(samples: Path) -> None:
    """Spot checks read by eye from the raw files."""
    root = samples / "codex"
    run, msgs, reqs = one_run_rows(_parsed(str(root / SAMPLE_FILES[1])))
    # 0.5x build writes token_count BEFORE its response: first request is the `ls` call
    assert run["harness"] == "codex 0.58.0 codex_cli_rs"
    assert reqs[0]["input_tokens"] == 10128 and reqs[0]["output_tokens"] == 37
    first = [m for m in msgs if m["msg"] == reqs[0]["output_msg"]]
    assert [m["kind"] for m in first] == ["reasoning", "tool_call"]
    assert first[0]["text"] == "**Planning repository inspection**"
    assert json.loads(first[1]["text"])["command"] == ["bash", "-lc", "ls"]
    assert first[1]["op"] == "list"
    run, msgs, _ = one_run_rows(_parsed(str(root / SAMPLE_FILES[2])))
    assert run["harness"] == "codex 0.104.0-alpha.1 Codex Desktop"
    assert msgs[0]["role"] == "system"  # developer message
    patch = [m for m in msgs if m["tool"] == "apply_patch"]
    assert patch and patch[0]["text"].startswith("[REDACTED_INPUT")  # raw input kept as is
    searches = [m for m in msgs if m["tool"] == "web_search"]
    assert [m["kind"] for m in searches] == ["tool_call", "tool_result"]  # with its (empty) result
    assert searches[1]["text"] == "" and searches[0]["msg"] == searches[1]["msg"]


def _all_sample_files(samples: Path) -> list[Path]:
    return sorted(p for p in samples.glob("*/**/*")
                  if p.is_file() and p.name.endswith(LOG_SUFFIXES))


def test_detects_codex_samples_only(samples: Path) -> None:
    files = _all_sample_files(samples)
    assert any(p.parent.name != "codex" for p in files)
    for p in files:
        head = p.read_bytes()[:65536]
        mine = p.relative_to(samples).parts[0] == "codex"
        assert codex.sniff(p.name, head) is mine, p
        assert (detect_format(p.name, head) == "codex") is mine, p


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_sample_coverage_names_match_the_raw_lines(samples: Path, name: str) -> None:
    """Every line and item is counted under its own type's name (the walk's names made once
    for the common types must be the names the lines carry), checked against the raw lines."""
    path = samples / "codex" / name
    raw: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "payload" in rec:
            inner = rec["payload"].get("type")
            if rec["type"] == "event_msg" and inner == "item_completed":
                inner = f"{inner}/{rec['payload']['item'].get('type')}"
            raw[f"{rec['type']}/{inner}" if rec["type"] in ("response_item", "event_msg")
                else rec["type"]] += 1
        elif "record_type" in rec:
            raw[f"record_type/{rec['record_type']}"] += 1
        elif "type" in rec:
            raw[f"response_item/{rec['type']}"] += 1
        else:
            raw["session_meta"] += 1  # the legacy first line
    parsed = _parsed(str(path))
    counted = {t: sum(fates.values()) for t, fates in parsed.coverage.items()
               if t.split("/")[0] in ("response_item", "event_msg", "record_type",
                                      "turn_context", "session_meta") and t.count("/") <= 2
               and not t.startswith("session_meta/")}
    assert counted == dict(raw)


def test_odd_type_names_are_counted_as_written(tmp_path: Path) -> None:
    """A legacy record_type other than ``state``, an item or event type that is no string,
    and a type the walk has not met are each counted under the name the line gives."""
    meta = json.dumps({"id": "x", "timestamp": "t", "instructions": ""})
    item = json.dumps({"type": "message", "role": "user", "content": "hi"})
    lines = [meta, item, '{"record_type": "state"}', '{"record_type": "mark"}',
             '{"record_type": 7}', '{"type": 7}', '{"type": "new_kind"}',
             '{"type": "reasoning", "summary": [], "timestamp": 5}']
    path = tmp_path / "legacy.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = parse_file(path, tmp_path, fmt="codex")
    cov = dict(parsed.coverage)
    assert cov["record_type/state"] == {"skipped": 1}
    assert cov["record_type/mark"] == {"skipped": 1}
    assert cov["record_type/7"] == {"skipped": 1}
    assert cov["response_item/7"] == {"unknown": 1}
    assert cov["response_item/new_kind"] == {"unknown": 1}
    assert cov["response_item/message"] == {"modelled": 1}
    assert sum(cov["response_item/reasoning"].values()) == 1  # its timestamp is no string:
    assert [str(i).split(": ", 1)[1].split(":")[0] for i in parsed.issues] == [  # unknown, said
        "timestamp is not a string"]
