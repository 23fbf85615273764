"""Real traces for the analysis tests.

The sample logs (``tests/conftest.py``'s ``sample_corpus``, ingested once per session and
worker) and ``logs/`` are replayed under presets (each replay and its metrics ~1.4 s of CPU),
each once for the session by one xdist worker (``preset_run``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd
import pytest

from analysis import frames
from analysis.metrics import metrics
from analysis.per_run.rollup import RUN_ROLLUP
from replay.apply_policy import RunResult, run
from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.policy import Policy, load_policy
from tests.shared_results import SharedResults

PRESETS = ("two-tier-original", "two-tier-corrected")


class Replayed(NamedTuple):
    """One preset replayed over the samples, with its metrics."""

    policy: Policy
    trace: Trace
    metrics: pd.DataFrame


@pytest.fixture(scope="session")
def replayed(preset_run: Callable[[str, Policy], PresetRun]) -> dict[str, Replayed]:
    """Both two-tier presets replayed over the samples (``preset_run``'s replays)."""
    out = {}
    for name in PRESETS:
        done = preset_run("samples", load_policy(name))
        out[name] = Replayed(done.result.policy, done.result.trace, done.metrics)
    return out


@pytest.fixture(scope="session")
def both_trace(replayed: dict[str, Replayed]) -> Trace:
    """The two presets' traces as one."""
    return Trace.concat([r.trace for r in replayed.values()])


@pytest.fixture(scope="session")
def recorded(sample_corpus: Corpus) -> pd.DataFrame:
    """The store's requests table as a frame."""
    return frames.recorded_requests_df(sample_corpus)


class PresetRun(NamedTuple):
    """A policy run over a corpus as ``replay run`` does it, with ``metrics()`` of its trace."""

    corpus: Corpus
    result: RunResult
    metrics: pd.DataFrame


@pytest.fixture(scope="session")
def preset_run(logs_corpus: Corpus, sample_corpus: Corpus,
               shared_results: SharedResults) -> Callable[[str, Policy], PresetRun]:
    """``preset_run("logs" | "samples", policy)``: replayed and measured once per session, by
    one xdist worker for all (``tests/shared_results.py``; the same inputs give the same
    traces and rows in any worker's store).  The analysis tests' replays of whole corpora
    under a preset come from here."""
    corpora = {"logs": logs_corpus, "samples": sample_corpus}

    def get(which: str, policy: Policy) -> PresetRun:
        corpus = corpora[which]

        def compute() -> tuple[RunResult, pd.DataFrame]:
            result = run(corpus, policy, rollup=RUN_ROLLUP)
            return result, metrics(corpus, result.trace, policy)

        result, frame = shared_results.get(f"preset-run-{which}-{policy.digest()}", compute)
        return PresetRun(corpus, result, frame)

    return get
