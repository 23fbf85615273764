"""The ingest cache: unchanged files are not parsed again, a changed file is the only one
reparsed, other tokenizers are another key, and a fully cached ingest loads no encoding.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import batch as ingest_module
from replay.ingest import store
from replay.ingest.batch import ingest
from tests.replay.ingest.ingest_helpers import _cli, _runs, _store_bytes

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


def test_a_forced_format_is_another_cache_key(small_copy: Path, tmp_path: Path,
                                              parse_calls: list[str]) -> None:
    """--format is obeyed for a file already cached as detected, and the other way round: a
    Claude Code file forced as Codex is read by the Codex parser (and fails: no response items),
    not answered by its Claude Code entry; forced as what it is, then detected, it is read
    again each time (a forced parse never stands for a detection)."""
    out = tmp_path / "store"
    rel = "claude-code/short.jsonl"
    assert ingest([small_copy / rel], out, jobs=1).parsed == ["short.jsonl"]
    parse_calls.clear()
    forced = ingest([small_copy / rel], out, fmt="codex", jobs=1)
    assert parse_calls == ["short.jsonl"]
    assert forced.cached == [] and forced.failed == ["short.jsonl"]
    parse_calls.clear()
    assert ingest([small_copy / rel], out, fmt="claude_code", jobs=1).parsed == ["short.jsonl"]
    assert parse_calls == ["short.jsonl"]
    parse_calls.clear()
    assert ingest([small_copy / rel], out, jobs=1).parsed == ["short.jsonl"]
    assert ingest([small_copy / rel], out, jobs=1).cached == ["short.jsonl"]
