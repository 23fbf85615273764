"""A manual ``/compact`` that keeps a preserved segment (Claude Code 2.1.2xx, issue #26): the
compaction is on the conversation path, the segment's records are re-attached after the summary
in the replay, and every response is one request with its recorded tokens.

The transcript is real-shaped: the real 2.1.157 TraceLab fixture (CC BY 4.0, see SOURCES.md)
with, after its first turn, the records a ``/compact`` writes as the client writes them (the
shape public reverse-engineering of compact.ts / sessionStorage.ts describes): a
``compact_boundary`` with no parent, ``logicalParentUuid`` the last record before it and
``compactMetadata.preservedSegment`` {head, anchor: the summary, tail} / ``preservedMessages``;
the ``isCompactSummary`` record under it; the kept records are not written again (they keep
their old parents), so the next prompt names the segment's tail as its parent.  Every figure
expected here comes from a plain walk of those JSON records, not from the parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.engine.tiers.recorded import MANUAL_TIER
from replay.ingest.inspect import inspect_file
from replay.ingest.parse_file import parse_file
from replay.ingest.tokens import count_tokens
from replay.policy import load_policy

FIXTURE = (Path(__file__).resolve().parents[3] / "fixtures" / "claude_code"
           / "tracelab-claude-session-01-2.1.157.jsonl")
VERSION = "2.1.217"
SUMMARY = ("This session is being continued from a previous conversation that ran out of "
           "context. The summary below covers the earlier portion of the conversation.\n\n"
           "Summary:\n1. Primary Request and Intent: a script listing each GPU type.")


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line]


def compacted(head_line: int = 25, tail_line: int = 28) -> list[dict[str, Any]]:
    """The fixture's records with a manual /compact after its first turn (records 0-30) that
    keeps records ``head_line``..``tail_line`` (a response with a call, its result and the
    turn's answer), the version field set to 2.1.217 (the issue's session)."""
    recs = _records()
    pre, post = recs[:31], recs[31:]
    head, tail, last = recs[head_line], recs[tail_line], recs[30]
    env = {k: recs[29][k] for k in ("isSidechain", "userType", "entrypoint", "cwd",
                                     "sessionId", "version", "gitBranch")}
    boundary_uuid, summary_uuid = "c0a1b2c3-0000-5000-8000-00000000cb01", \
        "c0a1b2c3-0000-5000-8000-00000000c501"
    kept = _chain(recs, tail["uuid"], head["uuid"])
    last_input = next(sum(r["message"]["usage"].get(k, 0) for k in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        for r in reversed(pre) if r["type"] == "assistant")
    boundary = {"parentUuid": None, "logicalParentUuid": last["uuid"], **env,
                "type": "system", "subtype": "compact_boundary",
                "content": "Conversation compacted", "isMeta": False,
                "timestamp": "2026-06-01T05:42:30.000Z", "uuid": boundary_uuid, "level": "info",
                "compactMetadata": {
                    "trigger": "manual", "preTokens": last_input, "messagesSummarized": 9,
                    "preservedSegment": {"headUuid": head["uuid"], "anchorUuid": summary_uuid,
                                         "tailUuid": tail["uuid"]},
                    "preservedMessages": {"anchorUuid": summary_uuid, "uuids": kept}}}
    summary = {"parentUuid": boundary_uuid, **env, "type": "user",
               "message": {"role": "user", "content": SUMMARY}, "isVisibleInTranscriptOnly": True,
               "isCompactSummary": True, "uuid": summary_uuid,
               "timestamp": "2026-06-01T05:42:31.000Z"}
    first_prompt = next(i for i, r in enumerate(post) if r["type"] == "user")
    post[first_prompt] = {**post[first_prompt], "parentUuid": tail["uuid"]}
    out = [*pre, boundary, summary, *post]
    return [{**r, "version": VERSION} if "version" in r else r for r in out]


def _chain(recs: list[dict[str, Any]], tail: str, head: str) -> list[str]:
    """uuids from ``head`` to ``tail`` by parentUuid (walked from the tail)."""
    parent = {r["uuid"]: r.get("parentUuid") for r in recs if r.get("uuid")}
    out = [tail]
    while out[-1] != head:
        out.append(parent[out[-1]])
    return out[::-1]


def _write(tmp_path: Path, recs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "2f8b1c4d-6a73-4e9b-91c0-5d7f3a8e2b46.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _walk(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Responses (distinct message ids) with their recorded prompts, and the texts the kept
    records hold, by a plain walk of the records."""
    prompts: dict[str, int] = {}
    for r in recs:
        if r["type"] == "assistant":
            u = r["message"]["usage"]
            prompts[r["message"]["id"]] = u["input_tokens"] + u.get(
                "cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
    meta = next(r for r in recs if r.get("subtype") == "compact_boundary")["compactMetadata"]
    kept_texts = []
    for r in recs:
        if r.get("uuid") in meta["preservedMessages"]["uuids"]:
            for b in r["message"]["content"]:
                kept_texts.append({"text": b.get("text"), "thinking": b.get("thinking"),
                                   "tool_result": b.get("content"),
                                   "tool_use": json.dumps(b.get("input"), ensure_ascii=False)
                                   }[b["type"]])
    return {"prompts": prompts, "meta": meta, "kept_texts": [t for t in kept_texts if t]}


def test_the_manual_compaction_is_on_the_path(tmp_path: Path) -> None:
    recs = compacted()
    facts = _walk(recs)
    parsed = parse_file(_write(tmp_path, recs), tmp_path)
    assert parsed.tables is not None
    [run] = parsed.tables.runs.to_pylist()  # no spurious branch run from the summary
    assert run["n_harness_compactions"] == 1  # was 0: the boundary was off the path
    assert run["harness"] == f"claude-code {VERSION}"
    assert run["n_requests"] == len(facts["prompts"])
    assert run["recorded_input_tokens"] == sum(facts["prompts"].values())
    [event] = [e for e in parsed.tables.events.to_pylist() if e["kind"] == "compaction"]
    assert (event["trigger"], event["pre_tokens"]) == ("manual", facts["meta"]["preTokens"])
    msgs = parsed.tables.messages.to_pylist()
    text_of: dict[int, list[str]] = {}
    for m in msgs:
        text_of.setdefault(m["msg"], []).append(m["text"])
    assert text_of[event["summary_msg"]] == [SUMMARY]
    # the preserved records' messages, before the boundary, re-attached after the summary
    kept = [t for i in event["preserved_msgs"] for t in text_of[i] if t]
    assert kept == facts["kept_texts"]
    assert all(i < event["msg"] for i in event["preserved_msgs"])
    # each record once: nothing off the path, the summary and boundary modelled
    assert not any("off the conversation path" in k for k in parsed.coverage)
    assert parsed.coverage["system/compact_boundary"] == {"modelled": 1}


def test_the_replay_sends_summary_then_kept_records_then_the_rest(tmp_path: Path) -> None:
    recs = compacted()
    facts = _walk(recs)
    corpus = open_corpus([_write(tmp_path, recs)], cache_dir=tmp_path / "ds")
    [rid] = corpus.run_ids
    run = corpus.prepared(rid)
    # every response is one request with its recorded prompt, in the order of the records
    assert run.recorded_input == list(facts["prompts"].values())
    # what the harness put in place of the history: the summary, then the kept records
    assert run.harness_summary_text[0].split("\n")[0] == SUMMARY.split("\n")[0]
    for text in facts["kept_texts"]:
        assert text in run.harness_summary_text[0]
    assert run.harness_trigger == ["manual"]
    first_after = next(r for r in recs[recs.index(next(
        r for r in recs if r.get("isCompactSummary"))):] if r["type"] == "user"
        and not r.get("isCompactSummary"))
    assert run.text[run.harness_boundary[0]] == first_after["message"]["content"]
    # its size: the summary's tokens and the kept records' (counted here with the tokenizer)
    assert run.harness_summary_tokens[0]["o200k_base"] == sum(
        count_tokens([SUMMARY, *facts["kept_texts"]], "o200k_base"))
    # replayed: the user's /compact applied before the first request after it; the context
    # then holds the summary with the kept records and what followed, nothing before
    for name in ("none", "claude-code"):
        trace = replay(run, load_policy(name), calibration=corpus.calibration(rid))
        act = trace.columns("actions")
        manual = [(r, u) for t, r, u in zip(act["tier"], act["request"], act["undone"])
                  if t == MANUAL_TIER]
        assert manual == [(run.harness_first_request[0], False)], name


def test_a_segment_whose_tail_was_not_written_is_not_relinked(tmp_path: Path) -> None:
    """The client writes the boundary before the kept records are all on disk when it is killed
    between the two (sessionStorage.ts: the tail→head walk breaks, nothing is relinked).  Such
    a file still has its compaction, and every response there is one request."""
    recs = compacted()
    tail_uuid = recs[28]["uuid"]
    recs = [r for r in recs if r.get("uuid") != tail_uuid]
    facts = _walk(recs)
    parsed = parse_file(_write(tmp_path, recs), tmp_path)
    assert parsed.tables is not None
    [run] = parsed.tables.runs.to_pylist()
    assert run["n_harness_compactions"] == 1
    assert run["n_requests"] == len(facts["prompts"])
    assert run["recorded_input_tokens"] == sum(facts["prompts"].values())


def test_inspect_counts_the_messages_summarised(tmp_path: Path) -> None:
    """``replay inspect`` names how many messages the summary replaced: those before the
    boundary less the kept ones, by a plain walk (a user or attachment record is a message, a
    response is one message per message id)."""
    recs = compacted()
    at = next(i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary")
    before = recs[:at]
    n_before = sum(r["type"] == "user" for r in before) + sum(
        r["type"] == "attachment" for r in before) + len(
        {r["message"]["id"] for r in before if r["type"] == "assistant"})
    meta = recs[at]["compactMetadata"]
    kept = [r for r in before if r.get("uuid") in meta["preservedMessages"]["uuids"]]
    n_kept = sum(r["type"] != "assistant" for r in kept) + len(
        {r["message"]["id"] for r in kept if r["type"] == "assistant"})
    report = inspect_file(_write(tmp_path, recs))
    [note] = [e for e in report.runs[0].events if e.kind == "compaction"]
    assert f"{n_before - n_kept} message(s) summarised" in note.detail
    assert f"{n_kept} message(s) re-attached after it" in note.detail
