"""OpenCode parser: export and run-stream fixtures (hand-made, and two real exports of 1.1.13 and
1.1.34) against a plain walk of their parts, the uncached-input normalisation, compaction, part
order, hostile input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import detect, detect_format, opencode
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "opencode"
NAMES = sorted(p.name for p in FIXTURES.glob("*.json*"))


def _source(path: Path, data: bytes | None = None) -> Source:
    data = path.read_bytes() if data is None else data
    return Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())


def _assistant_messages(path: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        parts = [json.loads(line)["part"] for line in text.splitlines() if line.strip()]
        return [({}, parts)]
    doc = json.loads(text)
    return [(m["info"], m["parts"]) for m in doc["messages"] if m["info"]["role"] == "assistant"]


def _independent(path: Path) -> dict[str, Any]:
    """Calls, results and usage from the parts: one call per step-start (or per message
    without steps), the prompt as OpenCode's uncached input plus its cache reads and writes."""
    requests = calls = compactions = 0
    prompt = output = 0
    for info, parts in _assistant_messages(path):
        if info.get("summary"):
            compactions += 1
            continue
        starts = sum(p["type"] == "step-start" for p in parts)
        requests += starts or 1
        calls += sum(p["type"] == "tool" for p in parts)
        usages = [p["tokens"] for p in parts if p["type"] == "step-finish"] or \
            ([info["tokens"]] if not starts else [])
        for t in usages:
            prompt += t["input"] + t["cache"]["read"] + t["cache"]["write"]
            output += t["output"]
    return {"n_requests": requests, "n_tool_calls": calls, "n_tool_results": calls,
            "n_harness_compactions": compactions, "recorded_input_tokens": prompt,
            "recorded_output_tokens": output}


def test_fixtures_present() -> None:
    assert len(NAMES) == 5
    assert (FIXTURES / "SOURCES.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_counts_match_a_plain_walk(name: str) -> None:
    path = FIXTURES / name
    parsed = parse_file(path, path.parent)
    assert parsed.format == "opencode"
    assert parsed.tables is not None and not parsed.issues, [str(i) for i in parsed.issues]
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(path)
    assert {k: run[k] for k in expected} == expected
    assert run["n_orphan_results"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_every_part_is_counted(name: str) -> None:
    path = FIXTURES / name
    src = _source(path)
    opencode.parse(src, [])
    if path.suffix == ".jsonl":
        n_parts = len(_assistant_messages(path)[0][1])
    else:
        n_parts = sum(len(m["parts"]) for m in json.loads(path.read_text())["messages"])
    by_type = src.coverage.by_type()
    counted = sum(sum(f.values()) for t, f in by_type.items()
                  if t.startswith("part/") and t != "part/tool (cleared later)")
    assert counted == n_parts
    assert src.coverage.total("unknown") == 0


@pytest.mark.parametrize("damage", [{"type": "x"}, {"type": ""}, {"type": 0.5}])
def test_an_event_stream_whose_first_line_is_damaged_is_still_read(damage: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    """Found by a fuzz of the fixtures: the stream was told by its first line alone, so a
    first event of another type made the file unknown (or, detected from a later line, read as
    an export: 'malformed JSON').  Now any event line of the head tells it: the same counts as
    the plain walk of the file as it was (the first event is a step-start part, kept)."""
    path = FIXTURES / "run-list.events.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    damaged = tmp_path / path.name
    damaged.write_text("\n".join([json.dumps({**json.loads(lines[0]), **damage}), *lines[1:]])
                       + "\n", encoding="utf-8")
    parsed = parse_file(damaged, damaged.parent)
    assert parsed.format == "opencode" and parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(path)
    assert {k: run[k] for k in expected} == expected


def test_compaction_is_one_summary_and_not_a_request() -> None:
    path = FIXTURES / "cart-discount.export.json"
    (draft,) = opencode.parse(_source(path), [])
    kinds = draft.messages["kind"]
    assert kinds.count("summary") == 1
    at = kinds.index("summary")
    assert draft.messages["text"][at - 1] == "What did we do so far?"
    assert draft.messages["msg"][at] not in draft.requests["output_msg"]
    ev = draft.events
    assert ev["kind"] == ["compaction", "microcompaction"]
    assert ev["trigger"][0] == "auto" and ev["summary_msg"][0] == draft.messages["msg"][at]
    # the read output cleared at T0+90 s takes effect at the first message created after it
    assert ev["call_ids"][1] == ["toolu_01Read9yR"] and ev["msg"][1] == draft.messages["msg"][at]
    assert draft.run["n_harness_compactions"] == 1


def test_unfinished_step_has_unknown_usage_and_interrupted_result() -> None:
    path = FIXTURES / "rebuild-errors.export.json"
    (draft,) = opencode.parse(_source(path), [])
    assert draft.requests["input_tokens"][1] is None  # aborted: its zeros are not usage
    results = [(t, e) for t, k, e in zip(draft.messages["text"], draft.messages["kind"],
                                         draft.messages["is_error"]) if k == "tool_result"]
    assert results == [("Permission denied: rm -rf is blocked by config", True),
                       ("[Tool execution was interrupted]", True)]


def test_hostile_types(tmp_path: Path) -> None:
    doc = {"info": {"id": "ses_x"}, "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": 5}, 7, {"type": "wat"}]},
        {"info": {"role": "assistant", "time": {"created": 1e30}},
         "parts": [{"type": "step-finish", "tokens": {"input": "9", "cache": []}},
                   {"type": "tool", "state": "done"}]},
        {"info": {"role": "robot"}, "parts": []}, "nope", {"info": {"role": "user"}, "parts": 3}]}
    issues: list[Issue] = []
    src = _source(tmp_path / "s.json", json.dumps(doc).encode())
    (draft,) = opencode.parse(src, issues)
    assert len(issues) == 6  # robot, "nope", parts 3, parts without ids, text 5, the string count:
    assert sum("part 0 (text): text is int, not a string (read as empty)" in i.reason
               for i in issues) == 1
    assert sum("have parts without an id" in i.reason for i in issues) == 1
    assert any("tokens.input '9' is not a token count" in i.reason for i in issues)
    assert draft.requests["input_tokens"] == [None]  # one step (its finish put after its tool)
    assert src.coverage.by_type()["part/wat"] == {"unknown": 1}
    assert draft.run["n_tool_results"] == 1


