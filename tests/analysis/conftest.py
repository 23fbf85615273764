"""Real traces for the analysis tests.

The sample logs (``tests/conftest.py``'s ``sample_corpus``, ingested once per session and
worker) are replayed under both two-tier presets (each replay and its metrics ~1 s).
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
from replay.corpus import Corpus, replay_corpus
from replay.engine.trace import Trace
from replay.policy import Policy, load_policy

PRESETS = ("two-tier-original", "two-tier-corrected")


class Replayed(NamedTuple):
    """One preset replayed over the samples, with its metrics."""

    policy: Policy
    trace: Trace
    metrics: pd.DataFrame


@pytest.fixture(scope="session")
def replayed(sample_corpus: Corpus) -> dict[str, Replayed]:
    """Both two-tier presets replayed over the samples."""
    out = {}
    for name in PRESETS:
        policy = load_policy(name)
        trace = replay_corpus(sample_corpus, policy)
        out[name] = Replayed(policy, trace, metrics(sample_corpus, trace, policy))
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
def preset_run(logs_corpus: Corpus, sample_corpus: Corpus) -> Callable[[str, Policy], PresetRun]:
    """``preset_run("logs" | "samples", policy)``: replayed and measured once per session (the
    agreement and summary-definition tests share them)."""
    corpora = {"logs": logs_corpus, "samples": sample_corpus}
    done: dict[tuple[str, str], PresetRun] = {}

    def get(which: str, policy: Policy) -> PresetRun:
        key = (which, policy.digest())
        if key not in done:
            corpus = corpora[which]
            result = run(corpus, policy, rollup=RUN_ROLLUP)
            done[key] = PresetRun(corpus, result, metrics(corpus, result.trace, policy))
        return done[key]

    return get
