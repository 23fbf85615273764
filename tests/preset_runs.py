"""A preset replayed over ``logs/`` or the samples and measured, once for the session.

``preset_runner`` backs the ``preset_run`` fixture (``tests/conftest.py``): each replay, its
metrics as the commands compute them (``analysis.metrics.metrics``: the per-run functions) and
the same frame by the pandas analyses (``analysis.metrics_by_analyses``, the cross-check;
~1.4 s of CPU together) is computed by one xdist worker for all (``tests/shared_results.py``;
the same inputs give the same traces and rows in any worker's store).  The corpus's run facts
(``analysis.run_facts.runs_facts``: policy-independent, ~0.4 s of the samples' ~0.45 s
``metrics()``) are read once per corpus and passed to ``metrics()`` as ``report`` and ``check``
pass them for several policies; ``tests/analysis/test_metrics.py`` checks that facts passed in
give the frame ``metrics()`` gives reading them itself.  Likewise the frames of the corpus that
``metrics_by_analyses()`` reads (``corpus_frames``: recorded requests, tool blocks,
compactions; ~0.35 s of the samples' ~1 s) are read once per corpus and its replayed runs;
``tests/analysis/test_metrics_by_analyses.py`` checks that frames passed in give the frame
read there.  The tests that replay a
whole corpus under a preset take it from here: the analysis tests, and ``replay redact``'s
comparison for its originals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd

from analysis.metric_spec import RunFacts
from analysis.metrics import metrics
from analysis.metrics_by_analyses import (
    CorpusFrames,
    corpus_frames,
    metrics_by_analyses,
    trace_run_ids,
)
from analysis.per_run.rollup import RUN_ROLLUP
from analysis.run_facts import runs_facts
from replay.apply_policy import RunResult, run
from replay.corpus import Corpus
from replay.policy import Policy
from tests.shared_results import SharedResults


class PresetRun(NamedTuple):
    """A policy run over a corpus as ``replay run`` does it, with ``metrics()`` of its trace and
    ``metrics_by_analyses()``, the same frame computed by the pandas analyses."""

    corpus: Corpus
    result: RunResult
    metrics: pd.DataFrame
    by_analyses: pd.DataFrame


def preset_runner(logs_corpus: Corpus, sample_corpus: Corpus,
                  shared_results: SharedResults) -> Callable[[str, Policy], PresetRun]:
    """``get("logs" | "samples", policy)``: the run and its metrics, from ``shared_results``."""
    corpora = {"logs": logs_corpus, "samples": sample_corpus}
    facts: dict[str, dict[str, RunFacts]] = {}
    """Each corpus's run facts, read when this worker first computes one of its runs."""
    read: dict[tuple[str, tuple[str, ...]], CorpusFrames] = {}
    """``metrics_by_analyses``'s frames of each corpus and replayed runs, read once likewise."""

    def get(which: str, policy: Policy) -> PresetRun:
        corpus = corpora[which]

        def compute() -> tuple[RunResult, pd.DataFrame, pd.DataFrame]:
            result = run(corpus, policy, rollup=RUN_ROLLUP)
            if which not in facts:
                facts[which] = runs_facts(corpus, corpus.run_ids)
            key = (which, trace_run_ids(result.trace))
            if key not in read:
                read[key] = corpus_frames(corpus, key[1])
            return (result, metrics(corpus, result.trace, policy, facts=facts[which]),
                    metrics_by_analyses(corpus, result.trace, policy, given=read[key]))

        result, frame, by_analyses = shared_results.get(
            f"preset-run-{which}-{policy.digest()}", compute)
        return PresetRun(corpus, result, frame, by_analyses)

    return get
