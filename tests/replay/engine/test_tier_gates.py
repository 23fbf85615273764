"""The replay loop's gates (``replay.engine.tiers.gate``): below its gate a tier's step is not
called, and that changes nothing.  Each trace is compared with the trace of a loop that calls
every step at every check (every gate 0), over random runs and policies and over the samples
with the presets whose tiers have token levels — some lowered so that they act there, and
Codex, whose harness also counts hidden reasoning the loop's test leaves out."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given

from replay.engine import fold
from replay.engine.fold import replay
from replay.engine.prepared import Calibration, PreparedRun
from replay.engine.trace import Trace
from replay.policy import Policy, load_policy, replace_paths
from tests.strategies import policies, runs


def _ungated(run: PreparedRun, policy: Policy, calibration: Calibration | None = None) -> Trace:
    with mock.patch.object(fold, "gate", lambda tier, env: 0):
        return replay(run, policy, calibration=calibration)


def _assert_same(gated: Trace, ungated: Trace) -> None:
    for name in ("requests", "actions", "evictions"):
        assert getattr(gated, name).equals(getattr(ungated, name)), name


@given(runs(), policies())
def test_gates_change_no_trace(run: PreparedRun, policy: Policy) -> None:
    _assert_same(replay(run, policy), _ungated(run, policy))


LEVELS: list[tuple[str, tuple[tuple[str, Any], ...]]] = [
    ("two-tier-original", ()),
    ("two-tier-corrected", (("tiers.1.trigger.at_tokens", 30000),)),
    ("corecoder", ()),
    ("gemini-cli", (("tiers.2.trigger.at_frac", 0.1),)),
    ("claude-code", (("tiers.0.trigger.at_tokens", 40000),)),
    ("codex", (("tiers.0.trigger.at_tokens", 20000),)),
    ("anthropic-context-editing", (("tiers.0.trigger.at_tokens", 20000),)),
]


@pytest.mark.parametrize(("preset", "changes"), LEVELS, ids=[p for p, _ in LEVELS])
def test_gates_change_no_trace_of_the_samples(sample_corpus: Any, preset: str,
                                              changes: tuple[tuple[str, Any], ...]) -> None:
    policy = replace_paths(load_policy(preset), changes) if changes else load_policy(preset)
    acted = 0
    for rid in sample_corpus.replayable():
        run, cal = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
        gated = replay(run, policy, calibration=cal)
        _assert_same(gated, _ungated(run, policy, cal))
        acted += gated.actions.num_rows
    assert acted, f"{preset}: no tier acted on the samples (the comparison shows nothing)"
