"""Ingest into the Parquet store: real samples against raw counts, the cache, determinism, bad
input (each reported as ``file:line: what``, the rest kept), and never losing stored runs.

Exit codes (``replay ingest``): 1 when a file could not be ingested at all (or, with
``--strict``, at the first issue of any kind); 0 when every file was ingested, even if some of
its lines were reported and skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import batch as ingest_module
from replay.ingest import store
from replay.ingest.batch import IngestReport, ingest
from replay.ingest.discover import discover
from replay.ingest.parsers import claude_code

MINI_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
FORMAT_DIRS = {"claude-code": "claude_code", "codex": "codex", "mini-swe-agent": "mini_swe_agent",
               "swe-agent": "swe_agent", "openhands": "openhands"}


# --------------------------------------------------------------------------- helpers

def _claude(n_steps: int, *, tag: str = "s", orphan_step: int | None = None,
            texts: list[str] | None = None) -> list[str]:
    """A Claude Code transcript: a prompt, ``n_steps`` × (Read call, its result), a final answer.

    Expected: ``n_steps + 1`` requests, ``n_steps`` calls and results; result ``orphan_step``
    points at a call id that was never made.
    """
    texts = texts or []

    def rec(i: int, typ: str, message: dict[str, Any]) -> str:
        return json.dumps({"parentUuid": None if i == 0 else f"{tag}-u{i - 1}",
                           "isSidechain": False, "sessionId": f"session-{tag}",
                           "version": "2.1.38", "type": typ, "uuid": f"{tag}-u{i}",
                           "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                           "message": message})

    def usage(k: int) -> dict[str, int]:
        return {"input_tokens": 100 + k, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": 7}

    lines = [rec(0, "user", {"role": "user", "content": f"task {tag}: fix the bug"})]
    i = 1
    for k in range(n_steps):
        call = f"toolu_{tag}_{k}"
        lines.append(rec(i, "assistant", {
            "id": f"msg_{tag}_{k}", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "tool_use", "id": call, "name": "Read",
                         "input": {"file_path": f"/repo/f{k}.py"}}], "usage": usage(k)}))
        i += 1
        body = texts[k % len(texts)] if texts else f"contents of f{k}.py\nline 2"
        lines.append(rec(i, "user", {"role": "user", "content": [
            {"type": "tool_result", "content": body,
             "tool_use_id": f"toolu_{tag}_never_called" if k == orphan_step else call}]}))
        i += 1
    lines.append(rec(i, "assistant", {
        "id": f"msg_{tag}_end", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": "done"}], "usage": usage(n_steps)}))
    return lines


def _write(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def _runs(out: Path) -> list[dict[str, Any]]:
    return store.read_store(out).runs.to_pylist()


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _cli_runs(out: Path) -> list[dict[str, Any]]:
    result = _cli("runs", str(out), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _pairing_violations(messages: list[dict[str, Any]]) -> Counter[str]:
    """Per run: tool_result rows without exactly one earlier tool_call of the same call_id."""
    bad: Counter[str] = Counter()
    calls: dict[str, Counter[str]] = {}
    for m in messages:  # store order is context order within a run
        seen = calls.setdefault(m["run_id"], Counter())
        if m["kind"] == "tool_call":
            seen[m["call_id"]] += 1
        elif m["kind"] == "tool_result" and seen[m["call_id"]] != 1:
            bad[m["run_id"]] += 1
    return bad


# --------------------------------------------------------------------------- (a) real samples

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


def _store_bytes(out: Path) -> dict[str, bytes]:
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "manifest.json" in files and any(k.endswith(".parquet") for k in files)
    return files


# --------------------------------------------------------------------------- (b) the cache

SMALL_SAMPLES = ("claude-code/short.jsonl", "claude-code/tool_heavy.jsonl",
                 "codex/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
                 "mini-swe-agent/minirepo_test_github_issue.traj.json",
                 "openhands/basic_interactions.json",
                 "swe-agent/v1fc_gpt4__sweagenttestrepo-1c2844.traj")


@pytest.fixture
def small_copy(samples: Path, tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    for rel in SMALL_SAMPLES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((samples / rel).read_bytes())
    return root


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Sources actually parsed (jobs=1 ingests in this process)."""
    calls: list[str] = []
    real = ingest_module.parse_file

    def spy(path: Path, *args: Any, **kwargs: Any) -> Any:
        calls.append(path.name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(ingest_module, "parse_file", spy)
    return calls


def test_second_ingest_is_all_cached(small_copy: Path, tmp_path: Path,
                                     parse_calls: list[str]) -> None:
    out = tmp_path / "store"
    first = ingest([small_copy], out, jobs=1)
    assert sorted(first.parsed) == sorted(SMALL_SAMPLES) and first.issues == []
    assert len(parse_calls) == len(SMALL_SAMPLES)
    before = _store_bytes(out)

    parse_calls.clear()
    second = ingest([small_copy], out, jobs=1)
    assert parse_calls == []
    assert second.parsed == [] and sorted(second.cached) == sorted(SMALL_SAMPLES)
    assert second.n_runs == first.n_runs and second.failed == [] and second.issues == []
    assert _store_bytes(out) == before

    # a new mtime alone changes nothing: the cache is keyed by content
    for p in small_copy.rglob("*.*"):
        os.utime(p, (time.time() + 100, time.time() + 100))
    assert ingest([small_copy], out, jobs=1).parsed == [] and parse_calls == []


def test_changed_bytes_reparse_only_that_file(small_copy: Path, tmp_path: Path,
                                              parse_calls: list[str]) -> None:
    out = tmp_path / "store"
    ingest([small_copy], out, jobs=1)
    old = store.read_manifest(out)
    changed = "claude-code/tool_heavy.jsonl"
    with (small_copy / changed).open("ab") as f:
        f.write(b"\n")  # one more (blank) line: other bytes, same runs

    parse_calls.clear()
    report = ingest([small_copy], out, jobs=1)
    assert parse_calls == ["tool_heavy.jsonl"]
    assert report.parsed == [changed]
    assert sorted(report.cached) == sorted(set(SMALL_SAMPLES) - {changed})
    new = store.read_manifest(out)
    assert {s for s in new if new[s].key != old[s].key} == {changed}
    assert not (out / "data" / old[changed].key).exists()  # the replaced entry is cleaned up
    assert len(_runs(out)) == len(SMALL_SAMPLES)


def test_other_tokenizers_are_another_cache_key(small_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "store"
    ingest([small_copy], out, jobs=1)
    report = ingest([small_copy], out, jobs=1, tokenizers=("o200k_base", "cl100k_base"))
    assert sorted(report.parsed) == sorted(SMALL_SAMPLES) and report.cached == []
    msgs = store.read_store(out).messages
    assert msgs["tokens_cl100k"].null_count == 0 and msgs["tokens_o200k"].null_count == 0


def test_tokenizer_without_a_column_is_refused_before_anything(small_copy: Path,
                                                              tmp_path: Path) -> None:
    from replay.errors import TokenizerError

    with pytest.raises(TokenizerError, match="r50k_base"):
        ingest([small_copy], tmp_path / "store", tokenizers=("r50k_base",))
    assert not (tmp_path / "store" / "manifest.json").exists()
    result = _cli("ingest", str(small_copy), "--out", str(tmp_path / "s2"), "--tokenizers",
                  "no_such_encoding", "-q")
    assert result.exit_code == 2 and "no_such_encoding" in result.stderr


def test_fully_cached_ingest_loads_no_encoding(small_copy: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading an encoding takes about half a second: a re-ingest with nothing new skips it,
    and one with a new file still loads it before writing anything."""
    out = tmp_path / "store"
    ingest([small_copy], out, jobs=1)
    loaded: list[str] = []
    real = ingest_module.encoder
    monkeypatch.setattr(ingest_module, "encoder", lambda name: loaded.append(name) or real(name))
    report = ingest([small_copy], out, jobs=1)
    assert report.parsed == [] and len(report.cached) == len(SMALL_SAMPLES) and loaded == []
    (small_copy / "extra.jsonl").write_bytes((small_copy / SMALL_SAMPLES[0]).read_bytes())
    report = ingest([small_copy], out, jobs=1)
    assert report.parsed == ["extra.jsonl"] and loaded == ["o200k_base"]


def test_cli_reports_cached_files(small_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "store"
    first = _cli("ingest", str(small_copy), "--out", str(out), "--json", "-q")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["parsed"] == len(SMALL_SAMPLES)
    second = _cli("ingest", str(small_copy), "--out", str(out), "--json", "-q")
    assert second.exit_code == 0
    doc = json.loads(second.stdout)
    assert doc["parsed"] == 0 and doc["cached"] == len(SMALL_SAMPLES) and doc["issues"] == []


# --------------------------------------------------------------------------- (c) determinism

_WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@st.composite
def _transcripts(draw: Any) -> tuple[list[str], int | None]:
    n = draw(st.integers(0, 6))
    orphan = draw(st.none() | st.integers(0, max(n - 1, 0))) if n else None
    texts = draw(st.lists(_WORDS, min_size=1, max_size=4))
    tag = draw(st.sampled_from(["a", "b"]))
    return _claude(n, tag=tag, orphan_step=orphan, texts=texts), orphan


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_transcripts(), st.lists(st.integers(0, 10_000), max_size=2))
def test_random_transcripts_deterministic_and_paired(transcript: tuple[list[str], int | None],
                                                     junk_at: list[int]) -> None:
    """Random Claude-like inputs (with orphans and junk lines): two fresh stores are
    byte-identical, every result pairs with one earlier call or is counted and reported as an
    orphan, with its line."""
    lines, orphan = transcript
    lines = list(lines)
    for k in junk_at:  # malformed lines anywhere but first (the format is sniffed there)
        lines.insert(1 + k % len(lines), "{broken")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = _write(root / "logs" / "t.jsonl", lines)
        r1 = ingest([src], root / "one", jobs=1)
        r2 = ingest([src], root / "two", jobs=1)
        assert _store_bytes(root / "one") == _store_bytes(root / "two")
        assert [str(i) for i in r1.issues] == [str(i) for i in r2.issues]
        tables = store.read_store(root / "one")
        (run,) = tables.runs.to_pylist()
        bad = _pairing_violations(tables.messages.to_pylist())
        assert sum(bad.values()) == run["n_orphan_results"] == (orphan is not None)
        orphan_issues = [i for i in r1.issues if "no earlier call" in i.reason]
        assert len(orphan_issues) == run["n_orphan_results"]
        for i in orphan_issues:
            assert '"toolu_' in lines[i.line - 1] and "never_called" in lines[i.line - 1]
        assert len([i for i in r1.issues if "malformed JSON" in i.reason]) == len(junk_at)


# --------------------------------------------------------------------------- (d) bad input

def _batch(tmp_path: Path, bad_name: str, bad: bytes | list[str], *,
           end: str = "\n") -> tuple[Path, Path, Path]:
    """A folder with one bad file (sorted first) and one good transcript after it."""
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    bad_path = logs / bad_name
    if isinstance(bad, bytes):
        bad_path.write_bytes(bad)
    else:
        _write(bad_path, bad, end=end)
    good = _write(logs / "zz_good.jsonl", _claude(2, tag="good"))
    return logs, bad_path, good


def _assert_issue(report: IngestReport, path: Path, line: int, *words: str) -> None:
    """Exactly one issue, naming the file and line (0: the whole file) and saying what."""
    assert len(report.issues) == 1, [str(i) for i in report.issues]
    text = str(report.issues[0])
    where = f"{path}:{line}: " if line else f"{path}: "
    assert text.startswith(where), text
    for w in words:
        assert w in text, text


def _assert_good_kept(out: Path, report: IngestReport) -> None:
    assert "zz_good.jsonl" in report.parsed
    (good,) = [r for r in _runs(out) if r["source"] == "zz_good.jsonl"]
    assert (good["n_requests"], good["n_tool_calls"], good["n_tool_results"]) == (3, 2, 2)


def _assert_cli(logs: Path, tmp_path: Path, *, exit_code: int, bad_name: str,
                bad_kept: bool, strict: bool = True) -> None:
    result = _cli("ingest", str(logs), "--out", str(tmp_path / "cli"), "-q")
    assert result.exit_code == exit_code, result.output
    assert bad_name in result.stderr  # the issue is printed
    assert {r["source"] for r in _cli_runs(tmp_path / "cli")} == \
        {"zz_good.jsonl", *([bad_name] if bad_kept else [])}
    if not strict:
        return
    # --strict: the first issue fails the ingest and stops it (the good file, sorted after the
    # bad one, is not ingested; nothing from the bad file is stored)
    strict_run = _cli("ingest", str(logs), "--out", str(tmp_path / "strict"), "--strict", "-q",
                  "--jobs", "1")
    assert strict_run.exit_code == 1, strict_run.output
    assert store.read_manifest(tmp_path / "strict") == {}


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    lines = _claude(4, tag="bad")
    lines.insert(5, '{"type": "user", "message": {oops')
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 6, "malformed JSON")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (5, 4, 4)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_truncated_last_line(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    lines.append(lines[-1][: len(lines[-1]) // 2])  # a record cut while being written
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines, end="")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, len(lines), "incomplete last line")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_invalid_utf8_bytes(tmp_path: Path) -> None:
    lines = [x.encode() for x in _claude(3, tag="bad")]
    lines.insert(3, b'{"type": "user", "message": {"role": "user", "content": "caf\xe9 \xff"}}')
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", b"\n".join(lines) + b"\n")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 4, "invalid UTF-8")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert run["n_requests"] == 4
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_empty_file(tmp_path: Path) -> None:
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", b"")
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "empty file")
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False)


def test_binary_file(tmp_path: Path) -> None:
    data = random.Random(7).randbytes(20_000)
    data = data[:100] + b"\x00\x00" + data[100:]
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", data)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "binary file")
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False)


def test_unknown_format_json(tmp_path: Path) -> None:
    logs, bad, _ = _batch(tmp_path, "a_bad.json",
                          json.dumps({"name": "not a log", "values": [1, 2, 3]}).encode())
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 0, "unknown format", "--format")
    assert report.failed == ["a_bad.json"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.json", bad_kept=False)


def test_tool_result_without_its_call(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad", orphan_step=1)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    orphan_line = 1 + 2 * 1 + 2  # prompt, step 0 (call, result), step 1 call, then its result
    assert "toolu_bad_never_called" in lines[orphan_line - 1]
    _assert_issue(report, bad, orphan_line, "toolu_bad_never_called", "no earlier call",
                  "orphan")
    _assert_good_kept(tmp_path / "store", report)
    tables = store.read_store(tmp_path / "store")
    (run,) = [r for r in tables.runs.to_pylist() if r["source"] == "a_bad.jsonl"]
    assert run["n_orphan_results"] == 1 and run["n_tool_results"] == 3  # kept as a row
    msgs = [m for m in tables.messages.to_pylist() if m["run_id"] == run["run_id"]]
    assert _pairing_violations(msgs) == Counter({run["run_id"]: 1})
    (orphan,) = [m for m in msgs if m["call_id"] == "toolu_bad_never_called"]
    assert orphan["kind"] == "tool_result" and orphan["text"] == "contents of f1.py\nline 2"
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_single_50mb_line(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    huge = json.loads(lines[2])
    huge["uuid"] = "huge"
    huge["message"]["content"][0]["content"] = "0123456789abcdef\n" * (50_000_000 // 17)
    big = json.dumps(huge)
    assert len(big) > 50_000_000
    lines.insert(3, big)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    del huge, lines

    tracemalloc.start()
    try:
        report = ingest([logs], tmp_path / "store", jobs=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # memory: the file once and its lines once; not decoded, parsed or tokenised
    assert peak < 3 * len(big), peak
    _assert_issue(report, bad, 4, "line of", "bytes", "limit", "skipped")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True,
                strict=False)


def test_file_that_is_one_50mb_line(tmp_path: Path) -> None:
    rec = json.loads(_claude(1)[0])  # Claude Code's key order: the content comes late
    rec["message"]["content"] = "y" * 50_000_000
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", [json.dumps(rec)])
    report = ingest([logs], tmp_path / "store", jobs=1)
    assert report.failed == ["a_bad.jsonl"]
    assert next(str(i) for i in report.issues).startswith(f"{bad}:1: line of 50,000,")
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.jsonl", bad_kept=False,
                strict=False)


def test_file_that_is_one_50mb_line_of_unknown_shape(tmp_path: Path) -> None:
    rec = {"content": "y" * 50_000_000, **json.loads(_claude(1)[0])}  # keys after 64 KiB
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", [json.dumps(rec)])
    report = ingest([logs], tmp_path / "store", jobs=1)
    # recognised from its strings shortened (the keys after the 50 MB value), then the line
    # is over the per-record limit: said, and the file fails
    assert [(i.line, i.reason.split(" is over")[0]) for i in report.issues] == [
        (1, f"line of {len(json.dumps(rec)):,} bytes"), (0, "no user or assistant records")]
    assert report.failed == ["a_bad.jsonl"]
    _assert_good_kept(tmp_path / "store", report)
    forced = ingest([bad], tmp_path / "forced", jobs=1, fmt="claude_code")
    assert forced.failed == ["a_bad.jsonl"]
    assert str(forced.issues[0]).startswith(f"{bad}:1: line of 50,000,")


def test_deeply_nested_json_file(tmp_path: Path) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    logs, bad, _ = _batch(tmp_path, "a_bad.json", deep.encode())
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 1, "nested too deeply")
    assert report.failed == ["a_bad.json"]
    _assert_good_kept(tmp_path / "store", report)
    _assert_cli(logs, tmp_path, exit_code=1, bad_name="a_bad.json", bad_kept=False)


def test_deeply_nested_line_in_a_transcript(tmp_path: Path) -> None:
    lines = _claude(3, tag="bad")
    lines.insert(4, '{"type": "user", "x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_001)
    logs, bad, _ = _batch(tmp_path, "a_bad.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=1)
    _assert_issue(report, bad, 5, "nested too deeply", "skipped")
    _assert_good_kept(tmp_path / "store", report)
    (run,) = [r for r in _runs(tmp_path / "store") if r["source"] == "a_bad.jsonl"]
    assert (run["n_requests"], run["n_tool_calls"], run["n_tool_results"]) == (4, 3, 3)
    _assert_cli(logs, tmp_path, exit_code=0, bad_name="a_bad.jsonl", bad_kept=True)


def test_strict_stops_at_the_first_issue_with_workers(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for k in range(4):
        _write(logs / f"f{k}.jsonl", _claude(2, tag=f"f{k}"))
    lines = _claude(2, tag="bad")
    lines.insert(2, "not json")
    _write(logs / "f1b.jsonl", lines)
    report = ingest([logs], tmp_path / "store", jobs=2, strict=True)
    assert report.parsed == ["f0.jsonl", "f1.jsonl"] and report.failed == ["f1b.jsonl"]
    assert sorted(store.read_manifest(tmp_path / "store")) == ["f0.jsonl", "f1.jsonl"]
    relaxed = ingest([logs], tmp_path / "store", jobs=2)
    assert sorted(relaxed.parsed) == ["f1b.jsonl", "f2.jsonl", "f3.jsonl"]
    assert sorted(relaxed.cached) == ["f0.jsonl", "f1.jsonl"]


def test_same_relative_path_under_two_roots_is_not_merged(tmp_path: Path) -> None:
    a = _write(tmp_path / "a" / "s.jsonl", _claude(1, tag="a"))
    b = _write(tmp_path / "b" / "s.jsonl", _claude(2, tag="b"))
    report = ingest([a.parent, b.parent], tmp_path / "store", jobs=1)
    assert report.failed == [] and len(report.parsed) == 2
    runs = {r["source"]: r["n_requests"] for r in _runs(tmp_path / "store")}
    assert sorted(runs.values()) == [2, 3] and "s.jsonl" in runs


def test_logs_in_a_folder_named_data_are_found(tmp_path: Path) -> None:
    _write(tmp_path / "logs" / "data" / "s.jsonl", _claude(1))
    (tmp_path / "logs" / "store").mkdir()
    ingest([tmp_path / "logs" / "data"], tmp_path / "logs" / "store", jobs=1)  # a store inside
    found = [f.relative_to(tmp_path / "logs").as_posix() for f, _ in discover([tmp_path / "logs"])]
    assert found == ["data/s.jsonl"]


# --------------------------------------------------------------------------- (e) nothing lost

def test_garbage_over_a_good_file_keeps_the_old_runs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    good = _write(logs / "s.jsonl", _claude(3, tag="s"))
    other = _write(logs / "t.jsonl", _claude(1, tag="t"))
    out = tmp_path / "store"
    assert ingest([logs], out, jobs=1).failed == []
    before = sorted(_cli_runs(out), key=lambda r: r["run_id"])
    old_key = store.read_manifest(out)["s.jsonl"].key

    good.write_bytes(random.Random(1).randbytes(5000).replace(b"\n", b" ") + b"\x00")
    _write(other, _claude(2, tag="t2"))  # the other file changes for real
    report = ingest([logs], out, jobs=1)
    assert report.failed == ["s.jsonl"] and report.parsed == ["t.jsonl"]
    assert str(report.issues[0]).startswith(f"{good}: ")
    manifest = store.read_manifest(out)
    assert manifest["s.jsonl"].key == old_key
    after = {r["source"]: r for r in _cli_runs(out)}
    (old_s,) = [r for r in before if r["source"] == "s.jsonl"]
    assert after["s.jsonl"] == old_s  # same run, same counts
    assert after["t.jsonl"]["requests"] == 3

    result = _cli("ingest", str(logs), "--out", str(out), "-q")
    assert result.exit_code == 1 and "s.jsonl" in result.stderr
    assert {r["source"]: r for r in _cli_runs(out)}["s.jsonl"] == old_s


@pytest.mark.parametrize("jobs", [1, 2])
def test_interrupted_ingest_leaves_a_consistent_store(tmp_path: Path, jobs: int) -> None:
    logs = tmp_path / "logs"
    for k in range(2):
        _write(logs / f"a{k}.jsonl", _claude(2, tag=f"a{k}"))
    out = tmp_path / "store"
    ingest([logs], out, jobs=jobs)
    first = {r["run_id"] for r in _runs(out)}
    for k in range(4):
        _write(logs / f"b{k}.jsonl", _claude(1, tag=f"b{k}"))

    seen: list[str] = []

    def interrupt(source: str) -> None:
        seen.append(source)
        if len([s for s in seen if s.startswith("b")]) == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest([logs], out, jobs=jobs, on_file=interrupt)
    manifest = store.read_manifest(out)
    # the old entries and every file finished before the interruption (with 2 workers another
    # may have finished meanwhile: it is kept too, #13); nothing half-done
    first_b = next(s for s in seen if s.startswith("b"))  # with 2 workers: any b, in any order
    assert {"a0.jsonl", "a1.jsonl", first_b} <= set(manifest)
    assert len(manifest) == 3 if jobs == 1 else len(manifest) <= 4
    for entry in manifest.values():
        store.read_entry(out, entry.key)  # every listed entry is readable
    runs = _runs(out)
    assert first <= {r["run_id"] for r in runs} and len(runs) == len(manifest)
    # and the next ingest completes the job
    report = ingest([logs], out, jobs=jobs)
    assert report.failed == [] and len(_runs(out)) == 6


def test_failure_while_writing_keeps_the_previous_manifest(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    _write(logs / "a.jsonl", _claude(2, tag="a"))
    out = tmp_path / "store"
    ingest([logs], out, jobs=1)
    manifest_before = (out / "manifest.json").read_bytes()
    _write(logs / "b.jsonl", _claude(2, tag="b"))
    calls = {"n": 0}
    real = pq.write_table

    def disk_full(*args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real(*args, **kwargs)

    monkeypatch.setattr(pq, "write_table", disk_full)
    with pytest.raises(OSError):
        ingest([logs], out, jobs=1)
    assert (out / "manifest.json").read_bytes() == manifest_before
    assert [r["source"] for r in _runs(out)] == ["a.jsonl"]


def test_sniffer_sees_claude_samples(samples: Path) -> None:
    """Guard for the generated transcripts above: they are sniffed like the real ones."""
    head = _write(Path(tempfile.mkdtemp()) / "t.jsonl", _claude(1)).read_bytes()[:65536]
    assert claude_code.sniff("t.jsonl", head)
    real = (samples / "claude-code" / "short.jsonl").read_bytes()[:65536]
    assert claude_code.sniff("short.jsonl", real)
