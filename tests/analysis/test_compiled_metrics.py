"""The per-run metric parts compiled with mypyc (``setup.py``'s ``METRIC_MODULES``,
``analysis/per_run/_build.py``): a sweep's table by the compiled parts is the pure-Python
parts' to the bit; and the parts' loops over plain lists (written for the compiler) against
the NumPy definitions they replaced, on values that round, NaN and the edges."""

from __future__ import annotations

import math
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.per_run import cache_invalidation, induced, rereads
from analysis.per_run._build import BUILD
from replay.compiled_engine import PURE_ENV
from replay.corpus import Corpus
from tests.analysis.pure_metrics import tables

REPO = Path(__file__).resolve().parents[2]


def _bits(v: Any) -> Any:
    """A cell as compared: a float by its bits (NaN as NaN), anything else as itself."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else struct.pack("<d", v)
    return (type(v).__name__, v)


@pytest.mark.skipif(not BUILD.compiled, reason=f"no compiled metric parts: {BUILD.describe()}")
def test_compiled_and_pure_metrics_are_bit_identical(tmp_path: Path, sample_corpus: Corpus,
                                                     logs_corpus: Corpus) -> None:
    """A sweep's every metric row over the samples and ``logs/``: pure (``CTXREPLAY_PURE=1``,
    ``tests/analysis/pure_metrics.py`` in a process of its own) against compiled (here)."""
    out = tmp_path / "pure.pkl"
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    pure = subprocess.run([sys.executable, "-m", "tests.analysis.pure_metrics", str(out),
                           str(sample_corpus.root), str(logs_corpus.root)],
                          capture_output=True, text=True, env={**env, PURE_ENV: "1"}, cwd=REPO,
                          check=False)
    assert pure.returncode == 0, pure.stderr
    want = pickle.loads(out.read_bytes())
    got = tables([sample_corpus, logs_corpus])
    for w, g in zip(want, got, strict=True):
        assert list(w.columns) == list(g.columns) and len(w) == len(g) > 10
        assert (w.dtypes == g.dtypes).all()
        changed = [(c, i) for c in w.columns
                   for i, (a, b) in enumerate(zip(w[c].tolist(), g[c].tolist()))
                   if _bits(a) != _bits(b)]
        assert not changed, changed[:10]


def test_the_compiled_parts_are_the_ones_running_when_built() -> None:
    from analysis.per_run import stats

    assert stats.__file__ is not None
    assert stats.__file__.endswith(".py") != BUILD.compiled, (stats.__file__, BUILD.describe())


_COUNT = st.integers(0, 10**7)
_PRICE = st.one_of(st.sampled_from([0.0, 3.0, 0.3, 3.75, 15.0, 1e-300, math.inf, math.nan, 3]),
                   st.floats(0, 1e3))


@given(st.lists(st.tuples(_COUNT, _COUNT, _COUNT, _COUNT, _COUNT,
                          st.floats(allow_nan=True, allow_infinity=True, width=64),
                          st.sampled_from([0.0, -0.0, 1e-9, 0.25])), min_size=1, max_size=40),
       st.tuples(_PRICE, _PRICE, _PRICE, _PRICE))
def test_the_cost_check_is_numpys(rows: list[tuple[Any, ...]],
                                  prices: tuple[float, float, float, float]) -> None:
    """``_priced``'s loop against the arrays it replaced: the largest difference to the bit (NaN
    when one is), the mispriced requests."""
    cols = ("fresh_tokens", "cached_tokens", "cache_write_tokens", "truth_tokens",
            "output_tokens", "cost_usd", "induced_cost_usd")
    rq = {c: [r[k] for r in rows] for k, c in enumerate(cols)}
    ip, rp, wp, op = prices
    a = {c: np.array(v, dtype=np.float64 if c in ("cost_usd", "induced_cost_usd") else np.int64)
         for c, v in rq.items()}
    with np.errstate(all="ignore"):  # (inf - inf: NaN, as the loop makes it too)
        want = float(abs(a["cost_usd"] - (((a["fresh_tokens"] * ip / 1e6)
                                           + (a["cached_tokens"] * rp / 1e6))
                                          + (a["cache_write_tokens"] * wp / 1e6)
                                          + (a["output_tokens"] * op / 1e6)
                                          + a["induced_cost_usd"])).max())
    mispriced = int(np.count_nonzero(a["cached_tokens"] + a["cache_write_tokens"]
                                     + a["fresh_tokens"] != a["truth_tokens"]))
    got, got_mispriced = cache_invalidation._priced(rq, ip, rp, wp, op)
    assert _bits(got) == _bits(want) and got_mispriced == mispriced


def test_the_cost_check_of_no_request_fails_as_numpy() -> None:
    rq: dict[str, list[Any]] = {c: [] for c in ("fresh_tokens", "cached_tokens",
                                                "cache_write_tokens", "truth_tokens",
                                                "output_tokens", "cost_usd", "induced_cost_usd")}
    with pytest.raises(ValueError, match="zero-size"):
        cache_invalidation._priced(rq, 1.0, 1.0, 1.0, 1.0)


_RECORDED = st.one_of(st.none(), st.integers(-5, 10**6), st.sampled_from([2**53, 2**60]))


@given(st.lists(st.tuples(_RECORDED, _RECORDED, _COUNT, _COUNT), max_size=30))
def test_the_recorded_share_is_the_float_definitions(rows: list[tuple[Any, ...]]) -> None:
    """``_recorded``'s exact sums against ``_recorded_as_floats`` (the definition: float64,
    None as NaN), counts up to and past 2**53 included."""
    rq = {"request": list(range(len(rows))),
          "recorded_input_tokens": [r[0] for r in rows],
          "recorded_cache_read_tokens": [r[1] for r in rows],
          "cached_tokens": [r[2] for r in rows], "truth_tokens": [r[3] for r in rows]}
    got = cache_invalidation._recorded(rq)
    want = cache_invalidation._recorded_as_floats(rq)
    assert [_bits(v) for v in got] == [_bits(v) for v in want]


@given(st.lists(st.sampled_from(["trim", "induced_reread", "summarise"]), max_size=30))
def test_positions_are_every_match_in_order(values: list[str]) -> None:
    assert induced._positions(values, "induced_reread") == [
        i for i, v in enumerate(values) if v == "induced_reread"]


@given(st.sets(st.integers(-3, 40) | st.sampled_from([rereads.FLAGGED_MSGS, 2**40])),
       st.lists(st.integers(-5, 45) | st.sampled_from([rereads.FLAGGED_MSGS, 2**40])))
def test_flagged_messages_are_the_set(msgs: set[int], looked_up: list[int]) -> None:
    """``_flags`` and the look-up ``_rereads`` makes with it: a message is wanted exactly when
    it is in the set (a negative or a very large number too)."""
    flags, others = rereads._flags(msgs)
    for m in looked_up:
        found = flags[m] if 0 <= m < len(flags) else bool(others) and m in others
        assert found == (m in msgs)


@pytest.mark.parametrize("pure", [False, True])
def test_version_says_which_metric_parts_run(pure: bool) -> None:
    """``replay --version`` names the metric parts' build beside the engine's: the build this
    process chose (``BUILD``), or pure Python under ``CTXREPLAY_PURE=1``; without importing
    NumPy to say it."""
    env = {**os.environ, PURE_ENV: "1"} if pure else dict(os.environ)  # (else as this process:
    # its BUILD is the one expected, also under CTXREPLAY_PURE=1)
    probe = ("import sys; from replay.cli import app; from typer.testing import CliRunner;"
             "r = CliRunner().invoke(app, ['--version']); print(r.output);"
             "print('numpy' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, check=True, cwd=REPO).stdout.splitlines()
    said = [line for line in got if line.startswith("metric parts: ")]
    assert len(said) == 1, got
    want = "pure Python (CTXREPLAY_PURE=1)" if pure else BUILD.describe()
    assert said[0] == f"metric parts: {want}"
    assert got[-1] == "False"
