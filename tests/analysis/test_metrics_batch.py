"""The parts that compute several replays of one run at once (``MetricPart.many``: a sweep's
unit) give each replay the values, to the bit, that it gets alone: random request columns,
with the cases that take a replay's own path (an overshoot, a request of no tokens or an empty
context, some requests recorded and some not, other prices); and a sweep's replays of the
samples."""

from __future__ import annotations

import math
import struct
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from analysis.metric_spec import PartInput, RunFacts
from analysis.per_run import PARTS
from analysis.per_run.fast_metrics import fast_metrics, fast_metrics_many
from analysis.per_run.rereads import REREADS
from analysis.run_facts import run_facts
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.policy import load_policy, replace_path

BASE = load_policy("two-tier-corrected")
OTHER_PRICES = replace_path(BASE, "cache.prices.input_per_mtok", 7.0)
BATCHED = [p for p in PARTS if p.many is not None]
_STATIC = dict.fromkeys(REREADS.names, 0)
"""The run's re-read counts no eviction changes (``RunFacts.static_rereads``): none."""


def _bits(row: dict[str, Any]) -> list[tuple[str, Any]]:
    """A row with its floats as their bytes (NaN equal to NaN, 0.0 unlike -0.0)."""
    return [(k, struct.pack("<d", v) if isinstance(v, float) else (type(v), v))
            for k, v in row.items()]


_SIGNED_ZERO = st.sampled_from([0.0, -0.0])
_NONE, _SMALL, _BIG = (None, 1), (0, 4), (0, 200_001)
_TOKENS = (_SMALL, _BIG)  # zeros often: empty contexts, requests of no tokens


def _column(draw: st.DrawFn, n: int, *values: tuple[int | None, int]) -> list[Any]:
    """``n`` values, each from one of ``values`` picked uniformly (``(lo, k)``: the integers
    lo..lo+k-1; ``(None, _)``: None), made from one drawn byte string (4 bytes a value): the
    values ``st.lists(st.one_of(...), min_size=n, max_size=n)`` draws, uniform over each
    range, in one draw a column, not two a value (the draws were most of the test's time).
    The bytes shrink to zeros: to the first of ``values``, its smallest value."""
    raw = draw(st.binary(min_size=4 * n, max_size=4 * n))
    out: list[Any] = []
    for i in range(n):
        word = int.from_bytes(raw[4 * i:4 * i + 4], "little")
        lo, k = values[word % len(values)]
        out.append(None if lo is None else lo + word // len(values) % k)
    return out


def _requests(draw: st.DrawFn, n: int, shared: dict[str, list[Any]]) -> dict[str, list[Any]]:
    def col(*values: tuple[int | None, int]) -> list[Any]:
        return _column(draw, n, *values)

    def floats(hi: float) -> list[float]:
        return draw(st.lists(st.floats(0, hi), min_size=n, max_size=n))

    truth = col(*_TOKENS)
    raw = [t if keep else t + 1 for t, keep in zip(truth, col((0, 2)))]
    window = draw(st.sampled_from([[200_000] * n, col((1, 300_000))]))
    reserve = [20_000] * n
    own = {
        "request": list(range(n)), "est_tokens": col(*_TOKENS), "truth_tokens": truth,
        "raw_tokens": raw,
        "window_tokens": window, "reserve_tokens": reserve,
        "overshoot_tokens": [max(0, t + r - w) for t, r, w in zip(truth, reserve, window)],
        "bytes_args": col(*_TOKENS), "bytes_args_write": col(*_TOKENS),
        "bytes_results": col(*_TOKENS), "bytes_other": col(*_TOKENS),
        "cached_tokens": col(*_TOKENS), "cache_write_tokens": col(*_TOKENS),
        "fresh_tokens": col(*_TOKENS), "output_tokens": col(*_TOKENS),
        "invalidated_tokens": col(*_TOKENS),
        "cost_usd": floats(10), "induced_cost_usd": floats(1),
        "recorded_input_tokens": col(_NONE, *_TOKENS),
        "recorded_cache_read_tokens": col(_NONE, *_TOKENS),
    }
    return {**own, **{c: _signed_zeros(draw, v) for c, v in shared.items()}}


def _signed_zeros(draw: st.DrawFn, values: list[Any]) -> list[Any]:
    """``values``, its float zeros of either sign (equal lists, other bits)."""
    return [draw(_SIGNED_ZERO) if v == 0 and isinstance(v, float) else v for v in values]


_SHARED: dict[str, Any] = {  # columns a run's replays may hold equal (each read once:
    # stats.request_arrays): a strategy of one value, or _column's ranges
    "output_tokens": (_BIG,), "cache_write_tokens": (_SMALL,),
    "recorded_input_tokens": (_NONE, _BIG), "recorded_cache_read_tokens": (_NONE, _SMALL),
    "induced_cost_usd": st.one_of(st.just(0.0), st.floats(0, 1)), "cost_usd": st.floats(0, 10),
    "truth_tokens": ((1, 3),)}


_NO_ACTIONS: dict[str, list[Any]] = {c: [] for c in (
    "kind", "invalidated_tokens", "reclaimed_tokens", "reclaimed_est_tokens",
    "min_reclaim_tokens")}


@st.composite
def _batches(draw: st.DrawFn) -> list[PartInput]:
    """Replays of one run: random columns, some of them equal in every replay (zeros of
    either sign in a float one), the run's first recorded compaction anywhere or none."""
    n = draw(st.integers(1, 40))
    shared = {c: draw(st.lists(v, min_size=n, max_size=n)) if isinstance(v, st.SearchStrategy)
              else _column(draw, n, *v) for c, v in _SHARED.items() if draw(st.booleans())}
    facts = RunFacts("r", _STATIC, (), 0, draw(st.sampled_from([math.inf, 0, 1, n // 2, n])))
    return [PartInput(_requests(draw, n, shared), _NO_ACTIONS, {}, [],
                      draw(st.sampled_from([BASE, BASE, OTHER_PRICES])), facts)
            for _ in range(draw(st.integers(1, 5)))]


def _replays(*truth_est: tuple[list[int], list[int]]) -> list[PartInput]:
    """Replays of one run, each of its (truth, est) tokens, its other columns 0 (None: the
    recorded ones)."""
    n = len(truth_est[0][0])
    zeros, nones = [0] * n, [None] * n
    facts = RunFacts("r", _STATIC, (), 0, math.inf)
    return [PartInput({"request": list(range(n)), "est_tokens": est, "truth_tokens": truth,
                       "raw_tokens": truth, "window_tokens": [200_000] * n,
                       "reserve_tokens": [20_000] * n, "overshoot_tokens": zeros,
                       **{c: zeros for c in ("bytes_args", "bytes_args_write", "bytes_results",
                                             "bytes_other", "cached_tokens", "cache_write_tokens",
                                             "fresh_tokens", "output_tokens",
                                             "invalidated_tokens")},
                       "cost_usd": [0.0] * n, "induced_cost_usd": [0.0] * n,
                       "recorded_input_tokens": nones, "recorded_cache_read_tokens": nones},
                      _NO_ACTIONS, {}, [], BASE, facts) for truth, est in truth_est]


@settings(max_examples=40, deadline=None)
@given(_batches())
# a replay with a request of no tokens: the others' mean error is summed in their own order
@example(_replays(([100, 194_965, 1], [1, 1, 0]), ([0, 0, 0], [0, 0, 0])))
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
