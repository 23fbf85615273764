"""Real traces for the analysis tests.

The sample logs (``tests/conftest.py``'s ``sample_corpus``, ingested once per session and
worker) and ``logs/`` are replayed under presets (each replay and its metrics ~1.4 s of CPU),
each once for the session by one xdist worker (``preset_run``, ``tests/preset_runs.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd
import pytest

from analysis import frames
from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.policy import Policy, load_policy
from tests.preset_runs import PresetRun

PRESETS = ("two-tier-original", "two-tier-corrected")


class Replayed(NamedTuple):
    """One preset replayed over the samples, with its metrics (``metrics()``, and the same frame
    by the pandas analyses: ``metrics_by_analyses()``)."""

    policy: Policy
    trace: Trace
    metrics: pd.DataFrame
    by_analyses: pd.DataFrame


@pytest.fixture(scope="session")
def replayed(preset_run: Callable[[str, Policy], PresetRun]) -> dict[str, Replayed]:
    """Both two-tier presets replayed over the samples (``preset_run``'s replays)."""
    out = {}
    for name in PRESETS:
        done = preset_run("samples", load_policy(name))
        out[name] = Replayed(done.result.policy, done.result.trace, done.metrics,
                             done.by_analyses)
    return out


@pytest.fixture(scope="session")
def both_trace(replayed: dict[str, Replayed]) -> Trace:
    """The two presets' traces as one."""
    return Trace.concat([r.trace for r in replayed.values()])


@pytest.fixture(scope="session")
def recorded(sample_corpus: Corpus) -> pd.DataFrame:
    """The store's requests table as a frame."""
    return frames.recorded_requests_df(sample_corpus)
