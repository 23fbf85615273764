"""Gemini CLI session parser: fixture counts against a plain walk of the records, rewinds,
compression checkpoints, tool responses recorded twice, hostile input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import detect, detect_format, gemini_cli, gemini_cli_history
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "gemini_cli"
NAMES = sorted(p.name for p in FIXTURES.glob("session-*"))


def _source(path: Path, data: bytes | None = None) -> Source:
    data = path.read_bytes() if data is None else data
    return Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())


def _records(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.loads(text)]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _independent(path: Path) -> dict[str, Any]:
    """Counts from the records as Gemini CLI's own loader reads them (last copy of an id
    wins, a rewind drops the rest), keeping what a compression checkpoint drops."""
    msgs: dict[str, dict[str, Any]] = {}
    added: set[str] = set()
    compactions = 0
    for r in _records(path):
        for m in r.get("messages", []) if "sessionId" in r else []:
            msgs[m["id"]] = m
        if "id" in r:
            msgs[r["id"]] = r
        if "$rewindTo" in r:
            ids = list(msgs)
            for i in ids[ids.index(r["$rewindTo"]):]:
                del msgs[i]
        if "messages" in r.get("$set", {}):
            new = {m["id"]: m for m in r["$set"]["messages"]}
            if set(msgs) - set(new):
                compactions += 1
                added |= set(new) - set(msgs)
            msgs.update(new)
    gemini = [m for i, m in msgs.items() if m["type"] == "gemini" and i not in added]
    calls = [tc for m in gemini for tc in m.get("toolCalls", [])]
    answered = {tc["id"] for tc in calls if tc.get("result")}
    answered |= {p["functionResponse"]["id"] for m in msgs.values() if m["type"] == "user"
                 and isinstance(m["content"], list) for p in m["content"] if "functionResponse" in p}
    requests = [m for m in gemini if "model" in m or "tokens" in m]
    return {"n_requests": len(requests), "n_tool_calls": len(calls),
            "n_tool_results": len(answered), "n_harness_compactions": compactions,
            "recorded_input_tokens": sum(m["tokens"]["input"] for m in requests),
            # billed output: Gemini's output leaves the thoughts out (total = input + output +
            # thoughts + tool)
            "recorded_output_tokens": sum(m["tokens"]["total"] - m["tokens"]["input"]
                                          - m["tokens"].get("tool", 0) for m in requests)}


def test_fixtures_present() -> None:
    assert len(NAMES) == 4
    assert (FIXTURES / "SOURCES.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_counts_match_a_plain_walk(name: str) -> None:
    path = FIXTURES / name
    parsed = parse_file(path, path.parent)
    assert parsed.format == "gemini_cli"
    assert parsed.tables is not None and not parsed.issues, [str(i) for i in parsed.issues]
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(path)
    assert {k: run[k] for k in expected} == expected
    assert run["n_orphan_results"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_every_message_record_is_counted(name: str) -> None:
    path = FIXTURES / name
    records = _records(path)
    lines = [r for r in records if "id" in r] + [m for r in records if "sessionId" in r
                                                 for m in r.get("messages", [])]
    src = _source(path)
    gemini_cli.parse(src, [])
    by_type = src.coverage.by_type()
    counted = sum(sum(f.values()) for t, f in by_type.items() if t.startswith("message"))
    assert counted == len(lines)  # (a rewound message's records under message (rewound: …))
    # every record once: the lines, and an older file's document and its messages
    assert src.coverage.total() == len(records) + sum(
        len(r.get("messages", [])) for r in records if "sessionId" in r)
    assert src.coverage.total("unknown") == 0
    assert by_type["metadata"] == {"skipped": 1}


def test_rewind_compaction_and_double_recorded_responses() -> None:
    path = FIXTURES / "session-2026-08-21T13-02-0a9b8c7d.jsonl"
    src = _source(path)
    draft, branch = gemini_cli.parse(src, [])
    texts = draft.messages["text"]
    assert not any("rewrite it in Go" in t or "Go version" in t for t in texts)
    assert src.coverage.by_type()["message (rewound: in the abandoned branch's run)"] == \
        {"modelled": 2}
    # the abandoned branch was sent and paid for: a run of its own, linked to the session's,
    # whose requests are the rewound model messages only (independent walk of the records)
    records = _records(path)
    at = next(i for i, r in enumerate(records) if "$rewindTo" in r)
    target = records[at]["$rewindTo"]
    first = next(i for i, r in enumerate(records) if r.get("id") == target)
    rewound = [r for r in records[first:at] if r.get("type") == "gemini" and "tokens" in r]
    assert branch.run["parent_run_id"] == draft.run["run_id"]
    assert branch.run["agent"] == "abandoned-1"
    assert branch.requests["input_tokens"] == [r["tokens"]["input"] for r in rewound]
    assert any("rewrite it in Go" in t for t in branch.messages["text"])
    before = [r for r in records[:first] if r.get("type") in ("user", "gemini")]
    assert branch.messages["text"][0] == draft.messages["text"][0] and len(before) >= 1
    kinds = draft.messages["kind"]
    assert kinds.count("summary") == 1
    summary = texts[kinds.index("summary")]
    assert summary.startswith("<state_snapshot>") and "Got it." in summary
    # the read_file response sits both in toolCalls[].result and in a user message: once here
    assert draft.messages["call_id"].count("read_file_1") == 2  # the call and one result
    # after the compaction the request's recorded input drops: it is the last request
    assert draft.requests["input_tokens"][-1] == 3120
    # the checkpoint kept the replace call and its result: re-attached after the summary
    ev = draft.events
    assert ev["kind"] == ["compaction"] and ev["summary_msg"] == [draft.messages["msg"][
        kinds.index("summary")]]
    kept = [[k for m, k in zip(draft.messages["msg"], kinds) if m == i] for i in
            ev["preserved_msgs"][0]]
    assert kept == [["tool_call"], ["tool_result"]]


def test_synthetic_model_turn_makes_no_request(tmp_path: Path) -> None:
    lines = [{"sessionId": "s", "projectHash": "p"},
             {"id": "u", "timestamp": "t", "type": "user", "content": "hi"},
             {"id": "g", "timestamp": "t", "type": "gemini",
              "content": [{"text": "Binary content received.", "thought": True}]}]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    (draft,) = gemini_cli.parse(_source(tmp_path / "s.jsonl", data), [])
    assert draft.run["n_requests"] == 0
    assert draft.messages["kind"] == ["text", "reasoning"]


def test_hostile_types_and_truncation(tmp_path: Path) -> None:
    lines = [{"sessionId": "s", "projectHash": "p"},
             {"id": "u", "type": "user", "content": 7},
             {"id": "g", "type": "gemini", "toolCalls": "x", "tokens": [1], "thoughts": 3,
              "model": 5},
             {"id": "h", "type": "gemini", "toolCalls": [{"id": 1, "args": None, "result": 5}]},
             {"$rewindTo": ["u"]}, {"$set": 3}, {"what": "is this"}, {"id": "z", "type": "robot"}]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode() + b'{"id": "cut", "ty'
    issues: list[Issue] = []
    src = _source(tmp_path / "s.jsonl", data)
    (draft,) = gemini_cli.parse(src, issues)
    # the partial last line, each text that is no string (at its record's line), then each
    # field of the wrong type and each record not understood
    assert [(i.line, i.reason.split(" (")[0]) for i in issues] == [
        (len(lines) + 1, "incomplete last line"),
        (2, "message 0: content is int, not a string"),
        (3, "message 1: model is int, not a string"),  # (read as empty)
        (4, "message 2: toolCalls[0].id is int, not a string"),  # (kept as its JSON: '1')
        (4, "message 3: tool result '1': content is int, not a string"),
        (3, "message toolCalls is str, not a list"), (3, "message thoughts is int, not a list"),
        (3, "message tokens is list, not an object"), (5, "$rewindTo is list, not a message id"),
        (6, "$set is int, not an object"), (7, "record of no kind Gemini CLI writes"),
        (8, "message of type 'robot', not one Gemini CLI writes")]
    # "g" names a model (a real call, usage unreadable); "h" names none: synthetic
    assert draft.run["n_requests"] == 1 and draft.run["n_tool_calls"] == 1
    cov = src.coverage.by_type()
    assert cov["message/robot"] == {"unknown": 1}
    assert cov["record (unrecognised)"] == {"unknown": 1}
    assert cov["$set (not an object)"] == {"unknown": 1}
    assert cov["$rewindTo (not a message id)"] == {"unknown": 1}


def test_sniff_is_specific() -> None:
    for name in NAMES:
        head = (FIXTURES / name).read_bytes()[:65536]
        assert detect_format(name, head) == "gemini_cli"
    assert not gemini_cli.sniff("x.jsonl", b'{"type": "user", "sessionId": "s", "uuid": "u"}\n')
    assert not gemini_cli.sniff("x.json", b'{"messages": [{"role": "user", "content": "x"}]}')
    # a file without its metadata line is refused, naming Gemini CLI as the closest format
    near = detect("s.jsonl", b'{"id": "g", "type": "gemini", "content": "hi"}\n').near
    assert ("gemini_cli", "messages of type 'gemini'") in near


@pytest.mark.parametrize("name", NAMES)
def test_a_session_without_its_project_hash_is_still_read(name: str, tmp_path: Path) -> None:
    """Found by a fuzz of the fixtures: a session whose ``projectHash`` is missing went to the
    chat parser, which read no role in its messages (0 runs, "unknown role None" per message).
    The same counts as the plain walk of the file as it was."""
    records = _records(FIXTURES / name)
    for r in records:
        r.pop("projectHash", None)
    path = tmp_path / name
    path.write_text(json.dumps(records[0]) if name.endswith(".json") else
                    "".join(json.dumps(r) + "\n" for r in records))
    parsed = parse_file(path, path.parent)
    assert parsed.format == "gemini_cli" and not parsed.issues, [str(i) for i in parsed.issues]
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(FIXTURES / name)
    assert {k: run[k] for k in expected} == expected


def test_subagent_recording_names_its_session(tmp_path: Path) -> None:
    lines = [{"sessionId": "sub-7", "projectHash": "p", "kind": "subagent"},
             {"id": "u", "timestamp": "t", "type": "user", "content": "look"}]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    (draft,) = gemini_cli.parse(_source(tmp_path / "sub-7.jsonl", data), [])
    assert draft.run["agent"] == "sub-7" and draft.run["harness"] == "gemini-cli (subagent)"


def test_rewinds_past_the_most_branches_are_said_not_made(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rewinds with ``MAX_BRANCHES`` 1: the first is a run of its own, the other two's
    messages are in no run, counted so and said in an issue each (4,000 rewinds were 4,000
    copies of the history: 79 s, 3.3 GB)."""
    monkeypatch.setattr(gemini_cli_history, "MAX_BRANCHES", 1)
    lines: list[dict[str, Any]] = [{"sessionId": "s", "projectHash": "p"}]
    for k in range(3):
        lines += [{"id": f"u{k}", "type": "user", "content": f"try {k}"},
                  {"id": f"g{k}", "type": "gemini", "content": f"answer {k}", "model": "gemini-x",
                   "tokens": {"input": 10, "output": 2}},
                  {"$rewindTo": f"u{k}"}]
    lines += [{"id": "u", "type": "user", "content": "last"}]
    issues: list[Issue] = []
    src = _source(tmp_path / "s.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())
    drafts = gemini_cli.parse(src, issues)
    assert [d.run["agent"] for d in drafts] == ["", "abandoned-1"]
    assert [i.line for i in issues] == [7, 10]
    assert all("message(s) rewound are in no run" in i.reason for i in issues)
    cov = src.coverage.by_type()
    assert cov["message (rewound: in the abandoned branch's run)"] == {"modelled": 2}
    assert cov["message (rewound: in no run)"] == {"skipped": 4}


def test_output_tokens_count_the_thoughts_the_real_session_billed() -> None:
    """The real session's one response records output 8, thoughts 28 and total 4,419 for an
    input of 4,383: its billed output is 36 (4,419 − 4,383), not 8, and its reasoning 28."""
    path = FIXTURES / "session-2026-06-05T04-59-dcbe78d3.json"
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None
    requests = parsed.tables.requests.to_pylist()
    assert [(q["input_tokens"], q["output_tokens"], q["reasoning_tokens"]) for q in requests] \
        == [(4383, 36, 28)]
    assert parsed.tables.runs.to_pylist()[0]["recorded_output_tokens"] == 36
