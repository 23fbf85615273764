"""Inspect AI parser: Inspect's own test logs (.json and .eval) and a hand-made compaction log,
counted against a plain walk of the samples; zip bounds and hostile input."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.discover import discover
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import detect_format, inspect_ai
from replay.ingest.parsers.source import Issue, Source

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inspect_ai"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".eval"))


def _source(path: Path, data: bytes | None = None) -> Source:
    data = path.read_bytes() if data is None else data
    return Source(path=str(path), rel=path.name, data=data, sha256=hashlib.sha256(data).hexdigest())


def _samples(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["samples"]
    with zipfile.ZipFile(path) as z:
        return [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def _independent(sample: dict[str, Any]) -> dict[str, Any]:
    """Counts from one sample: the agent's model calls are those outside scorer spans/steps
    and other than the call whose answer became a compaction summary."""
    events = sample["events"]
    spans = {e["id"]: e for e in events if e["event"] == "span_begin"}
    pool = sample.get("message_pool") or (sample.get("events_data") or {}).get("messages") or []
    summaries = [_text(m["content"]) for e in events if e["event"] == "model"
                 for m in e["input"] if (m.get("metadata") or {}).get("summary")]
    calls, scoring = [], 0
    for e in events:
        if e["event"] == "step" and e.get("type") == "scorer":
            scoring += 1 if e["action"] == "begin" else -1
        if e["event"] != "model" or scoring:
            continue
        span, in_scorer = e.get("span_id"), False
        while span in spans:
            in_scorer |= spans[span]["type"] == "scorer"
            span = spans[span].get("parent_id")
        answer = _text(e["output"]["choices"][0]["message"]["content"])
        if not in_scorer and not any(answer and answer in s for s in summaries):
            calls.append(e)
    seen = [m for e in events if e["event"] == "model" for m in e["input"]] + pool + \
        sample["messages"] + [e["output"]["choices"][0]["message"] for e in calls]
    results = {m["tool_call_id"] for m in seen if m["role"] == "tool"}
    tool_calls = {tc["id"] for m in seen if m["role"] == "assistant"
                  for tc in m.get("tool_calls") or []}
    usages = [e["output"]["usage"] for e in calls if e["output"].get("usage")]
    # the whole prompt: total − output where the total is recorded (Anthropic's total adds the
    # cache parts, OpenAI's is prompt + completion: true before and after Inspect 0.3.184,
    # where input_tokens stopped holding OpenAI's cache reads)
    full = [u["total_tokens"] - u["output_tokens"] if u.get("total_tokens") else
            u["input_tokens"] + (u.get("input_tokens_cache_read") or 0)
            + (u.get("input_tokens_cache_write") or 0) for u in usages]
    return {"n_requests": len(calls), "n_tool_calls": len(tool_calls),
            "n_tool_results": len(results),
            "n_harness_compactions": sum(e["event"] == "compaction" for e in events),
            "recorded_input_tokens": sum(full) if full else None,
            "recorded_output_tokens": sum(u["output_tokens"] for u in usages) if usages else None}


def test_fixtures_present() -> None:
    assert len(NAMES) == 6
    assert (FIXTURES / "SOURCES.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_counts_match_a_plain_walk(name: str) -> None:
    path = FIXTURES / name
    parsed = parse_file(path, path.parent)
    assert parsed.format == "inspect_ai"
    assert parsed.tables is not None and not parsed.issues, [str(i) for i in parsed.issues]
    runs = parsed.tables.runs.to_pylist()
    samples = _samples(path)
    assert len(runs) == len(samples)
    got = {r["agent"]: r for r in runs}
    for s in samples:
        run = got[f"sample {s['id']} epoch {s['epoch']}"]
        expected = _independent(s)
        assert {k: run[k] for k in expected} == expected, s["id"]
        assert run["n_orphan_results"] == 0


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith(".json")])
def test_a_json_log_of_an_eval_set_is_read(name: str, tmp_path: Path) -> None:
    """Inspect's current ``EvalSpec`` begins with ``eval_set_id``, written only for a log of an
    eval set (``inspect eval-set``, ``--log-format json``): its header was not recognised (the
    file went to the chat parser, 'expected chat messages').  The same counts as the plain walk
    of its samples."""
    doc = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    doc["eval"] = {"eval_set_id": "S4mpleSet1d", **doc["eval"]}
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    parsed = parse_file(path, path.parent)
    assert parsed.format == "inspect_ai" and parsed.tables is not None, parsed.issues
    got = {r["agent"]: r for r in parsed.tables.runs.to_pylist()}
    for sample in doc["samples"]:
        expected = _independent(sample)
        run = got[f"sample {sample['id']} epoch {sample['epoch']}"]
        assert {k: run[k] for k in expected} == expected


@pytest.mark.parametrize("name", NAMES)
def test_every_event_is_counted(name: str) -> None:
    path = FIXTURES / name
    src = _source(path)
    inspect_ai.parse(src, [])
    n_events = sum(len(s["events"]) for s in _samples(path))
    counted = sum(n for (t, _), n in src.coverage.counts.items() if t.startswith("event/"))
    assert counted == n_events
    assert src.coverage.total("unknown") == 0


def test_compaction_summary_and_trim() -> None:
    path = FIXTURES / "hand-made-compaction.json"
    (draft,) = inspect_ai.parse(_source(path), [])
    kinds, texts = draft.messages["kind"], draft.messages["text"]
    summaries = [t for k, t in zip(kinds, texts) if k == "summary"]
    assert len(summaries) == 1 and "<summary>" in summaries[0]  # a trim writes no summary
    ev = draft.events
    assert ev["kind"] == ["compaction", "compaction"] and draft.run["n_harness_compactions"] == 2
    assert list(zip(ev["trigger"], ev["pre_tokens"], ev["post_tokens"])) == [
        ("auto", 1760, 410), ("manual", 560, 380)]
    assert ev["summary_msg"][0] == draft.messages["msg"][kinds.index("summary")]
    assert ev["summary_msg"][1] is None
    # a summary keeps the system prompt and the task; the trim keeps those, the summary, the
    # last call and its result
    at = {m: i for i, m in enumerate(draft.messages["msg"])}
    roles = [[draft.messages["role"][at[m]] for m in kept] for kept in ev["preserved_msgs"]]
    assert roles == [["system", "user"], ["system", "user", "assistant", "tool"]]
    assert ev["preserved_msgs"][1][1] == ev["summary_msg"][0]
    assert "GRADE" not in "".join(texts)  # the scorer's call is not the agent's
    # the summariser's prompt is not context; the result it summarised is
    assert not any("continuation summary" in t for t in texts)
    assert "/repo/setup_helpers.py:3" in "".join(texts)


def test_pooled_inputs_are_resolved() -> None:
    path = FIXTURES / "log_message_deduplication.eval"
    (draft,) = inspect_ai.parse(_source(path), [])
    assert draft.messages["kind"].count("tool_result") == 5
    assert draft.messages["text"][0] == "Guess the number"


def test_zip_bounds_and_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = (FIXTURES / "log_message_deduplication.eval").read_bytes()
    monkeypatch.setenv("CTXREPLAY_MAX_DOCUMENT_BYTES", "1000")  # the documented way to set it
    issues: list[Issue] = []
    src = _source(tmp_path / "x.eval", data)
    assert inspect_ai.parse(src, issues) == []  # every sample entry is over the bound
    assert any("over 1,000" in i.reason for i in issues)
    assert src.coverage.by_type()["zip/samples (too large)"] == {"unknown": 1}
    monkeypatch.undo()
    issues = []
    assert inspect_ai.parse(_source(tmp_path / "y.eval", data[: len(data) // 2]), issues) == []
    assert issues and "zip" in issues[0].reason


def test_hostile_sample(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"model": 3}}))
        z.writestr("samples/1_epoch_1.json", json.dumps(
            {"id": 1, "epoch": 1, "events": [
                {"event": "model", "input": "x", "input_refs": [[0, "a"]],
                 "output": {"choices": [{"message": {"role": "assistant", "content": 5,
                                                     "tool_calls": "no"}}],
                            "usage": {"input_tokens": "1"}}},
                {"event": "warp"}, 7]}))
        z.writestr("samples/2_epoch_1.json", "[1, 2")
    issues: list[Issue] = []
    src = _source(tmp_path / "h.eval", buf.getvalue())
    (draft,) = inspect_ai.parse(src, issues)
    assert draft.run["n_requests"] == 1 and draft.requests["input_tokens"] == [None]
    assert src.coverage.by_type()["event/warp"] == {"unknown": 1}
    assert sorted(i.reason.split(":")[0] for i in issues) == [
        "eval.model is int, not a string (read as empty)", "message 0", "request 0",
        "zip entry 'samples/2_epoch_1.json'"]  # the model 3, the string count, and the
    # answer's content 5 (read as empty) are said
    assert any(i.reason == "message 0: content is int, not a string (read as empty)"
               for i in issues)


def test_sniff_and_discover(tmp_path: Path) -> None:
    for name in NAMES:
        assert detect_format(name, (FIXTURES / name).read_bytes()[:65536]) == "inspect_ai"
    assert not inspect_ai.sniff("x.json", b'{"messages": [{"role": "user", "content": "x"}]}')
    assert not inspect_ai.sniff("x.zip", b"PK\x03\x04" + b"\x00" * 40 + b"word/document.xml")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.eval").write_bytes(b"PK")
    assert [f.name for f, _ in discover([tmp_path / "logs"])] == ["run.eval"]


def test_openai_usage_before_0_3_184_holds_its_cache_reads() -> None:
    """The real browser log (Inspect 0.3.95, gpt-4o-mini) records, beside each call's usage,
    the API's own response: its prompt_tokens (cache reads included) are Inspect's
    input_tokens, so the whole prompts are those, 15,235 together, not 15,235 plus the 9,088
    tokens read from the cache again (24,323)."""
    path = FIXTURES / "2025-05-12T20-27-36-04-00_browser.json"
    raw = [e["call"]["response"]["usage"] for s in _samples(path) for e in s["events"]
           if e["event"] == "model"]
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None
    requests = parsed.tables.requests.to_pylist()
    assert [q["input_tokens"] for q in requests] == [u["prompt_tokens"] for u in raw]
    assert [q["cache_read_tokens"] for q in requests] == \
        [u["prompt_tokens_details"]["cached_tokens"] for u in raw]
    assert parsed.tables.runs.to_pylist()[0]["recorded_input_tokens"] == 15235
    assert not parsed.issues
