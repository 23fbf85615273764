"""Where a serial sweep spends its CPU, and how near its sharing comes to the fewest replays.

    python benchmarks/sweep_parts.py [--size 100] [--repeat 5] [PATH ...]
                                     (default: ../shared/logs-sample)

The grid is ``sweep_speed.py``'s (every ``1000 / --size``-th setting of its 10 × 10 × 10 grid).
After ingesting and one untimed sweep (the runs read and prepared, kept by this process), it
prints, for a sweep in this one process (``jobs=1``, no cache):

- the sweep's CPU time, best of ``--repeat`` rounds, without and then with the parts' clocks
  (rounds alternated: what the clocks themselves cost is the difference);
- of the best round with clocks, the time spent in each part (``time.perf_counter`` around
  each call of ``analysis.sweep.unit``'s functions, this process doing nothing else):
  replays (``replay``, the probe's records included), metrics (``_values``), sharing checks
  (``_shared`` and ``_repeats``), the rest of the units (their loop and bookkeeping, and the
  traces freed when a unit returns) and the rest of the sweep outside its units (planning,
  the table);
- the grid's cells, the distinct traces among them (every cell replayed by the bare engine and
  its three trace tables compared, run by run) and the replays the sweep made: no sharing can
  make fewer replays than there are distinct traces.

Not a test; nothing is asserted but that the sweep replayed at least one setting a run.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PARTS = {"replays": ("replay",), "metrics": ("_values",), "sharing checks": ("_shared", "_repeats")}
"""Part → the functions of ``analysis.sweep.unit`` whose calls it is."""


@contextmanager
def clocked(spent: dict[str, float]) -> Iterator[None]:
    """``analysis.sweep.unit``'s part functions and ``sweep_unit`` wrapped, each call's time
    added to ``spent`` under its part (``units`` for ``sweep_unit``), put back on leaving."""
    from analysis.sweep import unit

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t
        return call

    saved = {f: getattr(unit, f) for fs in PARTS.values() for f in fs} | {
        "sweep_unit": unit.sweep_unit}
    try:
        for part, fs in {**PARTS, "units": ("sweep_unit",)}.items():
            for f in fs:
                setattr(unit, f, timed(part, saved[f]))
        yield
    finally:
        for f, fn in saved.items():
            setattr(unit, f, fn)


def distinct_traces(corpus: Any, chosen: list[Any]) -> int:
    """The distinct traces among every (run, setting) of the grid: each replayed by the bare
    engine, its three tables' columns pickled and hashed, counted run by run."""
    from replay.engine.fold import replay
    from replay.engine.trace import TRACE_SCHEMAS

    total = 0
    for rid in corpus.replayable():
        run, calibration = corpus.prepared(rid), corpus.calibration(rid)
        seen = set()
        for s in chosen:
            trace = replay(run, s.policy, calibration=calibration)
            data = pickle.dumps([trace.columns(t) for t in TRACE_SCHEMAS], protocol=5)
            seen.add(hashlib.blake2b(data, digest_size=16).digest())
        total += len(seen)
    return total


def main(paths: list[Path], size: int, repeat: int) -> None:
    """Print the figures."""
    from analysis.sweep.core import sweep
    from analysis.sweep.grid import make_spec, settings
    from benchmarks.sweep_speed import AXES
    from replay.corpus import open_corpus
    from replay.policy import load_policy

    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        grid = settings(load_policy("two-tier-corrected"), make_spec(AXES))
        chosen = grid[::max(1, len(grid) // size)][:size]
        n_runs = len(corpus.replayable())
        if not n_runs:
            from corpus_args import no_runs

            no_runs(paths)
        first = sweep(corpus, chosen, jobs=1)  # (untimed: every run read and prepared, kept)
        assert first.stats.n_replays >= n_runs, "the sweep replayed less than a setting a run"
        bare: list[float] = []
        rounds: list[tuple[float, dict[str, float]]] = []
        for _ in range(repeat):
            t = time.process_time()
            sweep(corpus, chosen, jobs=1)
            bare.append(time.process_time() - t)
            spent = dict.fromkeys([*PARTS, "units"], 0.0)
            with clocked(spent):
                t = time.process_time()
                sweep(corpus, chosen, jobs=1)
                rounds.append((time.process_time() - t, spent))
        total, spent = min(rounds, key=lambda r: r[0])
        print(f"{len(chosen)} settings x {n_runs} runs, one process, best of {repeat} rounds")
        print(f"sweep CPU: {min(bare) * 1e3:.0f} ms without the parts' clocks, "
              f"{total * 1e3:.0f} ms with them")
        ms = {k: v * 1e3 for k, v in spent.items()}
        inside = ms["units"] - sum(ms[p] for p in PARTS)
        print("of the round with clocks: " + ", ".join(f"{p} {ms[p]:.0f} ms" for p in PARTS)
              + f", the rest of the units {inside:.0f} ms (their loop, the traces freed at "
              f"their end), outside the units {total * 1e3 - ms['units']:.0f} ms (planning, "
              "the table)")
        n_distinct = distinct_traces(corpus, chosen)
        print(f"cells {len(chosen) * n_runs:,}; distinct traces {n_distinct:,} (the fewest "
              f"replays any sharing could make); replays the sweep made {first.stats.n_replays:,}")


if __name__ == "__main__":
    from corpus_args import add_paths, existing_paths

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_paths(parser, [REPO.parent / "shared" / "logs-sample"])
    parser.add_argument("--size", type=int, default=100, help="settings (at most 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the best is kept")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # (``benchmarks.sweep_speed``: the grid's axes)
    main(existing_paths(parser, args), min(1000, max(1, args.size)), max(1, args.repeat))
