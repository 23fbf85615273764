"""Codex 0.146–0.148 rollouts (``tests/fixtures/codex``, hand-made to the documented shapes, and
one third-party schema catalog written from real 0.146–0.149 rollouts, see its SOURCES.md): every fixture's requests, tool calls, results, compactions and recorded usage
against counts made by a plain JSON walk here, not by the parser; what each new line and item
type became (coverage); instructions, code-mode commands, compaction summaries.

Not here: forks and spawned subagents (``test_codex_forks.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import codex, detect_format
from replay.ingest.parsers.source import Source
from tests.replay.ingest.parsers.codex_fixture_files import FILES, FIXTURES, parse_fixture

# a third-party schema catalog, not one session (see its SOURCES.md); kept apart: its repeated
# placeholder values stand for ids, times and texts alike (redact: test_redact_structure.py)
CATALOG = FIXTURES.parent / "codex_catalog" / "agent-sessions-stage0-codex-0.146.jsonl"
OUTPUT_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call",
                "web_search_call", "image_generation_call"}
HOSTED = {"web_search_call", "image_generation_call"}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output",
           "tool_search_output"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _is_output(rec: dict[str, Any]) -> bool:
    p = rec["payload"]
    return rec["type"] == "response_item" and (
        p["type"] in OUTPUT_CALLS or p["type"] == "reasoning"
        or (p["type"] == "message" and p["role"] == "assistant"))


def _count(path: Path) -> dict[str, Any]:
    """Facts counted from the raw lines, independently of the parser."""
    recs = _lines(path)
    items = [r["payload"] for r in recs if r["type"] == "response_item"]
    # a fork replays its parent's lines (the parent's session_meta, earlier timestamps): their
    # turns are the parent's requests
    fork_ts = recs[0]["timestamp"] if recs[0]["payload"].get("forked_from_id") else None
    metas = [k for k, r in enumerate(recs) if r["type"] == "session_meta"]
    replayed = {k for k, r in enumerate(recs) if fork_ts and len(metas) > 1
                and k >= metas[1] and r["timestamp"] < fork_ts}
    requests, in_run = 0, False
    for k, r in enumerate(recs):
        p = r["payload"]
        if _is_output(r):
            requests += not in_run and k not in replayed
            in_run = True
        elif r["type"] in ("compacted", "turn_context") or (
                r["type"] == "response_item" and p["type"] != "ghost_snapshot") or (
                r["type"] == "event_msg" and p["type"] == "token_count" and p["info"]):
            in_run = False
    standalone = {i["encrypted_content"] for i in items if i["type"] == "compaction"}
    compactions = sum(i["type"] == "compaction" for i in items) + sum(
        not any(h.get("encrypted_content") in standalone
                for h in r["payload"].get("replacement_history") or [])
        for r in recs if r["type"] == "compacted")
    # usage: token_counts with info, a repeat of the previous total dropped, and one with no
    # model output since the previous one right before a compacted line (other events between)
    # dropped: the compaction's own call
    usage, prev, outputs = [], None, 0
    for k, r in enumerate(recs):
        p = r["payload"]
        outputs += _is_output(r)
        if r["type"] != "event_msg" or p["type"] != "token_count" or not p["info"] \
                or k in replayed:
            continue
        total = p["info"]["total_token_usage"]
        if total == prev:
            continue
        prev = total
        nxt = next((x for x in recs[k + 1:] if x["type"] != "event_msg"), None)
        if not outputs and nxt is not None and nxt["type"] == "compacted":
            continue
        outputs = 0
        usage.append(p["info"]["last_token_usage"])
    call_ids = {i.get("call_id") for i in items if i["type"] in OUTPUT_CALLS}
    commands = [r["payload"]["item"] for r in recs if r["type"] == "event_msg"
                and r["payload"]["type"] == "item_completed"
                and r["payload"]["item"]["type"] == "CommandExecution"]
    return {
        "requests": requests,
        "calls": sum(i["type"] in OUTPUT_CALLS for i in items),
        "results": sum(i["type"] in OUTPUTS or i["type"] in HOSTED for i in items),
        "compactions": compactions,
        "input": [u["input_tokens"] for u in usage],
        "write": [u.get("cache_write_input_tokens") for u in usage],
        "nested": [c for c in commands if c["id"] not in call_ids],
        "base": recs[0]["payload"]["base_instructions"]["text"],
        "types": {r["type"] for r in recs},
    }


def test_fixture_list() -> None:
    assert len(FILES) == 7  # 6 + the real TraceLab 0.114 segment


@pytest.mark.parametrize("rel", FILES)
def test_fixture_counts_match_raw(rel: str) -> None:
    facts = _count(FIXTURES / rel)
    assert detect_format(rel, (FIXTURES / rel).read_bytes()[:65536]) == "codex"
    run, msgs, reqs, _ = parse_fixture(rel)
    assert run["n_requests"] == len(reqs) == facts["requests"]
    assert run["n_tool_calls"] == facts["calls"]
    assert run["n_tool_results"] == facts["results"]
    assert run["n_harness_compactions"] == facts["compactions"]
    assert [r["input_tokens"] for r in reqs] == facts["input"]
    assert [r["cache_write_tokens"] for r in reqs] == facts["write"]
    assert run["recorded_input_tokens"] == sum(facts["input"])
    # the system prompt the model saw is the first message
    assert msgs[0]["role"] == "system" and msgs[0]["text"] == facts["base"]
    # one request per assistant message (a fork's replayed parent turns have none), in order
    outs = [r["output_msg"] for r in reqs]
    assistant = sorted({m["msg"] for m in msgs if m["role"] == "assistant"})
    assert outs == sorted(outs) and set(outs) <= set(assistant)
    assert len(assistant) - len(outs) == (2 if rel.endswith("0b.jsonl") else 0)


@pytest.mark.parametrize("rel", FILES)
def test_every_line_and_item_type_is_counted(rel: str) -> None:
    recs = _lines(FIXTURES / rel)
    _, _, _, src = parse_fixture(rel)
    cov = src.coverage.by_type()
    assert not any("unknown" in fates for fates in cov.values()), cov
    names = []
    for r in recs:  # every line's type (and item / event type) has an entry
        sub = r["payload"].get("type") if r["type"] in ("response_item", "event_msg") else None
        name = f"{r['type']}/{sub}" if sub else r["type"]
        if sub == "item_completed":
            name += f"/{r['payload']['item']['type']}"
        assert name in cov, name
        names.append(name)
    # each line counted once, under its own type
    assert {t: sum(cov[t].values()) for t in names} == Counter(names)


def test_new_line_types_are_skipped_not_context() -> None:
    rel = "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
    _, msgs, _, src = parse_fixture(rel)
    cov = src.coverage.by_type()
    for t in ("inter_agent_communication_metadata", "token_usage_record", "security_risk_score",
              "realtime_item"):
        assert cov[t] == {"skipped": 1}
    assert cov["event_msg/thread_rolled_back"] == {"modelled": 1}  # num_turns 0: no change
    assert cov["response_item/compaction/encrypted_content (sized from its encrypted bytes: "
               "estimated)"] == {"modelled": 1}
    # the delivered agent message is context (its encrypted part is not readable)
    agent = [m for m in msgs if m["text"] == "Reviewer: keep x in a.py."]
    assert len(agent) == 1 and agent[0]["role"] == "user"


def test_compaction_summaries() -> None:
    rel = "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
    recs = _lines(FIXTURES / rel)
    compacted = [r["payload"] for r in recs if r["type"] == "compacted"]
    _, msgs, reqs, _ = parse_fixture(rel)
    summaries = [m for m in msgs if m["kind"] == "summary"]
    assert all(m["is_harness_summary"] for m in summaries)
    # 1: empty message -> the replacement history's last message; 2: the message;
    # 3: a remote compaction: encrypted, a size marker of what Codex estimates it at (encoded
    # x 3/4 - 650 bytes) (and its compacted line is not a second one)
    first_history = compacted[0]["replacement_history"]
    enc = next(r["payload"]["encrypted_content"] for r in recs
               if r["type"] == "response_item" and r["payload"]["type"] == "compaction")
    marker = (f"[REDACTED_ENCRYPTED_SUMMARY len={max(0, len(enc) * 3 // 4 - 650)} estimated "
              f"from {len(enc)} encrypted bytes]")
    assert [m["text"] for m in summaries] == [first_history[-1]["content"][0]["text"],
                                              compacted[1]["message"], marker]
    # each is a compaction event pointing at its summary message
    events = parse_file(FIXTURES / rel, FIXTURES).tables.events.to_pylist()  # type: ignore[union-attr]
    assert [(e["kind"], e["summary_msg"]) for e in events] == [
        ("compaction", m["msg"]) for m in summaries]
    # the history items are not copied into the stream
    assert sum(m["text"] == "Refactor lib.py into two modules." for m in msgs) == 1
    # totals went down after the first compaction; per-request usage is still last_token_usage
    assert [r["input_tokens"] for r in reqs][2] == 2100


def test_unresolved_reference_is_an_issue(tmp_path: Path) -> None:
    rel = "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
    text = (FIXTURES / rel).read_text().replace('"item_id":"msg_u1"', '"item_id":"gone"')
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    parsed = parse_file(path, tmp_path)
    assert [i.reason for i in parsed.issues] == [
        ("compacted: 1 of 3 replacement-history references match no earlier item (the summary "
         "is read from the rest)")]
    assert parsed.tables is not None and parsed.tables.runs["n_harness_compactions"][0].as_py() == 3


def test_code_mode_commands_are_nested_rows() -> None:
    rel = "rollout-2026-08-21T09-00-00-01a0114e-3c1d-7a52-b0e3-5f1c2d3e4f50.jsonl"
    facts = _count(FIXTURES / rel)
    run, msgs, _, src = parse_fixture(rel)
    nested = [m for m in msgs if m["tool"] == "exec_command" and m["text"] == ""]
    calls = [m for m in nested if m["kind"] == "tool_call"]
    assert [m["call_id"] for m in calls] == [c["id"] for c in facts["nested"]] == ["cmd_a", "cmd_b"]
    assert (calls[0]["op"], calls[0]["path"]) == ("read", "src/app.py")
    assert all(m["tokens_o200k"] == 0 for m in nested)  # sized inside the program, not again
    assert src.coverage.by_type()["event_msg/item_completed/CommandExecution"] == {
        "modelled": 2, "skipped": 1}  # the third is also a function_call item
    assert run["n_tool_calls"] == facts["calls"]  # nested commands are not model calls


def test_detection_says_what_it_saw() -> None:
    from replay.ingest.parsers import detect

    head = (FIXTURES / FILES[0]).read_bytes()[:65536]
    got = detect(FILES[0], head)
    assert got.format == "codex"
    n_meta = sum(json.loads(x)["type"] == "session_meta" for x in head.split(b"\n")[:40] if x)
    assert f"session_meta x{n_meta}" in got.reason


def test_third_party_catalog_counts_match_raw() -> None:
    """agent-sessions' Codex catalog (real record shapes of 0.146–0.149, values trimmed): calls,
    results, requests and compactions against the plain walk; the one result whose call id was
    trimmed away is reported, not dropped; every line and item type is counted, none unknown."""
    path = CATALOG
    recs = _lines(path)
    facts = _count(path)
    assert recs[0]["payload"]["cli_version"] == "0.146.0"
    assert detect_format(path.name, path.read_bytes()[:65536]) == "codex"
    items = [r["payload"] for r in recs if r["type"] == "response_item"]
    orphans, called = [], set()
    for i in items:  # a result with no call before it in the file
        called |= {i.get("call_id")} if i["type"] in OUTPUT_CALLS else set()
        orphans += [i["call_id"]] if i["type"] in OUTPUTS and i["call_id"] not in called else []
    assert len(orphans) == 1
    open_ids: set[str] = set()
    reused = []  # a call taking the id of a call with no result yet (the trimmed ids)
    for i in items:
        if i["type"] in OUTPUT_CALLS and i.get("call_id"):
            reused += [i["call_id"]] if i["call_id"] in open_ids else []
            open_ids.add(i["call_id"])
        elif i["type"] in OUTPUTS:
            open_ids.discard(i["call_id"])
    assert reused == ["[trimmed for fixture]"]
    data = path.read_bytes()
    src = Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())
    issues: list[Any] = []
    codex.parse(src, issues)
    # the catalog's trimmed lines all carry ordinal 0: every one after the first is out of order
    ordinals = [r["ordinal"] for r in recs if "ordinal" in r]
    late = sum(1 for a, b in itertools.pairwise(ordinals) if b <= a)
    said = [i.reason for i in issues if "take the id of an earlier call" in i.reason]
    assert len(said) == 1 and said[0].startswith(f"{len(reused)} tool call(s)") \
        and f"(first {reused[0]!r}, message " in said[0]
    # the trimmed window is 0 (a token_count's info, a task_started): no window, said once,
    # naming the events it came from and how often each
    zero = {t: sum(1 for r in recs if r["type"] == "event_msg" and r["payload"].get("type") == t
                   and (r["payload"].get("info") or {} if t == "token_count" else r["payload"])
                   .get("model_context_window") == 0) for t in ("token_count", "task_started")}
    assert zero == {"token_count": 1, "task_started": 1}
    assert [i.reason for i in issues if i.reason not in said] == [
        f"tool result {o!r} has no earlier call (kept, orphaned)" for o in orphans] + [
        f"{late} line(s) carry an ordinal not above the previous line's (read in file order)",
        ("token_count/task_started model_context_window is 0, not a positive token count (2 "
         "time(s) in the file: token_count 1, task_started 1): not used (the run's is what the "
         "others record, else unknown)")]
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (
        facts["requests"], facts["calls"], facts["results"])
    # six compacted lines, no standalone remote compaction item: six compactions (each later
    # history retains an earlier compaction item; the previous main counted 2)
    assert sum(r["type"] == "compacted" for r in recs) == facts["compactions"] == 6
    assert run["n_harness_compactions"] == facts["compactions"]
    cov = src.coverage.by_type()
    assert not any("unknown" in fates for fates in cov.values()), cov
    names = Counter()
    for r in recs:
        sub = r["payload"].get("type") if r["type"] in ("response_item", "event_msg") else None
        name = f"{r['type']}/{sub}" if sub else r["type"]
        if sub == "item_completed":
            name += f"/{r['payload']['item']['type']}"
        names[name] += 1
    assert {t: sum(cov[t].values()) for t in names} == dict(names)


def test_compacted_line_retaining_an_earlier_compaction_item_is_a_compaction(
        tmp_path: Path) -> None:
    """A later compacted line whose replacement history keeps the first compaction's encrypted
    item (as real 0.146+ histories do) is a second compaction, not a copy of the first."""
    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2026-09-01T00:00:00Z", "type": kind, "payload": payload})

    def msg(role: str, text: str) -> dict[str, Any]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}

    c1 = {"type": "compaction", "encrypted_content": "enc-1"}
    lines = [line("session_meta", {"id": "s", "cli_version": "0.148.0"}),
             line("response_item", msg("user", "one")),
             line("response_item", msg("assistant", "a")),
             line("compacted", {"message": "", "replacement_history": [msg("user", "one"), c1]}),
             line("response_item", msg("user", "two")),
             line("response_item", msg("assistant", "b")),
             line("compacted", {"message": "second summary", "replacement_history": [
                 msg("user", "one"), c1, msg("user", "two"), msg("assistant", "b")]}),
             line("response_item", msg("assistant", "c"))]
    path = tmp_path / "rollout-2026-09-01T00-00-00-x.jsonl"
    path.write_text("\n".join(lines) + "\n")
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    assert parsed.tables.runs["n_harness_compactions"][0].as_py() == 2
    summaries = [m["text"] for m in parsed.tables.messages.to_pylist() if m["kind"] == "summary"]
    assert summaries[-1] == "second summary" and len(summaries) == 2


def test_retained_context_lines_are_skipped_not_context(tmp_path: Path) -> None:
    """0.149+ writes ``retained_context`` lines (what a compaction kept): understood, not
    context, so the run reads as without them and the file does not count as unknown."""
    rel = "rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-0123456789ab.jsonl"
    lines = (FIXTURES / rel).read_text().splitlines()
    extra = json.dumps({"timestamp": "2026-08-09T18:00:13.000Z", "type": "retained_context",
                        "payload": {"items": [{"type": "message", "role": "user"}]}})
    (tmp_path / rel).write_text("\n".join(lines[:10] + [extra] + lines[10:]) + "\n")
    data = (tmp_path / rel).read_bytes()
    src = Source(path=str(tmp_path / rel), rel=rel, data=data,
                 sha256=hashlib.sha256(data).hexdigest())
    issues: list[Any] = []
    draft = codex.parse(src, issues)
    _, msgs, reqs, _ = parse_fixture(rel)
    assert issues == [] and src.coverage.by_type()["retained_context"] == {"skipped": 1}
    assert [d.messages["text"] for d in draft] == [[m["text"] for m in msgs]]
    assert [len(d.requests["request"]) for d in draft] == [len(reqs)]
