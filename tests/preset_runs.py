"""A preset replayed over ``logs/`` or the samples and measured, once for the session.

``preset_runner`` backs the ``preset_run`` fixture (``tests/conftest.py``): each replay and its
metrics (~1.4 s of CPU) is computed by one xdist worker for all (``tests/shared_results.py``;
the same inputs give the same traces and rows in any worker's store).  The tests that replay a
whole corpus under a preset take it from here: the analysis tests, and ``replay redact``'s
comparison for its originals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd

from analysis.metrics import metrics
from analysis.per_run.rollup import RUN_ROLLUP
from replay.apply_policy import RunResult, run
from replay.corpus import Corpus
from replay.policy import Policy
from tests.shared_results import SharedResults


class PresetRun(NamedTuple):
    """A policy run over a corpus as ``replay run`` does it, with ``metrics()`` of its trace."""

    corpus: Corpus
    result: RunResult
    metrics: pd.DataFrame


def preset_runner(logs_corpus: Corpus, sample_corpus: Corpus,
                  shared_results: SharedResults) -> Callable[[str, Policy], PresetRun]:
    """``get("logs" | "samples", policy)``: the run and its metrics, from ``shared_results``."""
    corpora = {"logs": logs_corpus, "samples": sample_corpus}

    def get(which: str, policy: Policy) -> PresetRun:
        corpus = corpora[which]

        def compute() -> tuple[RunResult, pd.DataFrame]:
            result = run(corpus, policy, rollup=RUN_ROLLUP)
            return result, metrics(corpus, result.trace, policy)

        result, frame = shared_results.get(f"preset-run-{which}-{policy.digest()}", compute)
        return PresetRun(corpus, result, frame)

    return get
