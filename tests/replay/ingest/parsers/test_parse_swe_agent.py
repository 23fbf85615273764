"""SWE-agent ``.traj`` parser: facts counted from the raw JSON of every sample, and bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file
from tests.conftest import SAMPLES
from tests.replay.ingest.parsers.parsed_rows import assert_detected_only_in, table_rows

FORMAT_DIR = "swe-agent"
SAMPLE_NAMES = sorted(p.name for p in (SAMPLES / FORMAT_DIR).glob("*.traj"))


def _parsed(path: Path) -> ParsedFile:
    parsed = parse_file(path, path.parent)
    assert parsed.format == "swe_agent"
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    return parsed


def test_all_samples_are_listed(samples: Path) -> None:
    assert SAMPLE_NAMES == sorted(p.name for p in (samples / FORMAT_DIR).glob("*.traj"))
    assert len(SAMPLE_NAMES) == 5


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_counts_match_raw_json(samples: Path, name: str) -> None:
    path = samples / FORMAT_DIR / name
    raw = json.loads(path.read_text())
    steps = raw["trajectory"]
    acted = [s for s in steps if (s.get("action") or "").strip()]

    parsed = _parsed(path)
    assert not parsed.issues
    run = table_rows(parsed, "runs")[0]
    msgs = table_rows(parsed, "messages")
    reqs = table_rows(parsed, "requests")

    assert run["n_requests"] == len(reqs) == len(steps)
    assert run["n_tool_calls"] == len(acted)
    assert run["n_tool_results"] == len(acted)
    assert run["n_orphan_results"] == 0
    assert run["n_harness_compactions"] == 0
    # no per-request usage in SWE-agent logs: only run totals in info.model_stats
    assert run["recorded_input_tokens"] is None and run["recorded_output_tokens"] is None
    assert all(r["input_tokens"] is None and r["output_tokens"] is None for r in reqs)

    # every result has exactly one earlier call with the same id
    calls = [(i, r) for i, r in enumerate(msgs) if r["kind"] == "tool_call"]
    results = [(i, r) for i, r in enumerate(msgs) if r["kind"] == "tool_result"]
    for i, res in results:
        earlier = [j for j, c in calls if c["call_id"] == res["call_id"] and j < i]
        assert len(earlier) == 1, res["call_id"]
        assert res["role"] == "tool"

    # observation of acted step k is the text of result k
    assert [r["text"] for _, r in results] == [s.get("observation") or "" for s in acted]

    # each request's output is an assistant message; they come in step order
    roles = {r["msg"]: r["role"] for r in msgs}
    outs = [r["output_msg"] for r in reqs]
    assert outs == sorted(outs) and all(roles[o] == "assistant" for o in outs)

    # the opening = history before its first non-demo assistant message
    history = raw.get("history") or []
    first_assistant = next(k for k, m in enumerate(history)
                           if m["role"] == "assistant" and not m.get("is_demo"))
    assert outs[0] == first_assistant
    opening = history[:first_assistant]
    assert [roles[k] for k in range(first_assistant)] == [m["role"] for m in opening]

    # function-calling runs keep the recorded call ids of every observation in history
    fc_ids = {cid for m in history for cid in m.get("tool_call_ids") or []}
    assert fc_ids <= {c["call_id"] for _, c in calls}

    config = raw.get("replay_config")
    config = json.loads(config) if isinstance(config, str) else config
    model = config["agent"]["model"]["name"] if config else ""
    assert run["model"] == model
    version = raw["info"].get("swe_agent_version")
    assert run["harness"] == (f"swe-agent {version}" if version else "swe-agent")


def test_plain_text_step_and_requery_prompt(samples: Path) -> None:
    """Claude run: one step answered without a tool call; the harness's reply follows it."""
    path = samples / FORMAT_DIR / "claude-4-sonnet-20250514__sympy__sympy-13372.traj"
    raw = json.loads(path.read_text())
    steps = raw["trajectory"]
    empty = [k for k, s in enumerate(steps) if not s["action"].strip()]
    assert len(empty) == 1
    k = empty[0]
    reply = steps[k + 1]["query"][-1]
    assert reply["role"] == "user"
    msgs = table_rows(_parsed(path), "messages")
    texts = [(r["role"], r["kind"], r["text"]) for r in msgs]
    at = texts.index(("assistant", "text", steps[k]["response"]))
    assert texts[at + 1] == ("user", "text", reply["content"][0]["text"]
                             if isinstance(reply["content"], list) else reply["content"])


def test_editor_actions_become_dict_args(samples: Path) -> None:
    path = samples / FORMAT_DIR / "lm_32b__sympy__sympy-21930.traj"
    raw = json.loads(path.read_text())
    views = [s["action"] for s in raw["trajectory"]
             if s["action"].startswith("str_replace_editor view")]
    msgs = table_rows(_parsed(path), "messages")
    editor = [r for r in msgs if r["kind"] == "tool_call" and r["tool"] == "str_replace_editor"
              and json.loads(r["text"])["command"] == "view"]
    assert len(editor) == len(views)
    for call, action in zip(editor, views):
        assert call["op"] == "read" and call["path"] == action.split()[2]
    ranged = [json.loads(c["text"]) for c in editor if "view_range" in c["text"]]
    assert ranged and all(isinstance(a["view_range"], list) for a in ranged)


def test_detection(samples: Path) -> None:
    assert_detected_only_in(samples, FORMAT_DIR, "swe_agent")


