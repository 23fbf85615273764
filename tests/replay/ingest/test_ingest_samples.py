"""Ingest of the real samples into the Parquet store: every count checked against the raw files
(walked here without the parsers), each result paired with one earlier call, every block
counted once, the same bytes from a serial and a parallel ingest.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.ingest_report import IngestReport
from tests.replay.ingest.ingest_helpers import _cli_runs, _pairing_violations, _runs, _store_bytes

MINI_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
FORMAT_DIRS = {"claude-code": "claude_code", "codex": "codex", "mini-swe-agent": "mini_swe_agent",
               "swe-agent": "swe_agent", "openhands": "openhands"}


def _raw_counts(path: Path, fmt: str) -> dict[str, int]:
    """Requests, tool calls and tool results counted straight from a raw file (no parser)."""
    if fmt == "claude_code":
        recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        assistant = [r for r in recs if r.get("type") == "assistant"
                     and r["message"].get("model") != "<synthetic>"]
        calls = {b["id"] for r in assistant for b in r["message"]["content"]
                 if b.get("type") == "tool_use"}
        results = sum(b.get("type") == "tool_result" for r in recs if r.get("type") == "user"
                      and isinstance(r["message"]["content"], list)
                      for b in r["message"]["content"])
        return {"requests": len({r["message"]["id"] for r in assistant}),
                "tool_calls": len(calls), "tool_results": results}
    if fmt == "codex":
        recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        modern = "payload" in recs[0]
        items = [r["payload"] for r in recs if r.get("type") == "response_item"] if modern \
            else [r for r in recs if "type" in r]
        out = {"tool_calls": sum(i["type"] in ("function_call", "custom_tool_call",
                                               "web_search_call", "local_shell_call")
                                 for i in items),
               # a web search call carries its (unrecorded) result: one result each
               "tool_results": sum(i["type"] in ("function_call_output", "custom_tool_call_output",
                                                 "web_search_call") for i in items)}
        if modern:  # one request per change of the running token total
            totals = [r["payload"]["info"]["total_token_usage"] for r in recs
                      if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count"
                      and r["payload"].get("info")]
            out["requests"] = sum(1 for k, t in enumerate(totals) if k == 0 or t != totals[k - 1])
        return out
    doc = json.loads(path.read_text(encoding="utf-8"))
    if fmt == "swe_agent":
        acted = [s for s in doc["trajectory"] if (s.get("action") or "").strip()]
        return {"requests": len(doc["trajectory"]), "tool_calls": len(acted),
                "tool_results": len(acted)}
    if fmt == "mini_swe_agent":
        chat = doc if isinstance(doc, list) else doc["messages"]
        acting = [k for k, m in enumerate(chat) if m["role"] == "assistant"
                  and len(MINI_BLOCK.findall(m["content"])) == 1]
        return {"requests": sum(m["role"] == "assistant" for m in chat),
                "tool_calls": len(acting),
                "tool_results": sum(k + 1 < len(chat) and chat[k + 1]["role"] == "user"
                                    for k in acting),
                "messages": len(chat)}
    if fmt == "openhands":
        actions = [e for e in doc if "action" in e and e.get("tool_call_metadata")]
        ids = {e["id"] for e in actions}
        return {"requests": len({e["tool_call_metadata"]["model_response"]["id"] for e in actions}),
                "tool_calls": len(actions),
                "tool_results": sum("observation" in e and e.get("cause") in ids for e in doc)}
    raise AssertionError(fmt)


@pytest.fixture(scope="module")
def sample_store(samples: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IngestReport]:
    out = tmp_path_factory.mktemp("ingest") / "store"
    return out, ingest([samples], out, jobs=2)


def _sample_files(samples: Path) -> dict[str, Path]:
    """Every log under the samples folder (by relative path), found without ``discover``."""
    return {p.relative_to(samples).as_posix(): p for p in samples.rglob("*")
            if p.is_file() and p.suffix in (".jsonl", ".json", ".traj")}


def test_samples_ingest_without_issues(samples: Path,
                                       sample_store: tuple[Path, IngestReport]) -> None:
    out, report = sample_store
    files = _sample_files(samples)
    assert len(files) >= 25
    assert report.issues == [] and report.failed == [] and report.cached == []
    assert sorted(report.parsed) == sorted(files)
    runs = _runs(out)
    assert report.n_runs == len(runs)
    assert {r["source"] for r in runs} == set(files)
    assert report.n_tokens == sum(store.read_store(out).messages["tokens_o200k"].to_pylist())
    assert report.n_tokens > 500_000  # 12 MB of logs: hundreds of thousands of tokens


def test_samples_counts_match_raw_files(samples: Path,
                                        sample_store: tuple[Path, IngestReport]) -> None:
    out, _ = sample_store
    files = _sample_files(samples)
    runs = _runs(out)
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_source.setdefault(r["source"], []).append(r)
    checked = Counter()
    for rel, path in files.items():
        fmt = FORMAT_DIRS[rel.split("/")[0]]
        (run,) = by_source[rel]  # every sample file is one run (subagents have their own files)
        assert run["format"] == fmt, rel
        raw = _raw_counts(path, fmt)
        got = {k: run[f"n_{k}"] for k in raw}
        assert got == raw, rel
        assert run["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        checked[fmt] += 1
    assert set(checked) == set(FORMAT_DIRS.values())
    # tables agree with the run rows
    tables = store.read_store(out)
    msgs = Counter(tables.messages["run_id"].to_pylist())
    reqs = Counter(tables.requests["run_id"].to_pylist())
    for r in runs:
        assert msgs[r["run_id"]] == r["n_blocks"] and reqs[r["run_id"]] == r["n_requests"]


def test_samples_every_result_has_one_earlier_call(sample_store: tuple[Path, IngestReport]) -> None:
    out, _ = sample_store
    tables = store.read_store(out)
    bad = _pairing_violations(tables.messages.to_pylist())
    orphans = {r["run_id"]: r["n_orphan_results"] for r in tables.runs.to_pylist()}
    assert dict(bad) == {k: v for k, v in orphans.items() if v}
    assert sum(bad.values()) == 0  # and the real samples have none


def test_samples_every_block_counted_once(sample_store: tuple[Path, IngestReport]) -> None:
    from replay.ingest.tokens import encoding

    msgs = store.read_store(sample_store[0]).messages
    enc = encoding("o200k_base")
    rows = msgs.select(["text", "tokens_o200k", "n_bytes", "n_chars", "n_lines",
                        "tokens_estimated"]).to_pylist()
    assert all(r["tokens_o200k"] is not None for r in rows)
    # the sanitised Codex samples' markers, found with a pattern of their one shape
    marker = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+) sha=[0-9a-f]+\]")
    n_estimated = 0
    for r in rows[::37]:  # a spread of blocks, recounted independently
        lengths = [int(n) for n in marker.findall(r["text"])]
        rest = marker.sub("", r["text"])
        assert r["tokens_estimated"] == bool(lengths)
        n_estimated += bool(lengths)
        assert r["tokens_o200k"] == len(enc.encode_ordinary(rest)) + (
            math.ceil(sum(lengths) / 3.8) if lengths else 0)
        assert r["n_bytes"] == len(rest.encode()) + sum(lengths)
        assert r["n_chars"] == len(rest) + sum(lengths)
        assert r["n_lines"] == (r["text"].count("\n") + 1 if r["text"] else 0)
    assert n_estimated > 0  # the spread met redacted blocks
    assert msgs["tokens_cl100k"].null_count == len(msgs)  # not asked for


def test_runs_command_lists_every_run(sample_store: tuple[Path, IngestReport]) -> None:
    out, _ = sample_store
    rows = _cli_runs(out)
    runs = _runs(out)
    assert sorted(r["run_id"] for r in rows) == sorted(r["run_id"] for r in runs)
    assert all(r["requests"] == next(x["n_requests"] for x in runs if x["run_id"] == r["run_id"])
               for r in rows)
    msgs = store.read_store(out).messages  # tokens: the sum over each run's message rows
    tokens: dict[str, int] = {}
    for rid, t in zip(msgs["run_id"].to_pylist(), msgs["tokens_o200k"].to_pylist()):
        tokens[rid] = tokens.get(rid, 0) + (t or 0)
    assert {r["run_id"]: r["tokens"] for r in rows} == {r["run_id"]: tokens.get(r["run_id"], 0)
                                                        for r in runs}
    assert sum(tokens.values()) > 0


def test_samples_byte_identical_in_a_second_store(samples: Path, tmp_path: Path,
                                                  sample_store: tuple[Path, IngestReport]) -> None:
    """Same bytes in, same Parquet out: serial ingest elsewhere = the parallel one."""
    report = ingest([samples], tmp_path / "other", jobs=1)
    assert report.failed == []
    assert _store_bytes(tmp_path / "other") == _store_bytes(sample_store[0])
