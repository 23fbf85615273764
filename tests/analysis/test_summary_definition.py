"""One definition of a summary (and of a trim): ``replay run``'s per-run summary and
``metrics()`` count the same actions, under every preset and a collapse-only policy (where
``replay run`` used to show 4 summaries for logs/compacting-session.jsonl and ``metrics()`` 0).

The oracle counts the actions table's rows by hand: applied (not undone) rows whose kind removes
the oldest messages (a cut: summarise, collapse, custom cut) are summaries; applied rows that
replace blocks in place are trims.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from replay.engine.trace import INDUCED_REREAD
from replay.policy import Policy, load_policy, policy_from_dict, presets
from tests.preset_runs import PresetRun

COLLAPSE_ONLY = {"name": "collapse-only", "server": {"window_tokens": 40_000},
                 "tiers": [{"type": "collapse", "margin_frac": 0.1, "keep_messages": 8}]}


@pytest.mark.parametrize("name", [*presets(), "collapse-only"])
def test_replay_run_and_metrics_count_the_same_summaries_and_trims(
        preset_run: Callable[[str, Policy], PresetRun], name: str) -> None:
    policy = policy_from_dict(COLLAPSE_ONLY) if name == "collapse-only" else load_policy(name)
    done = preset_run("logs", policy)
    result, frame = done.result, done.metrics
    m = frame.set_index("run_id")
    cuts = {"summarise", "collapse", "custom_cut"}
    by_hand: dict[str, list[int]] = {}
    for a in result.trace.actions.to_pylist():
        if not a["undone"] and a["kind"] != INDUCED_REREAD:  # an induced re-read is no trim
            counts = by_hand.setdefault(a["run_id"], [0, 0])
            counts[0 if a["kind"] in cuts else 1] += 1
    assert result.rollup
    for row in result.rollup:
        want = by_hand.get(row["run_id"], [0, 0])
        assert [row["n_summaries"], row["n_trims"]] == want
        assert [m.loc[row["run_id"], "n_summaries"], m.loc[row["run_id"], "n_trims"]] == want
    if name == "collapse-only":
        assert sum(v[0] for v in by_hand.values()) > 0  # the case tests something
