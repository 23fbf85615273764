"""A batch's request columns converted once for every metric part (``analysis.per_run.stats.Batch``,
``request_columns``), and the recorded-usage part computed over the batch with NumPy: each
replay's row of ``part_metrics_many`` equals, to the bit, its row computed alone, and the
recorded-usage medians equal the Python loop they replaced."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.metric_spec import PartInput, RunFacts
from analysis.per_run import PARTS, part_metrics, part_metrics_many
from analysis.per_run.overshoots import OVERSHOOTS_RECORDED
from analysis.per_run.stats import Batch, quantile_sorted, request_columns
from replay.policy import load_policy

POLICY = load_policy("two-tier-corrected")
COLUMNS = ("request", "est_tokens", "truth_tokens", "raw_tokens", "window_tokens",
           "reserve_tokens", "overshoot_tokens", "bytes_args", "bytes_args_write",
           "bytes_results", "bytes_other", "cached_tokens", "cache_write_tokens", "fresh_tokens",
           "output_tokens", "invalidated_tokens", "induced_rereads", "induced_tokens")
FASTS = [p for p in PARTS if p.many is not None]


def _bits(row: dict[str, Any]) -> list[tuple[str, Any]]:
    """A row with its floats as their bytes (NaN equal to NaN, 0.0 unlike -0.0)."""
    return [(k, struct.pack("<d", v) if isinstance(v, float) else (type(v), v))
            for k, v in row.items()]


class _Replay:
    """The trace columns ``part_metrics`` reads, as a trace gives them."""

    def __init__(self, requests: dict[str, list[Any]]) -> None:
        self._columns = {"requests": requests, "evictions": {},
                         "actions": {c: [] for c in ("kind", "undone", "first_msg", "when",
                                                     "size_estimate", "invalidated_tokens",
                                                     "reclaimed_tokens", "reclaimed_est_tokens",
                                                     "min_reclaim_tokens", "tier", "request")}}

    def columns(self, table: str) -> dict[str, list[Any]]:
        return self._columns[table]


@st.composite
def _requests(draw: st.DrawFn, n: int) -> dict[str, list[Any]]:
    tokens = st.lists(st.one_of(st.integers(0, 3), st.integers(0, 200_000)), min_size=n,
                      max_size=n)
    est, truth, rec = draw(tokens), draw(tokens), draw(tokens)
    out: dict[str, list[Any]] = {c: [(t * (k + 3)) % 70_001 for t in truth]  # other columns
                                 for k, c in enumerate(COLUMNS)}
    out.update({"request": list(range(n)), "est_tokens": est, "truth_tokens": truth,
                "window_tokens": [200_000] * n, "reserve_tokens": [20_000] * n,
                "raw_tokens": list(truth) if draw(st.booleans()) else draw(tokens),
                "cost_usd": [t / 7 for t in est], "induced_cost_usd": [0.0] * n,
                "recorded_cache_read_tokens": [None if r % 5 == 0 else r // 2 for r in rec],
                "recorded_input_tokens": [None if draw(st.booleans()) else r for r in rec]})
    return out


@st.composite
def _batches(draw: st.DrawFn) -> tuple[RunFacts, list[dict[str, list[Any]]]]:
    n = draw(st.integers(1, 12))
    first = draw(st.sampled_from([math.inf, 0.0, float(n // 2)]))
    facts = RunFacts("run", {}, (), 0 if first == math.inf else 1, first)
    return facts, [draw(_requests(n)) for _ in range(draw(st.integers(1, 4)))]


def _recorded_loop(rq: dict[str, list[Any]], first: float) -> dict[str, Any]:
    """The recorded-usage part as it was computed before, one request at a time in Python."""
    vs_est: list[float] = []
    vs_truth: list[float] = []
    for req, est, truth, raw, rec in zip(rq["request"], rq["est_tokens"], rq["truth_tokens"],
                                         rq["raw_tokens"], rq["recorded_input_tokens"]):
        if truth == raw and req < first and rec is not None and rec > 0:
            vs_est.append((est - rec) / rec)
            vs_truth.append((truth - rec) / rec)
    return {"overshoots_n_comparable": len(vs_est),
            "overshoots_est_vs_recorded_median_frac": quantile_sorted(sorted(vs_est), 0.5),
            "overshoots_truth_vs_recorded_median_frac": quantile_sorted(sorted(vs_truth), 0.5)}


@settings(max_examples=40, deadline=None)
@given(_batches())
def test_a_batch_gives_each_replay_the_row_it_gets_alone(
        batch: tuple[RunFacts, list[dict[str, list[Any]]]]) -> None:
    facts, requests = batch
    replays: list[tuple[Any, Any]] = [(_Replay(rq), POLICY) for rq in requests]
    together = part_metrics_many(replays, FASTS, facts=facts)
    alone = [part_metrics(t, p, FASTS, facts=facts) for t, p in replays]
    assert [_bits(r) for r in together] == [_bits(r) for r in alone]
    for row, rq in zip(together, requests):
        want = _recorded_loop(rq, facts.first_compaction_request)
        assert _bits({k: row[k] for k in OVERSHOOTS_RECORDED.names}) == _bits(want)


def test_a_column_is_converted_once_per_batch_and_dtype_and_kept_read_only() -> None:
    rq = [{"a": [1, 2, 3], "b": [4, 5, 6]}, {"a": [7, 8, 9], "b": [1, 0, 2]}]
    batch = Batch([PartInput(r, {}, {}, [], POLICY, None) for r in rq])
    a, b = request_columns(batch, ("a", "b"), np.int64)
    (a_again,) = request_columns(batch, ("a",), np.int64)
    (a_float,) = request_columns(batch, ("a",), np.float64)
    assert a_again is a
    assert a_float is not a and a_float.dtype == np.float64
    assert a.tolist() == [[1, 2, 3], [7, 8, 9]] and b.tolist() == [[4, 5, 6], [1, 0, 2]]
    assert a_float.tolist() == [[1.0, 2.0, 3.0], [7.0, 8.0, 9.0]]
    with pytest.raises(ValueError, match="read-only"):
        a += 1
    (fresh,) = request_columns(list(batch), ("a",), np.int64)  # a plain list keeps nothing
    assert fresh is not a and fresh.tolist() == a.tolist()
