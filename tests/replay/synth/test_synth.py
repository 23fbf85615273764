"""The synthetic Claude Code corpus: deterministic, well-formed, and parsed cleanly.

Scenarios here are small (tens of requests); one test generates one ``CORPUS`` entry.
Every property is checked against the generated records, never against copied figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from itertools import groupby, pairwise
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.tokens import count_one
from replay.synth.embedded import CORPUS, REGENERATE_COMMAND, write_corpus
from replay.synth.generate import synth_run
from replay.synth.scenario import Scenario

SMALL = Scenario(name="small", seed=7, n_requests=80, n_files=14, file_lines_min=20,
                 file_lines_max=150, task_text="Fix the flaky window test.", p_parallel=0.3,
                 p_error=0.1, p_partial_read=0.5, todo_every_requests=20, turn_every_requests=25,
                 test_output_lines_min=20, test_output_lines_max=60)
COMPACT_AT, BURST_AT, BURST_K, BIG_AT = 32_000, 12, 9, 30
COMPACTING = dataclasses.replace(SMALL, name="compacting", seed=11, n_requests=120,
                                 compact_at_tokens=COMPACT_AT)
BURST = dataclasses.replace(SMALL, name="burst", seed=13, n_requests=40,
                            reread_burst_at_request=BURST_AT, reread_burst_reads=BURST_K,
                            big_output_at_request=BIG_AT, big_output_tokens=5_000)


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def requests(recs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Assistant records grouped by message.id, in file order (groups are contiguous runs)."""
    asst = [r for r in recs if r["type"] == "assistant"]
    return [list(g) for _, g in groupby(asst, key=lambda r: r["message"]["id"])]


def prompt(rec: dict[str, Any]) -> int:
    u = rec["message"]["usage"]
    return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]


def tool_uses(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for r in recs if r["type"] == "assistant" for b in r["message"]["content"]
            if b["type"] == "tool_use"]


@pytest.fixture(scope="module")
def small() -> str:
    return synth_run(SMALL)


@pytest.fixture(scope="module")
def compacting() -> str:
    return synth_run(COMPACTING)


@pytest.fixture(scope="module")
def burst() -> str:
    return synth_run(BURST)


def test_same_scenario_gives_identical_text_and_another_seed_does_not(small: str) -> None:
    assert synth_run(SMALL) == small
    assert synth_run(dataclasses.replace(SMALL, seed=SMALL.seed + 1)) != small