@pytest.mark.parametrize("cache", [{"read": None, "write": 0}, {"write": 0}, {"read": 8064}])
def test_a_cache_count_null_or_missing_leaves_the_prompt_unknown(tmp_path: Path,
                                                                 cache: dict[str, Any]) -> None:
    """OpenCode's input excludes the cache; with a cache count null or missing the full prompt
    is unknown (it read as input + 0: 2,210 against the 10,274 sent), said once; the counts
    that are there are kept, and a usage without a cache object is input alone, as before."""
    path = FIXTURES / "cart-discount.export.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    finishes = [p for m in doc["messages"] if m["info"]["role"] == "assistant"
                for p in m["parts"] if p["type"] == "step-finish"]
    finishes[0]["tokens"]["cache"] = cache
    del finishes[-1]["tokens"]["cache"]
    issues: list[Issue] = []
    (draft,) = opencode.parse(_source(tmp_path / "x.export.json", json.dumps(doc).encode()),
                              issues)
    (base,) = opencode.parse(_source(path), [])
    inputs, before = draft.requests["input_tokens"], base.requests["input_tokens"]
    assert inputs[0] is None and before[0] is not None
    assert draft.requests["cache_read_tokens"][0] == cache.get("read")
    assert inputs[-1] == finishes[-1]["tokens"]["input"]  # no cache object: input alone
    assert inputs[1:-1] == before[1:-1]
    said = ("message 1: tokens.cache has no read or write count (null or missing): the full "
            "prompt (input + cache) is unknown, not input alone")
    assert [i.reason for i in issues if "tokens.cache" in i.reason] == [said]


def test_truncated_export_keeps_readable_messages(tmp_path: Path) -> None:
    data = (FIXTURES / "cart-discount.export.json").read_bytes()
    issues: list[Issue] = []
    (draft,) = opencode.parse(_source(tmp_path / "s.json", data[: len(data) // 2]), issues)
    assert "damaged file" in issues[-1].reason and draft.run["n_requests"] >= 1


def test_sniff_is_specific_and_storage_files_are_explained() -> None:
    for name in NAMES:
        assert detect_format(name, (FIXTURES / name).read_bytes()[:65536]) == "opencode"
    chat = b'{"messages": [{"role": "user", "content": "hi"}]}'
    assert not opencode.sniff("c.json", chat)
    part = json.dumps({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1",
                       "type": "text", "text": "hi"}).encode()
    found = detect("prt_1.json", part)
    assert found.format is None
    assert any(name == "opencode" and "opencode export" in why for name, why in found.near)


def test_real_export_is_read_in_part_id_order() -> None:
    """A real 1.1.34 export lists parts out of id order (step-finish first, step-start last);
    OpenCode's part ids ascend with time, so each step's calls are read in id order: one request
    per step-start, each followed by exactly the tools of that step."""
    path = FIXTURES / "agentlogs-all-tools.export.json"
    doc = json.loads(path.read_text())
    src = _source(path)
    (draft,) = opencode.parse(src, [])
    steps = []  # tools per step, from the parts sorted by id
    shuffled = 0
    for m in doc["messages"]:
        ids = [x["id"] for x in m["parts"]]
        shuffled += ids != sorted(ids)
        if m["info"]["role"] != "assistant":
            continue
        for x in sorted(m["parts"], key=lambda x: x["id"]):
            if x["type"] == "step-start":
                steps.append([])
            elif x["type"] == "tool":
                steps[-1].append(x["tool"])
    assert shuffled > 0
    assert src.coverage.by_type()["message/parts out of id order (read in id order)"] == {
        "modelled": shuffled}
    msgs = draft.messages
    got = []
    for out in draft.requests["output_msg"]:
        got.append([t for t, k, m in zip(msgs["tool"], msgs["kind"], msgs["msg"])
                    if m == out and k == "tool_call"])
    assert got == steps


def test_patch_after_step_finish_is_no_call() -> None:
    """A real 1.1.13 export writes a ``patch`` part after the step-finish of a step that edited
    files: it belongs to that step, not to a usage-less extra call."""
    path = FIXTURES / "agentlogs-crud.export.json"
    doc = json.loads(path.read_text())
    trailing = sum(m["parts"][-1]["type"] == "patch" for m in doc["messages"])
    assert trailing == 3
    src = _source(path)
    (draft,) = opencode.parse(src, [])
    assert None not in draft.requests["input_tokens"]
    assert src.coverage.by_type()["part/patch"] == {"skipped": trailing}
