"""OpenHands V0 event-stream parser: real samples against facts counted from the raw events,
grouping / pairing rules on events derived from a real sample, and bad input."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.discover import LOG_SUFFIXES
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import detect_format, openhands
from replay.ingest.parsers.source import Issue
from tests.replay.ingest.parsers.parsed_rows import one_run_rows, stand_in_source

SAMPLE_FILES = ("basic.json", "basic_interactions.json")


def _parse(path: Path) -> ParsedFile:
    return parse_file(path, path.parent, fmt="openhands")


def _write(tmp_path: Path, events: Any, name: str = "events.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events), encoding="utf-8")
    return path


def test_sample_list_is_complete(samples: Path) -> None:
    assert sorted(p.name for p in (samples / "openhands").glob("*.json")) == sorted(SAMPLE_FILES)


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_sample_matches_raw_counts(samples: Path, name: str) -> None:
    path = samples / "openhands" / name
    events = json.loads(path.read_text(encoding="utf-8"))
    tool_actions = [e for e in events if "action" in e and e.get("tool_call_metadata")]
    responses: dict[str, dict[str, Any]] = {}
    for e in tool_actions:
        responses.setdefault(e["tool_call_metadata"]["model_response"]["id"],
                             e["tool_call_metadata"]["model_response"])
    action_ids = {e["id"] for e in tool_actions}
    observations = [e for e in events if "observation" in e and e.get("cause") in action_ids]
    user_texts = [e["args"]["content"] for e in events
                  if e.get("action") == "message" and e["source"] == "user"]
    agent_texts: list[str] = []  # in stream order: plain agent messages, then each response once
    seen_resp: set[str] = set()
    for e in events:
        if e.get("action") == "message" and e["source"] == "agent" \
                and not e.get("tool_call_metadata"):
            agent_texts.append(e["args"]["content"])
        elif e in tool_actions and e["tool_call_metadata"]["model_response"]["id"] not in seen_resp:
            resp = e["tool_call_metadata"]["model_response"]
            seen_resp.add(resp["id"])
            agent_texts += [resp["choices"][0]["message"]["content"] or e["args"]["thought"]]

    parsed = _parse(path)
    assert parsed.issues == ()
    run, msgs, reqs = one_run_rows(parsed)
    assert run["format"] == "openhands"
    assert run["n_requests"] == len(reqs) == len(responses)
    assert run["n_tool_calls"] == len(tool_actions)
    assert run["n_tool_results"] == len(observations)
    assert run["n_harness_compactions"] == sum(e.get("action") == "condensation" for e in events)
    assert run["n_orphan_results"] == 0
    usages = [r["usage"] for r in responses.values()]
    assert run["recorded_input_tokens"] == sum(u["prompt_tokens"] for u in usages)
    assert run["recorded_output_tokens"] == sum(u["completion_tokens"] for u in usages)
    assert [r["cache_read_tokens"] for r in reqs] == [
        u["prompt_tokens_details"]["cached_tokens"] for u in usages]
    assert [r["cache_write_tokens"] for r in reqs] == [
        u.get("cache_creation_input_tokens") for u in usages]
    assert {r["model"] for r in reqs} == {r["model"] for r in responses.values()}

    calls = [m for m in msgs if m["kind"] == "tool_call"]
    for m, e in zip(calls, tool_actions, strict=True):
        meta = e["tool_call_metadata"]
        raw = next(tc["function"]["arguments"] for tc in
                   meta["model_response"]["choices"][0]["message"]["tool_calls"]
                   if tc["id"] == meta["tool_call_id"])
        assert (m["call_id"], m["tool"], json.loads(m["text"])) == (
            meta["tool_call_id"], meta["function_name"], json.loads(raw))
        assert m["role"] == "assistant"
        if "path" in json.loads(raw):
            assert m["path"] == json.loads(raw)["path"]
    seen: set[str] = set()
    for m in msgs:
        if m["kind"] == "tool_call":
            seen.add(m["call_id"])
        elif m["kind"] == "tool_result":
            assert m["call_id"] in seen and m["role"] == "tool"
    results = [m for m in msgs if m["kind"] == "tool_result"]
    assert [m["text"] for m in results] == [o["content"] for o in observations]
    # every request's output is the assistant message holding that response's calls
    by_msg = {m["msg"]: m for m in calls}
    for r, resp in zip(reqs, responses.values(), strict=True):
        ids = {tc["id"] for tc in resp["choices"][0]["message"]["tool_calls"]}
        assert by_msg[r["output_msg"]]["call_id"] in ids
    def texts(role: str) -> list[str]:
        return [m["text"] for m in msgs if m["role"] == role and m["kind"] == "text"]

    assert texts("user") == user_texts
    assert texts("assistant") == [t for t in agent_texts if t]
    assert sorted({m["msg"] for m in msgs}) == list(range(run["n_messages"]))


def test_detection(samples: Path) -> None:
    for name in SAMPLE_FILES:
        head = (samples / "openhands" / name).read_bytes()[:65536]
        assert detect_format(name, head) == "openhands"
    others = [p for p in samples.rglob("*") if p.is_file() and p.name.endswith(LOG_SUFFIXES)
              and p.parent.name != "openhands"]
    assert len(others) > 15
    for p in others:
        head = p.read_bytes()[:65536]
        assert not openhands.sniff(p.name, head), p
        assert detect_format(p.name, head) != "openhands", p


def _basic(samples: Path) -> list[dict[str, Any]]:
    return json.loads((samples / "openhands" / "basic.json").read_text(encoding="utf-8"))


def _two_call_stream(samples: Path) -> list[dict[str, Any]]:
    """basic.json with its first response turned into a 2-call response (as OpenHands records it:
    action 1, observation 1, action 2, observation 2, all carrying the same model_response)."""
    user, act, obs, finish = _basic(samples)
    resp = act["tool_call_metadata"]["model_response"]
    call2 = {"index": 2, "id": "toolu_second", "type": "function",
             "function": {"name": "execute_bash", "arguments": json.dumps({"command": "ls -la"})}}
    resp["choices"][0]["message"]["tool_calls"].append(call2)
    for e in (act, obs):
        e["tool_call_metadata"]["model_response"] = resp
        e["tool_call_metadata"]["total_calls_in_response"] = 2
    act2 = {"id": 30, "timestamp": act["timestamp"], "source": "agent", "message": "Running ls",
            "action": "run", "args": {"command": "ls -la", "thought": ""},
            "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_second",
                                   "model_response": copy.deepcopy(resp),
                                   "total_calls_in_response": 2}}
    obs2 = {"id": 31, "timestamp": obs["timestamp"], "source": "agent", "cause": 30,
            "observation": "run", "content": "ls: cannot access", "message": "",
            "extras": {"command": "ls -la", "metadata": {"exit_code": 2}},
            "tool_call_metadata": copy.deepcopy(act2["tool_call_metadata"])}
    state = {"id": 32, "timestamp": obs["timestamp"], "source": "environment", "message": "",
             "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "x"}}
    return [user, act, obs, state, act2, obs2, finish]


def test_k_call_response_is_one_message_and_one_request(samples: Path, tmp_path: Path) -> None:
    events = _two_call_stream(samples)
    run, msgs, reqs = one_run_rows(_parse(_write(tmp_path, events)))
    assert run["n_requests"] == 2  # the 2-call response once, the finish response once
    first = [m for m in msgs if m["msg"] == 1]
    assert [m["kind"] for m in first] == ["text", "tool_call", "tool_call"]
    assert [m["call_id"] for m in first[1:]] == ["toolu_017nBp7UfiGqyrA7j77HgtFP", "toolu_second"]
    assert json.loads(first[2]["text"]) == {"command": "ls -la"}
    assert (first[2]["op"], first[1]["op"]) == ("list", "write")
    results = [m for m in msgs if m["kind"] == "tool_result"]
    assert [(m["msg"], m["call_id"], m["is_error"]) for m in results] == [
        (2, "toolu_017nBp7UfiGqyrA7j77HgtFP", False), (3, "toolu_second", True)]
    assert [r["output_msg"] for r in reqs] == [1, 4]
    usage = events[1]["tool_call_metadata"]["model_response"]["usage"]
    assert reqs[0]["input_tokens"] == usage["prompt_tokens"]


def test_wrapper_object_condensation_and_calls_without_metadata(samples: Path,
                                                                 tmp_path: Path) -> None:
    user = _basic(samples)[0]
    events = [
        {"id": 1, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
        user,
        {"id": 5, "source": "agent", "action": "run", "message": "",
         "args": {"command": "cat setup.py", "thought": "look"}},
        {"id": 6, "source": "agent", "cause": 5, "observation": "run", "content": "boom",
         "extras": {"exit_code": 1}},
        {"id": 7, "source": "agent", "action": "read", "args": {"path": "/w/a.py"}},
        {"id": 8, "source": "agent", "cause": 7, "observation": "error", "content": "no file"},
        {"id": 9, "source": "agent", "observation": "error", "content": "bad call, no cause"},
        {"id": 10, "source": "agent", "action": "condensation",
         "args": {"forgotten_events_start_id": 5, "forgotten_events_end_id": 8}},
        {"id": 11, "source": "agent", "action": "condensation",
         "args": {"forgotten_event_ids": [1], "summary": "did things"}},
        {"id": 12, "source": "agent", "action": "think", "args": {"thought": "hmm"}},
        {"id": 13, "source": "agent", "action": "change_agent_state", "args": {"agent_state": "x"}},
    ]
    path = _write(tmp_path, {"instance_id": "x", "history": events}, "out.json")
    assert openhands.sniff(path.name, path.read_bytes())
    run, msgs, reqs = one_run_rows(_parse(path))
    assert reqs == [] and run["n_harness_compactions"] == 2
    assert [(m["role"], m["kind"]) for m in msgs] == [
        ("system", "text"), ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("user", "text"), ("user", "summary"), ("user", "summary"), ("assistant", "text")]
    calls = [m for m in msgs if m["kind"] == "tool_call"]
    assert [(m["call_id"], m["tool"], m["op"], m["path"]) for m in calls] == [
        ("call-5", "run", "read", "setup.py"), ("call-7", "read", "read", "/w/a.py")]
    assert [m["is_error"] for m in msgs if m["kind"] == "tool_result"] == [True, True]
    summaries = [m["text"] for m in msgs if m["kind"] == "summary"]
    assert "5" in summaries[0] and "8" in summaries[0] and summaries[1] == "did things"


def test_bad_events_are_reported_and_skipped(samples: Path, tmp_path: Path) -> None:
    user, act, obs, finish = _basic(samples)
    bad_args = {"id": 40, "source": "agent", "action": "run", "args": ["not", "a", "dict"]}
    events = [user, "garbage", act, bad_args, obs, 17, finish]
    issues: list[Issue] = []
    path = _write(tmp_path, events)
    data = path.read_bytes()
    src = stand_in_source(str(path), data)
    drafts = openhands.parse(src, issues)
    assert len(drafts) == 1
    lines = sorted(i.line for i in issues)
    assert lines == [2, 4, 6], [str(i) for i in issues]
    assert any("event 4" in i.reason and "args" in i.reason for i in issues)
    run = drafts[0].run
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (2, 2, 1)
    cov = src.coverage.by_type()
    assert cov["event (not an object)"] == {"unknown": 2}
    assert cov["action/run (malformed)"] == {"unknown": 1}
    assert src.coverage.total() == len(events)


def test_truncated_and_empty_files(samples: Path, tmp_path: Path) -> None:
    text = (samples / "openhands" / "basic_interactions.json").read_text(encoding="utf-8")
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    parsed = _parse(cut)  # the events before the break are kept (#13 item 14)
    assert parsed.tables is not None and len(parsed.issues) == 2
    assert parsed.issues[0].line == text[: len(text) // 2].count("\n") + 1
    assert "malformed JSON" in parsed.issues[0].reason
    assert "damaged file: kept the" in parsed.issues[1].reason
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    assert _parse(empty).tables is None and "empty" in _parse(empty).issues[0].reason
    issues: list[Issue] = []
    assert openhands.parse(stand_in_source("x.json", b'{"a": 1}'), issues) == []
    assert issues and issues[0].line == 0
    issues = []
    drafts = openhands.parse(stand_in_source("y.json", b"[]"), issues)
    assert issues == [] and drafts[0].run["n_messages"] == 0


def test_usage_from_llm_metrics_is_counted_once_per_response(tmp_path: Path) -> None:
    def usage(rid: str, prompt: int) -> dict[str, Any]:
        return {"model": "gpt-x", "prompt_tokens": prompt, "completion_tokens": 3,
                "cache_read_tokens": 1, "cache_write_tokens": 0, "response_id": rid}

    first = {"accumulated_token_usage": {}, "token_usages": [usage("r1", 50)]}
    second = {"accumulated_token_usage": {}, "token_usages": [usage("r1", 50), usage("r2", 80)]}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "hello"},
         "llm_metrics": first},
        {"id": 2, "source": "agent", "action": "message", "args": {"content": "again"},
         "llm_metrics": first},  # same snapshot: no new model call recorded
        {"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "done"},
         "llm_metrics": second},
    ]
    run, msgs, reqs = one_run_rows(_parse(_write(tmp_path, events)))
    assert [m["text"] for m in msgs] == ["hi", "hello", "again", "done"]
    assert [(r["output_msg"], r["input_tokens"], r["cache_read_tokens"], r["model"])
            for r in reqs] == [(1, 50, 1, "gpt-x"), (3, 80, 1, "gpt-x")]
    assert run["model"] == "gpt-x"


@pytest.mark.parametrize("name", ["basic.json", "basic_interactions.json"])
def test_truncated_file_keeps_the_readable_events(samples: Path, name: str,
                                                  tmp_path: Path) -> None:
    """#13 item 14: a truncated OpenHands file kept nothing; now the events before the break
    are parsed (as SWE-agent and mini-swe-agent already did), with one issue saying so."""
    data = (samples / "openhands" / name).read_bytes()
    events = json.loads(data)
    events = events if isinstance(events, list) else next(
        v for v in events.values() if isinstance(v, list))
    cut = data[: int(len(data) * 0.7)]
    whole_before = 0  # independent count: events whose closing brace lies before the cut
    decoder, text = json.JSONDecoder(), cut.decode()
    pos = text.index("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \n\r\t,":
            pos += 1
        try:
            _, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break
        whole_before += 1
    assert 0 < whole_before < len(events)
    path = tmp_path / name
    path.write_bytes(cut)
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "openhands" and parsed.tables is not None
    calls_before = sum(1 for ev in events[:whole_before]
                       if isinstance(ev, dict) and "action" in ev and ev.get("tool_call_metadata"))
    assert parsed.tables.runs.column("n_tool_calls").to_pylist() == [calls_before]
    assert any(f"kept the {whole_before} readable events" in str(i) for i in parsed.issues)


def _raw_types(events: list[Any]) -> Counter[str]:
    """Events per type counted from the raw list: ``action/<action>`` or
    ``observation/<observation>``."""
    return Counter(f"action/{e['action']}" if "action" in e else
                   f"observation/{e['observation']}" for e in events)


def _totals(cov: dict[str, dict[str, int]]) -> Counter[str]:
    """Coverage totals per event type, the fate's reason (`` (user)``, …) taken off."""
    out: Counter[str] = Counter()
    for rtype, fates in cov.items():
        out[rtype.split(" (")[0]] += sum(fates.values())
    return out


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_every_sample_event_is_counted_in_coverage(samples: Path, name: str) -> None:
    path = samples / "openhands" / name
    events = json.loads(path.read_text(encoding="utf-8"))
    cov = _parse(path).coverage
    assert _totals(cov) == _raw_types(events)
    assert not any("unknown" in f for f in cov.values())


