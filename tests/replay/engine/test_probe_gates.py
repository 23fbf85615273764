"""A probed replay's record with the loop's gates (a step skipped under its gate recorded by the
loop, ``replay.engine.fold``) is the record of calling every step, each recording its own check
(``replay.engine.tiers.trigger._probed``, a collapse tier's margin check)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from replay.engine import fold
from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.engine.probe import Probe
from replay.policy import Policy, load_policy, presets
from tests.strategies import policies, runs


def _records(run: PreparedRun, policy: Policy, calibration: Any = None) -> tuple[Any, Any]:
    """The probe's record, each gate named by when it was first checked (a harness preset's
    tiers are resolved afresh in each replay: their ids differ between two)."""
    probe = Probe()
    replay(run, policy, calibration=calibration, probe=probe)
    order = {key: i for i, key in enumerate(probe.levels)}
    return ([probe.levels[key] for key in order],
            sorted(order.get(key, -1) for key in probe.opened))


def _every_step_called(run: PreparedRun, policy: Policy, calibration: Any = None
                       ) -> tuple[Any, Any]:
    """The record with no gate in the loop: every step checks and records for itself."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fold, "gate", lambda tier, env: 0)
        return _records(run, policy, calibration)


@given(runs(), policies())
def test_the_loops_gates_record_what_the_steps_would(run: PreparedRun, policy: Policy) -> None:
    assert _records(run, policy) == _every_step_called(run, policy)


def test_on_the_samples_every_preset_records_what_its_steps_would(sample_corpus: Any) -> None:
    """Every preset over every real sample: the same levels and the same opened gates, and the
    loop skipped steps (recorded levels below their gates) in some of them."""
    checked = 0
    for name in presets():
        policy = load_policy(name)
        for rid in sample_corpus.replayable():
            run, calibration = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
            got = _records(run, policy, calibration)
            assert got == _every_step_called(run, policy, calibration), (name, rid)
            checked += len(got[0]) > len(got[1])
    assert checked > 0
