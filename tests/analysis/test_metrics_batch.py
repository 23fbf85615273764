"""The parts that compute several replays of one run at once (``MetricPart.many``: a sweep's
unit) give each replay the values, to the bit, that it gets alone: random request columns,
with the cases that take a replay's own path (an overshoot, a request of no tokens or an empty
context, some requests recorded and some not, other prices); and a sweep's replays of the
samples."""

from __future__ import annotations

import math
import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.metric_spec import PartInput, RunFacts
from analysis.per_run import PARTS
from analysis.per_run.fast_metrics import fast_metrics, fast_metrics_many
from analysis.run_facts import run_facts
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.policy import load_policy, replace_path

BASE = load_policy("two-tier-corrected")
OTHER_PRICES = replace_path(BASE, "cache.prices.input_per_mtok", 7.0)
BATCHED = [p for p in PARTS if p.many is not None]


def _bits(row: dict[str, Any]) -> list[tuple[str, Any]]:
    """A row with its floats as their bytes (NaN equal to NaN, 0.0 unlike -0.0)."""
    return [(k, struct.pack("<d", v) if isinstance(v, float) else (type(v), v))
            for k, v in row.items()]


def _requests(draw: st.DrawFn, n: int, shared: dict[str, list[Any]]) -> dict[str, list[Any]]:
    small = st.integers(0, 3)  # zeros often: empty contexts, requests of no tokens
    big = st.integers(0, 200_000)
    tokens = st.one_of(small, big)

    def col(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(values, min_size=n, max_size=n))

    truth = col(tokens)
    raw = [t if keep else t + 1 for t, keep in zip(truth, col(st.booleans()))]
    window = draw(st.sampled_from([[200_000] * n, col(st.integers(1, 300_000))]))
    reserve = [20_000] * n
    own = {
        "request": list(range(n)), "est_tokens": col(tokens), "truth_tokens": truth,
        "raw_tokens": raw,
        "window_tokens": window, "reserve_tokens": reserve,
        "overshoot_tokens": [max(0, t + r - w) for t, r, w in zip(truth, reserve, window)],
        "bytes_args": col(tokens), "bytes_args_write": col(tokens), "bytes_results": col(tokens),
        "bytes_other": col(tokens), "cached_tokens": col(tokens),
        "cache_write_tokens": col(tokens), "fresh_tokens": col(tokens),
        "output_tokens": col(tokens), "invalidated_tokens": col(tokens),
        "cost_usd": col(st.floats(0, 10)), "induced_cost_usd": col(st.floats(0, 1)),
        "recorded_input_tokens": col(st.one_of(st.none(), tokens)),
        "recorded_cache_read_tokens": col(st.one_of(st.none(), tokens)),
    }
    return {**own, **{c: _signed_zeros(draw, v) for c, v in shared.items()}}


def _signed_zeros(draw: st.DrawFn, values: list[Any]) -> list[Any]:
    """``values``, its float zeros of either sign (equal lists, other bits)."""
    return [draw(st.sampled_from([0.0, -0.0])) if v == 0 and isinstance(v, float) else v
            for v in values]


_SHARED = {  # columns a run's replays may hold equal (each read once: stats.request_arrays)
    "output_tokens": st.integers(0, 200_000), "cache_write_tokens": st.integers(0, 3),
    "recorded_input_tokens": st.one_of(st.none(), st.integers(0, 200_000)),
    "recorded_cache_read_tokens": st.one_of(st.none(), st.integers(0, 3)),
    "induced_cost_usd": st.one_of(st.just(0.0), st.floats(0, 1)),
    "cost_usd": st.floats(0, 10), "truth_tokens": st.integers(1, 3)}


_NO_ACTIONS: dict[str, list[Any]] = {c: [] for c in (
    "kind", "invalidated_tokens", "reclaimed_tokens", "reclaimed_est_tokens",
    "min_reclaim_tokens")}


@st.composite
def _batches(draw: st.DrawFn) -> list[PartInput]:
    """Replays of one run: random columns, some of them equal in every replay (zeros of
    either sign in a float one), the run's first recorded compaction anywhere or none."""
    n = draw(st.integers(1, 40))
    shared = {c: draw(st.lists(v, min_size=n, max_size=n))
              for c, v in _SHARED.items() if draw(st.booleans())}
    facts = RunFacts("r", {}, (), 0, draw(st.sampled_from([math.inf, 0, 1, n // 2, n])))
    return [PartInput(_requests(draw, n, shared), _NO_ACTIONS, {}, [],
                      draw(st.sampled_from([BASE, BASE, OTHER_PRICES])), facts)
            for _ in range(draw(st.integers(1, 5)))]


@settings(max_examples=40, deadline=None)
@given(_batches())
def test_a_batch_gives_each_replay_its_own_values(inps: list[PartInput]) -> None:
    for part in BATCHED:
        together = part.compute_many(inps)
        assert [_bits(r) for r in together] == [_bits(part.compute(i)) for i in inps], part.name


def test_a_sweeps_replays_of_a_sample_run_batched_equal_each_alone(
        sample_corpus: Corpus) -> None:
    rid = max(sample_corpus.replayable(), key=lambda r: sample_corpus.prepared(r).n_requests)
    run, calibration = sample_corpus.prepared(rid), sample_corpus.calibration(rid)
    facts = run_facts(sample_corpus, rid)
    replays = []
    for at in (20_000, 40_000, 60_000, 90_000):
        policy = replace_path(BASE, "tiers.1.trigger.at_tokens", at)
        replays.append((replay(run, policy, calibration=calibration), policy))
    together = fast_metrics_many(facts, replays)
    alone = [fast_metrics(facts, t, p) for t, p in replays]
    assert [_bits(r) for r in together] == [_bits(r) for r in alone]
    assert len({r["n_summaries"] for r in alone}) > 1  # the replays differ
    assert not any(math.isnan(r["arg_share_args_mean"]) for r in alone)