def test_coverage_says_what_each_event_became(samples: Path, tmp_path: Path) -> None:
    user = _basic(samples)[0]
    events: list[Any] = [
        {"id": 1, "source": "agent", "action": "system", "args": {"content": "sys"}}, user,
        {"id": 5, "source": "agent", "action": "run", "args": {"command": "ls"}},
        {"id": 6, "source": "agent", "cause": 5, "observation": "run", "content": "a.py"},
        {"id": 7, "source": "user", "action": "run", "args": {"command": "pwd"}},
        {"id": 8, "source": "user", "cause": 7, "observation": "run", "content": "/w"},
        {"id": 9, "source": "environment", "observation": "agent_state_changed", "content": "",
         "extras": {"agent_state": "running"}},
        {"id": 10, "source": "agent", "action": "change_agent_state", "args": {}},
        {"id": 11, "source": "agent", "action": "recall", "args": {"query": "q"}},
        {"id": 12, "source": "environment", "cause": 11, "observation": "recall", "content": ""},
        {"id": 13, "source": "agent", "observation": "error", "content": "bad call"},
        {"id": 14, "source": "agent", "observation": "browse", "content": "a page"},
        {"id": 15, "source": "agent", "frobnicate": {"x": 1}},
    ]
    path = _write(tmp_path, {"instance_id": "x", "history": events, "metrics": {}}, "out.json")
    parsed = _parse(path)
    cov = parsed.coverage
    assert cov == {
        "action/system": {"modelled": 1}, "action/message": {"modelled": 1},
        "action/run": {"modelled": 1}, "observation/run": {"modelled": 1},
        "action/run (user)": {"skipped": 1}, "observation/run (no call)": {"skipped": 1},
        "observation/agent_state_changed": {"skipped": 1},
        "action/change_agent_state": {"skipped": 1}, "action/recall": {"skipped": 1},
        "observation/recall": {"skipped": 1}, "observation/error": {"modelled": 1},
        "observation/browse (no call)": {"skipped": 1},
        "event (no action or observation)": {"unknown": 1},
        "instance_id": {"skipped": 1}, "metrics": {"skipped": 1}}
    assert sum(sum(f.values()) for f in cov.values()) == len(events) + 2
    assert _totals(cov) - Counter({"event": 1, "instance_id": 1, "metrics": 1}) == \
        _raw_types(events[:-1])
