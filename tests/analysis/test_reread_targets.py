"""Issue #22's targets for re-reads after real compactions, on every real compaction the
repository holds: the two Claude Code samples (``../shared/logs-sample``) and three more real
sessions of the same public project committed gzip-compressed as fixtures
(``tests/fixtures/claude_code/compactions``, sources in tests/fixtures/claude_code/SOURCES.md), decompressed into a temporary
folder.  The recorded re-reads, the predicted files and the tokens are checked against a plain
walk of each raw file (``tests.analysis.raw_compactions``); the pooled figures are computed from
that walk's sets and asserted against the targets (recall >= 0.85, precision >= 0.75), with the
naive rule beside them.

The per-session tokens target (within +-30 % in every session) is met in 3 of the 5 sessions and
not asserted: in ae4a77f8 the agent re-read parts of files it had read whole (a re-read is
predicted whole: the range read last does not tell the range read next; hooks_controller.ex was
among the files the harness re-attached, and the agent read the 20 lines it meant to edit), in
fa812bfe it re-read a file nothing before names (a recall miss: one of the two files it edited
last, over 5,000 tokens, so named by the harness but not attached); the README's fidelity
paragraph gives the rules measured against them and rejected; ``python benchmarks/fidelity.py``
prints them."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from analysis.reread_fidelity import compaction_rereads, pooled
from replay.corpus import Corpus, open_corpus
from replay.engine.needs import NAIVE_RULES
from tests.analysis.raw_compactions import raw_rereads, raw_tokens

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "compactions"
SAMPLES = ("258c7280-ae70-4798-800f-63464d01a85d.jsonl",
           "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")


@pytest.fixture(scope="module")
def sessions(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Any]:
    """Raw file → (corpus, run id) for every real session with one compaction."""
    folder = tmp_path_factory.mktemp("compactions")
    for gz in sorted(FIXTURES.glob("*.jsonl.gz")):
        (folder / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
    corpus = open_corpus([folder], cache_dir=tmp_path_factory.mktemp("ds") / "dataset")
    real = open_corpus([samples / "claude-code" / n for n in SAMPLES],
                       cache_dir=tmp_path_factory.mktemp("ds") / "dataset")
    out: dict[Path, Any] = {}
    for c in (corpus, real):
        for rid, source in zip(c.run_ids, c.runs["source"].to_pylist()):
            path = Path(source)
            if path.name in SAMPLES:
                path = samples / "claude-code" / path.name
            elif (folder / path.name).exists():
                path = folder / path.name
            else:
                continue
            out[path] = (c, rid)
    assert len(out) == 5
    return out


def test_real_compactions_meet_the_targets(sessions: dict[Path, tuple[Corpus, str]]) -> None:
    hits = recorded = predicted = naive_hits = naive_predicted = 0
    for path, (corpus, rid) in sessions.items():
        raw = raw_rereads(path)
        run = corpus.prepared(rid)
        (got,) = compaction_rereads(run)
        (naive,) = compaction_rereads(run, rules=NAIVE_RULES)
        assert set(got.recorded) == raw["recorded"] == set(naive.recorded), path.name
        assert set(got.predicted) == raw["rules"], path.name
        assert set(naive.predicted) == raw["naive"], path.name
        assert (got.recorded_tokens, got.predicted_tokens) == raw_tokens(run, path, raw)
        hits += len(raw["recorded"] & raw["rules"])
        recorded += len(raw["recorded"])
        predicted += len(raw["rules"])
        naive_hits += len(raw["recorded"] & raw["naive"])
        naive_predicted += len(raw["naive"])
    assert recorded >= 20  # the five compactions: enough re-reads to judge
    assert hits / recorded >= 0.85 and hits / predicted >= 0.75
    # clearly better than the naive rule: as much recall, more precision
    assert hits >= naive_hits and hits / predicted > naive_hits / naive_predicted + 0.1


def test_pooled_tokens_within_a_third(sessions: dict[Path, tuple[Corpus, str]]) -> None:
    """Pooled over the five compactions the predicted re-read tokens are within +-30 % of the
    recorded ones (per session not always: see the module's docstring)."""
    total = sum((pooled(compaction_rereads(c.prepared(r))) for c, r in sessions.values()),
                start=pooled([]))
    assert total.tokens_error_frac is not None and abs(total.tokens_error_frac) <= 0.30