def test_output_does_not_depend_on_the_interpreter_hash_seed(small: str) -> None:
    code = ("import sys, dataclasses; from replay.synth.generate import synth_run; "
            "from replay.synth.scenario import Scenario; "
            f"sys.stdout.write(synth_run(Scenario(**{dataclasses.asdict(SMALL)!r})))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=True)
    assert out.stdout.decode("utf-8") == small


def test_every_line_is_a_json_object_with_a_known_type(small: str) -> None:
    assert small.endswith("\n")
    recs = records(small)
    assert all(isinstance(r, dict) for r in recs)
    assert {r["type"] for r in recs} <= {"user", "assistant", "system", "progress",
                                         "file-history-snapshot"}
    assert {"progress", "file-history-snapshot"} <= {r["type"] for r in recs}


def test_every_result_answers_an_earlier_call_once(small: str) -> None:
    issued: set[str] = set()
    answered: Counter[str] = Counter()
    for r in records(small):
        if r["type"] == "assistant":
            issued.update(b["id"] for b in r["message"]["content"] if b["type"] == "tool_use")
        content = r.get("message", {}).get("content") if r["type"] == "user" else None
        if isinstance(content, list):
            for b in content:
                assert b["type"] == "tool_result"
                assert b["tool_use_id"] in issued
                answered[b["tool_use_id"]] += 1
            assert r["sourceToolAssistantUUID"] == r["parentUuid"]
            assert "toolUseResult" in r
    assert set(answered) == issued and set(answered.values()) == {1}


def test_streamed_records_share_an_id_and_only_the_last_has_the_final_output(small: str) -> None:
    groups = requests(records(small))
    ids = [g[0]["message"]["id"] for g in groups]
    assert len(ids) == len(set(ids)) == SMALL.n_requests  # no id reappears after another one
    assert any(len(g) > 1 for g in groups)
    for g in groups:
        assert all(len(r["message"]["content"]) == 1 for r in g)
        assert len({r["requestId"] for r in g}) == 1
        usages = [dict(r["message"]["usage"], output_tokens=0) for r in g]
        assert all(u == usages[0] for u in usages)
        outs = [r["message"]["usage"]["output_tokens"] for r in g]
        assert all(o < outs[-1] for o in outs[:-1])


def test_usage_splits_the_prompt_into_cache_read_write_and_a_small_tail(small: str) -> None:
    groups = requests(records(small))
    prev = None
    for g in groups:
        u = g[-1]["message"]["usage"]
        assert 1 <= u["input_tokens"] <= 3
        assert u["cache_creation_input_tokens"] > 0
        assert u["cache_read_input_tokens"] in (prev, SMALL.system_overhead_tokens)
        prev = prompt(g[-1])
    reads = [g[-1]["message"]["usage"]["cache_read_input_tokens"] for g in groups[1:]]
    assert sum(r > SMALL.system_overhead_tokens for r in reads) > len(reads) / 2


def test_prompt_grows_between_compactions_and_drops_after_each(compacting: str) -> None:
    recs = records(compacting)
    segments: list[list[int]] = [[]]
    last_of_group = {id(g[-1]) for g in requests(recs)}
    for i, r in enumerate(recs):
        if r.get("subtype") == "compact_boundary":
            assert r["parentUuid"] is None and r["logicalParentUuid"] == recs[i - 1]["uuid"]
            assert r["compactMetadata"]["preTokens"] > COMPACT_AT
            assert recs[i + 1]["isCompactSummary"] is True
            assert recs[i + 1]["message"]["content"].startswith("This session is being continued")
            segments.append([])
        elif id(r) in last_of_group:
            segments[-1].append(prompt(r))
    assert len(segments) >= 2
    for seg in segments:
        assert seg == sorted(seg) and len(set(seg)) == len(seg)
    for before, after in pairwise(segments):
        assert after[0] < before[-1]
        assert before[-1] > COMPACT_AT >= max(before[:-1], default=0)


def test_burst_reads_one_path_k_times_in_a_row(burst: str) -> None:
    groups = requests(records(burst))
    per_request = [[b for r in g for b in r["message"]["content"] if b["type"] == "tool_use"]
                   for g in groups]
    window = per_request[BURST_AT:BURST_AT + BURST_K]
    assert len(window) == BURST_K
    assert all(len(calls) == 1 and calls[0]["name"] == "Read" for calls in window)
    assert len({json.dumps(calls[0]["input"]) for calls in window}) == 1


def test_big_output_arrives_at_its_request_with_about_the_asked_tokens(burst: str) -> None:
    recs = records(burst)
    group = requests(recs)[BIG_AT]
    (call,) = [b for r in group for b in r["message"]["content"] if b["type"] == "tool_use"]
    assert call["name"] == "Bash" and "pytest" in call["input"]["command"]
    (result,) = [b for r in recs if r["type"] == "user"
                 and isinstance(r["message"]["content"], list)
                 for b in r["message"]["content"] if b["tool_use_id"] == call["id"]]
    tokens = count_one(result["content"]) * BURST.claude_token_scale
    assert abs(tokens - BURST.big_output_tokens) < 0.15 * BURST.big_output_tokens
    assert result["is_error"] is True and "FAILED" in result["content"]


def test_tools_act_on_one_consistent_repo(small: str) -> None:
    """Reads show line numbers; each applied Edit's old_string is in the file as last known."""
    recs = records(small)
    calls = {b["id"]: b for b in tool_uses(recs)}
    known: dict[str, str] = {}
    names = Counter(b["name"] for b in calls.values())
    assert {"Read", "Edit", "Bash", "Grep", "TodoWrite"} <= set(names)
    for r in recs:
        content = r.get("message", {}).get("content") if r["type"] == "user" else None
        if not isinstance(content, list):
            continue
        res, call = content[0], calls[content[0]["tool_use_id"]]
        path, tur = call["input"].get("file_path"), r["toolUseResult"]
        if res.get("is_error"):
            continue
        if call["name"] == "Read":
            first = res["content"].split("\n", 1)[0]
            assert first.startswith(f"{tur['file']['startLine']:>6}\u2192")
            if "offset" not in call["input"]:
                known[path] = tur["file"]["content"]
        elif call["name"] == "Write":
            known[path] = call["input"]["content"]
        elif call["name"] == "Edit":
            old, new = call["input"]["old_string"], call["input"]["new_string"]
            if path in known:
                assert known[path].count(old) == 1
                known[path] = known[path].replace(old, new)
            assert tur["originalFile"].count(old) == 1


def test_some_results_are_errors(small: str) -> None:
    errors = [b for r in records(small) if r["type"] == "user"
              and isinstance(r["message"]["content"], list)
              for b in r["message"]["content"] if b.get("is_error")]
    assert errors


def test_timestamps_never_go_back(small: str) -> None:
    ts = [r["timestamp"] for r in records(small) if "timestamp" in r]
    assert ts == sorted(ts) and ts[0].startswith(SMALL.start_ts[:16])


@pytest.mark.parametrize("scenario", [SMALL, COMPACTING, BURST], ids=lambda s: s.name)
def test_parser_reads_generated_runs_cleanly(scenario: Scenario, tmp_path: Path) -> None:
    text = synth_run(scenario)
    path = tmp_path / f"{scenario.name}.jsonl"
    path.write_text(text, encoding="utf-8")
    parsed = parse_file(path, tmp_path)
    assert parsed.format == "claude_code"
    assert [str(i) for i in parsed.issues] == []
    assert parsed.tables is not None
    (run,) = parsed.tables.runs.to_pylist()
    recs = records(text)
    assert run["n_requests"] == len({r["message"]["id"] for r in recs if r["type"] == "assistant"})
    assert run["n_tool_calls"] == run["n_tool_results"] == len(tool_uses(recs))
    assert run["n_orphan_results"] == 0
    assert run["n_harness_compactions"] == sum(r.get("subtype") == "compact_boundary" for r in recs)


def test_corpus_covers_the_failure_cases() -> None:
    names = [s.name for s in CORPUS]
    assert 4 <= len(CORPUS) <= 5 and len(set(names)) == len(names)
    assert all(s.n_requests >= 150 for s in CORPUS)
    assert any(s.compact_at_tokens for s in CORPUS)
    assert any(s.reread_burst_reads >= 50 for s in CORPUS)
    assert any(s.big_output_at_request is not None for s in CORPUS)
    assert any(s.p_write + s.p_edit > 0.35 and s.write_lines_max >= 150 for s in CORPUS)


def test_one_corpus_entry_parses_and_stays_under_the_recorded_window(tmp_path: Path) -> None:
    scenario = next(s for s in CORPUS if s.compact_at_tokens)
    (path,) = write_corpus(tmp_path, (scenario,))
    parsed = parse_file(path, tmp_path)
    assert not parsed.issues and parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["n_requests"] == scenario.n_requests
    assert parsed.tables.runs.to_pylist()[0]["n_harness_compactions"] >= 1
    prompts = [prompt(g[-1]) for g in requests(records(path.read_text(encoding="utf-8")))]
    assert max(prompts) < 200_000


def test_write_corpus_writes_files_and_a_readme(tmp_path: Path) -> None:
    scenarios = (dataclasses.replace(SMALL, n_requests=10), dataclasses.replace(BURST, name="b2"))
    paths = write_corpus(tmp_path / "logs", scenarios)
    assert [p.name for p in paths] == ["small.jsonl", "b2.jsonl"]
    assert paths[0].read_text(encoding="utf-8") == synth_run(scenarios[0])
    readme = (tmp_path / "logs" / "README.md").read_text(encoding="utf-8")
    assert REGENERATE_COMMAND in readme and "generated" in readme
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == \
        ["README.md", "b2.jsonl", "small.jsonl"]


@pytest.mark.parametrize("bad", [{"p_read": 1.5}, {"n_requests": 0}, {"file_lines_min": 500},
                                 {"compact_at_tokens": 1_000}])
def test_invalid_scenarios_name_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad)).split("_")[0]):
        dataclasses.replace(SMALL, **bad)
