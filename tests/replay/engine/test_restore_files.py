"""Which files a counterfactual compaction re-attaches (``replay.engine.tiers.restore``), against a
plain walk of real Claude Code 2.1.39 sessions that compacted: of the last five files read before
the compaction, those whose read result is within 5,000 tokens; a bigger one keeps its place
among the five but is not attached (Claude Code names it instead)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from replay.compaction_fit import DEFAULT, recorded_compactions
from replay.corpus import Corpus, open_corpus
from replay.engine.tiers.restore import pick_files
from replay.ingest.tokens import encoding
from tests.analysis.raw_compactions import raw_calls, raw_results

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_code" / "compactions"
NAMES = ("4d5611e5-241a-462a-8d15-5122611a9569.jsonl", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
"""The two real sessions whose last five files read before the compaction include big ones."""


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Corpus]:
    folder = tmp_path_factory.mktemp("compactions")
    for name in NAMES:
        gz = FIXTURES / (name + ".gz")
        (folder / name).write_bytes(gzip.decompress(gz.read_bytes()))
    return folder, open_corpus([folder], cache_dir=tmp_path_factory.mktemp("ds") / "dataset")


def _failed(path: Path) -> set[str]:
    out = set()
    for line in path.read_text().splitlines():
        content = (json.loads(line).get("message") or {}).get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "tool_result" and part.get("is_error"):
                out.add(part["tool_use_id"])
    return out


def _last_reads(path: Path) -> list[tuple[str, str]]:
    """(file, call id of its newest Read) for the last five distinct files Read before the
    compaction, newest first (failed Reads left out)."""
    failed = _failed(path)
    out: list[tuple[str, str]] = []
    for c in reversed([c for c in raw_calls(path) if not c["after"]]):
        if c["name"] == "Read" and c["id"] not in failed:
            file = str(c["input"]["file_path"])
            if file not in (f for f, _ in out):
                out.append((file, c["id"]))
                if len(out) == 5:
                    break
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_files_within_the_cap_of_the_last_five_read_are_reattached(  # type: ignore[no-untyped-def]
        sessions, name):
    folder, corpus = sessions
    rid = next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
               if s.endswith(name))
    run = corpus.prepared(rid)
    enc = encoding("o200k_base")
    texts = raw_results(folder / name)
    last = _last_reads(folder / name)
    sizes = {call: len(enc.encode_ordinary(texts[call])) for _, call in last}
    expected = {call for _, call in last if sizes[call] <= DEFAULT.file_max_tokens}
    assert 0 < len(expected) < len(last)  # some of the five are over the cap, some within it
    counts = run.tokens["o200k_base"]
    picked = pick_files(run, run.harness_boundary[0], DEFAULT, counts)
    assert {run.call_id[run.call_of[b]] for b in picked} == expected
    assert picked == sorted(picked)  # in reading order


def test_leaving_big_files_out_fits_what_the_harness_sent(sessions):  # type: ignore[no-untyped-def]
    """What the first request after the compaction carried beyond its context (the harness's
    re-attachment, unseen in the log; ``replay.compaction_fit``) is closer to the last five files
    read without the big ones — the model's figure, checked against the walk — than to the five
    with the big ones cut to 5,000 tokens (all scaled by the run's calibration, as the model's
    figures are)."""
    folder, corpus = sessions
    enc = encoding("o200k_base")
    for c in recorded_compactions(corpus):
        assert c.reattached_tokens is not None and c.files_tokens_by_count is not None
        cal = corpus.calibration(c.run_id)
        scale = cal.scale if cal is not None and cal.usable else 1.0
        texts = raw_results(folder / c.source)
        sizes = [len(enc.encode_ordinary(texts[call])) for _, call in _last_reads(folder / c.source)]
        cap = DEFAULT.file_max_tokens
        within = round(scale * sum(n for n in sizes if n <= cap))
        cut = round(scale * sum(min(n, cap) for n in sizes))
        assert abs(c.files_tokens_by_count[DEFAULT.files] - within) <= 2  # rounding
        assert cut > within
        assert abs(within - c.reattached_tokens) < abs(cut - c.reattached_tokens)
