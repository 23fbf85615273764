"""One value per metric, whoever shows it (#14 "How it is checked"): for every run of ``logs/``
and of the samples under every preset, ``replay run``'s summary row, ``metrics()``, the values
``replay check`` compares (``analysis.check.baseline.policy_values``, what ``measure`` stores for a
replay) and the report's headline agree on every metric they share, under the same name.  The
replays are shared with ``test_summary_definition`` (``preset_run``).

``replay run``, ``metrics()`` (and so check, report and diff) compute every value by the per-run
functions (``analysis.per_run``); ``metrics_by_analyses()`` computes the same frame from the
pandas analyses: two computations, compared column by column on every run (integers exactly,
floats to 1e-12 relative), so the comparison bites.  (It would have caught ``replay run``
showing 4 summaries where the analyses showed 0.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from analysis.check.baseline import policy_values, stored_value
from analysis.metrics import METRIC_COLUMNS
from analysis.per_run.rollup import ROLLUP_METRICS
from analysis.report.pages import HEADLINE, Page, _headline_rows, fmt_value
from replay.corpus import NOT_REPLAYED
from replay.ingest.run_label import run_key
from replay.policy import Policy, load_policy, presets
from tests.preset_runs import PresetRun


def _same(a: Any, b: Any) -> bool:
    """Equal, or both unknown (None from the summary, NaN from a frame)."""
    unknown = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b)]
    return all(unknown) or (not any(unknown) and a == b)


@pytest.mark.parametrize("preset", presets())
@pytest.mark.parametrize("which", ["logs", "samples"])
def test_replay_run_metrics_check_and_report_agree(
        preset_run: Callable[[str, Policy], PresetRun], which: str, preset: str) -> None:
    policy = load_policy(preset)
    corpus, result, frame, by_analyses = preset_run(which, policy)
    pd.testing.assert_frame_equal(frame, by_analyses, check_exact=False, rtol=1e-12, atol=0)
    by_run = {r["run_id"]: r for r in frame.to_dict(orient="records")}
    keys = {rid: run_key(rid, src) for rid, src in zip(corpus.runs["run_id"].to_pylist(),
                                                        corpus.runs["source"].to_pylist())}
    checked = policy_values(policy, frame, keys).values  # what `check` stores and compares
    assert set(ROLLUP_METRICS) <= set(METRIC_COLUMNS)
    replayed = [r for r in result.rollup if r["note"] != NOT_REPLAYED]
    assert {r["run_id"] for r in replayed} == set(by_run) == set(corpus.replayable())
    for row in replayed:
        m, c = by_run[row["run_id"]], checked[keys[row["run_id"]]]
        for name in ROLLUP_METRICS:
            assert _same(row[name], m[name]), (row["run"], name, row[name], m[name])
            assert _same(stored_value(row[name]), c[name]), (row["run"], name, c[name])
    page = Page(policies=[(policy, [])], runs=[{"run_id": r["run_id"], "label": r["run"]}
                                               for r in replayed],
                metrics=frame, totals=frame.iloc[0:0], diffs=[], analyses=[], timelines=[])
    header, cells, _ = _headline_rows(page)
    shown = dict(zip([r["run_id"] for r in replayed], cells, strict=True))
    for row in replayed:
        headline = dict(zip(header, shown[row["run_id"]], strict=True))
        for name, title in HEADLINE:
            if name in ROLLUP_METRICS:
                assert headline[title] == fmt_value(name, row[name]), (row["run"], name)