# --- bad input ----------------------------------------------------------------------------

def _step(k: int) -> dict[str, Any]:
    return {"action": f"ls dir{k}", "observation": f"out {k}", "response": f"look {k}",
            "thought": f"look {k}"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.traj"
    path.write_text(text)
    return path


def _doc(steps: list[Any]) -> str:
    return json.dumps({"trajectory": steps, "history": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"}],
        "info": {"swe_agent_version": "1.0.0"}}, indent=1)


def test_malformed_line_in_the_middle_keeps_earlier_steps(tmp_path: Path) -> None:
    lines = _doc([_step(k) for k in range(4)]).split("\n")
    bad = next(n for n, line in enumerate(lines) if '"ls dir2"' in line)
    lines[bad] = '  "action": "ls dir2" oops,'
    parsed = parse_file(_write(tmp_path, "\n".join(lines)), tmp_path)
    assert parsed.tables is not None
    assert parsed.tables.runs["n_requests"][0].as_py() == 2
    assert any(i.line == bad + 1 and "malformed JSON" in i.reason for i in parsed.issues)
    assert any(f":{bad}:" in str(i) and "kept the 2 readable" in str(i) for i in parsed.issues)


def test_truncated_file_keeps_complete_steps(tmp_path: Path) -> None:
    text = _doc([_step(k) for k in range(3)])
    cut = text.index('"ls dir2"')
    parsed = parse_file(_write(tmp_path, text[:cut]), tmp_path)
    assert parsed.tables is not None
    assert parsed.tables.runs["n_tool_calls"][0].as_py() == 2
    last_line = text[:cut].count("\n") + 1
    assert any(i.line == last_line and "malformed JSON" in i.reason for i in parsed.issues)


def test_wrong_typed_step_is_reported_and_skipped(tmp_path: Path) -> None:
    steps: list[Any] = [_step(0), {**_step(1), "action": 5}, "not a step", _step(3)]
    text = _doc(steps)
    parsed = parse_file(_write(tmp_path, text), tmp_path)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_requests"] == 2 and run["n_tool_results"] == 2
    lines = text.split("\n")
    step1 = next(n for n, line in enumerate(lines) if '"action": 5' in line)  # inside step 1
    reasons = {i.line: i.reason for i in parsed.issues}
    assert "trajectory[1]: action is int" in reasons[step1]  # its "{" is the line above
    step2 = next(n for n, line in enumerate(lines) if '"not a step"' in line) + 1
    assert "trajectory[2]" in reasons[step2]
    texts = [r["text"] for r in parsed.tables.messages.to_pylist() if r["kind"] == "tool_result"]
    assert texts == ["out 0", "out 3"]


def test_empty_and_non_trajectory_files(tmp_path: Path) -> None:
    empty = parse_file(_write(tmp_path, ""), tmp_path, fmt="swe_agent")
    assert empty.tables is None and "empty file" in str(empty.issues[0])
    other = parse_file(_write(tmp_path, '{"trajectory": 3}'), tmp_path, fmt="swe_agent")
    assert other.tables is None and "no trajectory[] list" in str(other.issues[0])


def _raw_types(raw: dict[str, Any]) -> tuple[Counter[str], int]:
    """Records per type counted from the raw JSON (steps, history entries, other top-level
    keys), and how many history entries open the chat (before the first real assistant turn)."""
    out: Counter[str] = Counter()
    for s in raw["trajectory"]:
        out["step/action" if (s.get("action") or "").strip() else "step/message"] += 1
    opening, opened = 0, True
    for m in raw.get("history", []):
        kind = f"/{m['message_type']}" if m.get("message_type") else ""
        out[f"history/{m['role']}{kind}{' (demo)' if m.get('is_demo') else ''}"] += 1
        opened = opened and not (m["role"] == "assistant" and not m.get("is_demo"))
        opening += opened
    for key in raw:
        if key not in ("trajectory", "history"):
            out[key] += 1
    return out, opening


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_record_is_counted_in_coverage(samples: Path, name: str) -> None:
    path = samples / FORMAT_DIR / name
    raw = json.loads(path.read_text())
    expected, opening = _raw_types(raw)
    cov = _parsed(path).coverage
    assert {t: sum(f.values()) for t, f in cov.items()} == dict(expected)
    fates = Counter(f for fs in cov.values() for f in fs for _ in range(fs[f]))
    assert fates["unknown"] == 0
    assert fates["modelled"] == len(raw["trajectory"]) + opening
    assert fates["skipped"] == len(raw["history"]) - opening + len(raw) - 2


def test_unknown_roles_keys_and_bad_steps_are_counted_unknown(tmp_path: Path) -> None:
    doc = json.loads(_doc([_step(0), "not a step"]))
    doc["history"].insert(1, {"role": "critic", "content": "SECRET REVIEW"})
    doc["attempts"] = []
    parsed = parse_file(_write(tmp_path, json.dumps(doc)), tmp_path)
    assert parsed.tables is not None
    assert parsed.coverage["history/critic"] == {"unknown": 1}
    assert parsed.coverage["attempts"] == {"unknown": 1}
    assert parsed.coverage["step (malformed)"] == {"unknown": 1}
    assert parsed.coverage["history/user"] == {"modelled": 1}
    texts = [r["text"] for r in parsed.tables.messages.to_pylist()]
    assert "SECRET REVIEW" not in texts  # not read as a user message
