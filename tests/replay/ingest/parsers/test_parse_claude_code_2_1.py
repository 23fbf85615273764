"""Claude Code 2.1.x shapes on the fixtures in tests/fixtures/claude_code (see SOURCES.md): every
count is checked against a plain walk over the JSON written here, not the parser's path code."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude_code"
FILES = sorted(p.name for p in FIXTURES.glob("*.jsonl"))


def _recs(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]


def _abandoned(recs: list[dict[str, Any]]) -> dict[str, int]:
    """uuids of rewound branches -> the branch's number (1, 2, … by its first record's
    timestamp): when two user records share a parent, the earlier one (by timestamp) and
    everything below it were abandoned; each such subtree is one branch (a run of its own)."""
    children: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        if r.get("parentUuid"):
            children.setdefault(r["parentUuid"], []).append(r)
    roots: list[dict[str, Any]] = []
    for kids in children.values():
        users = sorted((k for k in kids if k["type"] == "user"), key=lambda k: k["timestamp"])
        roots += users[:-1]
    out: dict[str, int] = {}
    for k, root in enumerate(sorted(roots, key=lambda r: r["timestamp"]), 1):
        todo = [root["uuid"]]
        while todo:
            u = todo.pop()
            out.setdefault(u, k)
            todo += [c["uuid"] for c in children.get(u, [])]
    return out


def _facts(name: str) -> dict[str, Any]:
    """Per session: requests, calls, results, compactions, attachments, recorded input."""
    recs = _recs(name)
    gone = _abandoned(recs)
    per: dict[str, Counter[str]] = {}
    seen_ids: set[str] = set()
    first = next(r["sessionId"] for r in recs if r.get("sessionId"))
    # a session file with subagent records written inline (isSidechain): those are runs of
    # their own (one subagent per session in these fixtures); a subagent's own file is not split
    mixed = any(not r.get("isSidechain") for r in recs if r["type"] in ("user", "assistant"))
    for r in recs:  # the main runs first, then each abandoned branch's run
        branch = gone.get(r.get("uuid", ""), 0)
        side = mixed and r.get("isSidechain") is True
        c = per.setdefault((r.get("sessionId", first), side, branch), Counter())
        msg = r.get("message") or {}
        if r["type"] == "assistant" and msg["id"] not in seen_ids:
            seen_ids.add(msg["id"])
            c["requests"] += 1
            u = msg["usage"]
            c["input"] += u["input_tokens"] + u.get("cache_read_input_tokens", 0) + \
                u.get("cache_creation_input_tokens", 0)
        if r["type"] == "assistant":  # real files write one record per content block
            c["calls"] += sum(b["type"] == "tool_use" and b.get("id", r["uuid"]) not in seen_ids
                              for b in msg["content"])
            seen_ids |= {b.get("id", r["uuid"]) for b in msg["content"] if b["type"] == "tool_use"}
        elif r["type"] == "user" and isinstance(msg.get("content"), list):
            c["results"] += sum(b["type"] == "tool_result" for b in msg["content"])
        elif r.get("subtype") == "compact_boundary":
            c["compactions"] += 1
        elif r["type"] == "attachment":
            c["attachments"] += 1
    return {"sessions": [per[k] for k in sorted(per, key=lambda k: k[2] > 0)],
            "types": Counter(
        f"system/{r['subtype']}" if r["type"] == "system" else
        f"attachment/{r['attachment']['type']}" if r["type"] == "attachment" else r["type"]
        for r in recs)}


def _parsed(name: str) -> ParsedFile:
    return parse_file(FIXTURES / name, FIXTURES)


@pytest.mark.parametrize("name", FILES)
def test_fixture_counts_match_an_independent_walk(name: str) -> None:
    facts, parsed = _facts(name), _parsed(name)
    assert parsed.tables is not None and parsed.format == "claude_code"
    runs = parsed.tables.runs.to_pylist()
    assert len(runs) == len(facts["sessions"])
    for run, c in zip(runs, facts["sessions"]):
        assert run["n_requests"] == c["requests"]
        assert run["n_tool_calls"] == c["calls"]
        assert run["n_tool_results"] == c["results"]
        assert run["n_harness_compactions"] == c["compactions"]
        assert run["recorded_input_tokens"] == c["input"]
    # every record is counted once in the coverage, each type under its own name
    counted: Counter[str] = Counter()
    for rtype, fates in parsed.coverage.items():
        counted[rtype.split(" (")[0]] += sum(fates.values())
    assert counted == facts["types"]
    attachments = [m for m in parsed.tables.messages.to_pylist() if m["role"] == "user"
                   and m["kind"] == "text"]
    assert len(attachments) >= sum(c["attachments"] for c in facts["sessions"])


def test_rewind_then_compaction_keeps_the_path_the_model_saw() -> None:
    for name in ("dag_compact_after_rewind.jsonl", "dag_compact_after_rewind_preserved.jsonl",
                 "handmade_reverse_order.jsonl"):
        parsed = _parsed(name)
        assert parsed.tables is not None
        main, branch = parsed.tables.runs.to_pylist()  # the main path is the first run
        msgs = [m for m in parsed.tables.messages.to_pylist() if m["run_id"] == main["run_id"]]
        texts = [m["text"] for m in msgs]
        assert "First attempt" not in texts and "First answer" not in texts, name
        # the rewound branch (4 of 5 responses counted before): a run linked to the main one
        assert (branch["parent_run_id"], branch["n_requests"]) == (main["run_id"], 1), name
        assert [m["text"] for m in parsed.tables.messages.to_pylist()
                if m["run_id"] == branch["run_id"]] == ["Start", "Ready", "First attempt",
                                                        "First answer"], name
        assert texts[:6] == ["Start", "Ready", "Second attempt", "Second answer", "Keep going",
                             "Kept going"], name
        assert texts[-2:] == ["After compaction", "Final answer"], name
    events = _parsed("dag_compact_after_rewind_preserved.jsonl").tables.events.to_pylist()
    [ev] = events
    msgs = [m for m in _parsed("dag_compact_after_rewind_preserved.jsonl").tables.messages
            .to_pylist() if m["run_id"] == ev["run_id"]]
    kept = {m["msg"]: m["text"] for m in msgs}
    assert [kept[i] for i in ev["preserved_msgs"]] == ["Second answer", "Keep going", "Kept going"]
    assert (ev["kind"], ev["trigger"], ev["pre_tokens"]) == ("compaction", "auto", 150000)
    assert kept[ev["summary_msg"]].startswith("This session is being continued")
    reqs = _parsed("dag_compact_after_rewind_preserved.jsonl").tables.requests.to_pylist()
    assert reqs[ev["request"]]["output_msg"] == max(kept)  # the first request after it


def test_attachments_boundaries_and_request_diagnostics() -> None:
    name = "handmade_2_1_attachments_microcompact.jsonl"
    recs, parsed = _recs(name), _parsed(name)
    assert parsed.tables is not None
    msgs = parsed.tables.messages.to_pylist()
    texts = [m["text"] for m in msgs]
    skill = next(r["attachment"]["content"] for r in recs
                 if r["type"] == "attachment" and r["attachment"]["type"] == "skill_listing")
    prompt = next(r["message"]["content"] for r in recs if r["type"] == "user")
    assert texts.index(skill) == texts.index(prompt) + 1  # where the chain has it
    # the id-less tool_use is kept under a generated id, with an issue on its line
    line = 1 + next(i for i, r in enumerate(recs) if r["type"] == "assistant"
                    and any(b["type"] == "tool_use" and "id" not in b
                            for b in r["message"]["content"]))
    # and it got no result while later requests follow ("go on"): said once for the run
    assert [(i.line, "has no id" in i.reason, "got no result" in i.reason)
            for i in parsed.issues] == [(line, True, False), (0, False, True)]
    assert f"'gen-{line}-0'" in parsed.issues[1].reason
    assert f"gen-{line}-0" in {m["call_id"] for m in msgs if m["kind"] == "tool_call"}
    events = {e["kind"]: e for e in parsed.tables.events.to_pylist()}
    micro = next(r for r in recs if r.get("subtype") == "microcompact_boundary")
    assert events["microcompaction"]["call_ids"] == \
        micro["microcompactMetadata"]["compactedToolIds"]
    assert events["microcompaction"]["tokens_saved"] == micro["microcompactMetadata"]["tokensSaved"]
    assert events["persisted_output"]["full_chars"] == int(41.2 * 1024)
    boundary = next(r for r in recs if r.get("subtype") == "compact_boundary")
    comp = events["compaction"]
    assert (comp["trigger"], comp["pre_tokens"], comp["post_tokens"], comp["summary_msg"]) == \
        (boundary["compactMetadata"]["trigger"], boundary["compactMetadata"]["preTokens"],
         boundary["compactMetadata"]["postTokens"], None)
    reqs = parsed.tables.requests.to_pylist()
    diag = [r["message"].get("diagnostics") for r in recs if r["type"] == "assistant"]
    assert [q["cache_miss_reason"] for q in reqs] == \
        [d["cache_miss_reason"]["type"] if d else "" for d in diag]
    edits = [r["message"].get("context_management") for r in recs if r["type"] == "assistant"]
    assert [json.loads(q["applied_edits"]) if q["applied_edits"] else None for q in reqs] == \
        [e["applied_edits"] if e else None for e in edits]
    assert parsed.coverage["frobnicate-state"] == {"unknown": 1}
    assert parsed.coverage["attachment/deferred_tools_delta"] == {"modelled": 1}


def test_one_run_per_session_and_first_prompts_without_links() -> None:
    parsed = _parsed("handmade_two_sessions.jsonl")
    assert parsed.tables is not None
    msgs = parsed.tables.messages.to_pylist()
    runs = parsed.tables.runs.to_pylist()
    assert [r["run_id"][-2:] for r in runs] == ["-0", "-1"]
    by_run = Counter(m["run_id"] for m in msgs)
    assert list(by_run.values()) == [4, 4]
    assert [m["text"] for m in msgs if m["msg"] == 0] == ["alpha: start", "beta: start"]


def test_a_session_copied_from_a_file_beside_it_counts_once(tmp_path: Path) -> None:
    recs = _recs("handmade_two_sessions.jsonl")
    first, second = recs[:4], recs[4:]
    sid = second[0]["sessionId"]
    (tmp_path / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in second))
    both = tmp_path / "resumed.jsonl"
    both.write_text("".join(json.dumps(r) + "\n" for r in first + second))
    parsed = parse_file(both, tmp_path)
    assert parsed.tables is not None and parsed.tables.runs.num_rows == 1
    assert parsed.coverage[f"user (copy from {sid[:8]}.jsonl)"] == {"skipped": 2}


def test_stream_json_boundary_with_snake_case_metadata(tmp_path: Path) -> None:
    recs = [{"type": "user", "session_id": "s", "uuid": "u1",
             "message": {"role": "user", "content": "go"}},
            {"type": "system", "subtype": "compact_boundary", "session_id": "s", "uuid": "b1",
             "compact_metadata": {"trigger": "manual", "pre_tokens": 190000}},
            {"type": "assistant", "session_id": "s", "uuid": "a1", "parent_tool_use_id": None,
             "message": {"id": "msg_1", "role": "assistant", "model": "claude-x",
                         "content": [{"type": "text", "text": "ok"}],
                         "usage": {"input_tokens": 3, "output_tokens": 1}}}]
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "claude_code" and parsed.tables is not None
    [event] = parsed.tables.events.to_pylist()
    meta = recs[1]["compact_metadata"]
    assert (event["trigger"], event["pre_tokens"]) == (meta["trigger"], meta["pre_tokens"])
    assert parsed.tables.runs.to_pylist()[0]["n_harness_compactions"] == 1


@pytest.mark.parametrize(("text", "declared"), [
    ("<persisted-output>\nOutput too large (41.2KB). Full output saved to: /tmp/x.txt", 41.2 * 1024),
    ("<persisted-output>" * 5000, None),  # a result repeating the tag: minutes with a lazy .*?
    ("<persisted-output>\nOutput too large (1.2.3KB). Full", None),  # was a ValueError: file lost
    ("<persisted-output>\n" + "x" * 5000 + "Output too large (9B)", None),  # not the preview's
], ids=["preview", "repeated-tag", "bad-number", "far-away"])
def test_a_persisted_output_preview_is_read_from_its_own_lines_only(
        tmp_path: Path, text: str, declared: float | None) -> None:
    """Only the size line right after the tag declares a persisted output's size; any other
    text is an ordinary result, and the file is always kept."""
    call = {"type": "assistant", "uuid": "a1", "parentUuid": None, "sessionId": "s",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                "usage": {"input_tokens": 5, "output_tokens": 1}}}
    result = {"type": "user", "uuid": "u1", "parentUuid": "a1", "sessionId": "s",
              "timestamp": "2026-01-01T00:00:01Z", "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": text}]}}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(call) + "\n" + json.dumps(result) + "\n")
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None and not parsed.issues, parsed.issues
    events = [e for e in parsed.tables.events.to_pylist() if e["kind"] == "persisted_output"]
    assert [e["full_chars"] for e in events] == ([] if declared is None else [int(declared)])


def test_real_2_1_39_compaction_window() -> None:
    """A real 2.1.39 session from its auto compact_boundary on (spotter, see SOURCES.md): the
    compaction's trigger and size are the boundary's compactMetadata, its summary is the
    isCompactSummary record's text; the compaction's own call (agent-acompact-f46190.jsonl, same
    session) is a request of that file and no second compaction."""
    name = "spotter-8463c716-after-compaction-2.1.39.jsonl"
    recs = _recs(name)
    boundary = next(r for r in recs if r.get("subtype") == "compact_boundary")
    summary = next(r for r in recs if r.get("isCompactSummary"))
    assert boundary["version"] == "2.1.39" and summary["parentUuid"] == boundary["uuid"]
    parsed = _parsed(name)
    assert parsed.tables is not None and parsed.issues == ()
    [event] = parsed.tables.events.to_pylist()
    meta = boundary["compactMetadata"]
    assert (event["kind"], event["trigger"], event["pre_tokens"]) == (
        "compaction", meta["trigger"], meta["preTokens"])
    texts = {m["msg"]: m["text"] for m in parsed.tables.messages.to_pylist()}
    content = summary["message"]["content"]
    assert texts[event["summary_msg"]] == (content if isinstance(content, str) else
                                           "".join(b["text"] for b in content))
    call = _recs("agent-acompact-f46190.jsonl")
    assert {r["sessionId"] for r in call} == {boundary["sessionId"]}
    runs = _parsed("agent-acompact-f46190.jsonl").tables.runs.to_pylist()  # type: ignore[union-attr]
    assert [(r["n_requests"], r["n_harness_compactions"]) for r in runs] == [(1, 0)]


@pytest.mark.parametrize("header", [
    {"_type": "hive-mind-meta", "sessionId": "agent-a7be2f0", "agentId": "a7be2f0"},
    {"type": ["not", "a", "type"], "sessionId": "someone-else"},
])
def test_a_foreign_first_line_does_not_make_a_subagent_file_a_copy(
        tmp_path: Path, header: dict[str, Any]) -> None:
    """The legacy layout (before 2.1: ``agent-<id>.jsonl`` beside its ``<session>.jsonl``, its
    records carrying the parent's sessionId) behind a first line of another tool (a tool that
    exports sessions adds a header): the file's own session is named by its first Claude Code
    record, so the subagent's records are its run, not copies from the parent's file."""
    recs = _recs("agent-a7be2f0.jsonl")
    sid = recs[0]["sessionId"]
    (tmp_path / f"{sid}.jsonl").write_bytes((FIXTURES / "agent-a7be2f0.jsonl").read_bytes())
    agent = tmp_path / "agent-a7be2f0.jsonl"
    agent.write_text(json.dumps(header) + "\n" + "".join(json.dumps(r) + "\n" for r in recs))
    parsed = parse_file(agent, tmp_path)
    assert parsed.tables is not None
    assert not [k for k in parsed.coverage if "copy from" in k]
    # one request per distinct API message id of the assistant records (a plain walk)
    ids = {r["message"]["id"] for r in recs if r["type"] == "assistant"}
    assert parsed.tables.requests.num_rows == len(ids) == 13
    assert sum(n for k, v in parsed.coverage.items() if k.startswith("<")
               for n in v.values()) == 1  # the header, counted as unknown
