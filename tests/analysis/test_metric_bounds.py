"""The bounds each metric declares (``MetricSpec.value_bounds``: its unit's, or its own) hold
for every value the metrics compute: every run of ``logs/`` and of the samples under every
preset, as ``replay check`` stores it.  A baseline holding a value outside them is refused when
read (``analysis.check.baseline``), so a bound that a real replay could cross would refuse a
baseline ``--update-baseline`` wrote."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from analysis.check.baseline import policy_values
from analysis.metric_spec import UNIT_BOUNDS
from analysis.per_run import SPECS
from replay.ingest.run_label import run_key
from replay.policy import Policy, load_policy, presets
from tests.preset_runs import PresetRun


def test_every_unit_has_bounds() -> None:
    assert {m.unit for m in SPECS.values()} <= set(UNIT_BOUNDS)


@pytest.mark.parametrize("preset", presets())
@pytest.mark.parametrize("which", ["logs", "samples"])
def test_every_value_measured_lies_within_its_metrics_bounds(
        preset_run: Callable[[str, Policy], PresetRun], which: str, preset: str) -> None:
    policy = load_policy(preset)
    corpus, _, frame, _ = preset_run(which, policy)
    keys = {rid: run_key(rid, src) for rid, src in zip(corpus.runs["run_id"].to_pylist(),
                                                        corpus.runs["source"].to_pylist())}
    stored = policy_values(policy, frame, keys).values
    assert stored
    refused = [(run, m, v, SPECS[m].refuses(v)) for run, vals in stored.items()
               for m, v in vals.items() if v is not None and SPECS[m].refuses(v) is not None]
    assert not refused, refused[:5]
