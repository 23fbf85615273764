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
  make fewer replays than there are distinct traces;
- where the replays made are: the runs holding most of them, each with its requests, its
  replays made and distinct traces, what those replays cost in the round with clocks and what
  the bare engine's replays of every setting over it cost (a replay of a long run costs more:
  sharing leaves the short runs a replay or two, so the replays made are mostly the long runs'),
  and the same totals over every run.

Not a test; nothing is asserted but that the sweep replayed at least one setting a run.
"""

from __future__ import annotations

import argparse
import hashlib
import math
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
def clocked(spent: dict[str, float], by_run: dict[str, list[float]]) -> Iterator[None]:
    """``analysis.sweep.unit``'s part functions and ``sweep_unit`` wrapped, each call's time
    added to ``spent`` under its part (``units`` for ``sweep_unit``), and each replay's to
    ``by_run`` under its run (``[replays, seconds]``), put back on leaving."""
    from analysis.sweep import unit

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t
                spent[name] += dt
                if name == "replays":  # replay(run, policy, ...)
                    got = by_run.setdefault(args[0].run_id, [0, 0.0])
                    got[0] += 1
                    got[1] += dt
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


def distinct_traces(corpus: Any, chosen: list[Any]) -> dict[str, int]:
    """Per run, the distinct traces among its cells of the grid: each replayed by the bare
    engine, its three tables' columns pickled and hashed."""
    from replay.engine.fold import replay
    from replay.engine.trace import TRACE_SCHEMAS

    out = {}
    for rid in corpus.replayable():
        run, calibration = corpus.prepared(rid), corpus.calibration(rid)
        seen = set()
        for s in chosen:
            trace = replay(run, s.policy, calibration=calibration)
            data = pickle.dumps([trace.columns(t) for t in TRACE_SCHEMAS], protocol=5)
            seen.add(hashlib.blake2b(data, digest_size=16).digest())
        out[rid] = len(seen)
    return out


def bare_by_run(corpus: Any, chosen: list[Any], repeat: int) -> dict[str, float]:
    """Per run, the CPU seconds of the bare engine replaying every setting over it, one after
    the other (as ``sweep_speed.engine_cpu_s``), best of ``repeat`` rounds."""
    from replay.engine.fold import replay

    best: dict[str, float] = {}
    for _ in range(repeat):
        for rid in corpus.replayable():
            run, calibration = corpus.prepared(rid), corpus.calibration(rid)
            t = time.process_time()
            for s in chosen:
                replay(run, s.policy, calibration=calibration)
            best[rid] = min(best.get(rid, math.inf), time.process_time() - t)
    return best


TOP_RUNS = 5
"""Runs listed by ``main`` under where the replays made are."""


def where_replays(corpus: Any, n_settings: int, by_run: dict[str, list[float]],
                  distinct: dict[str, int], bare: dict[str, float]) -> list[str]:
    """The lines saying which runs hold the replays made (``main``)."""
    from replay.safe_text import terminal

    n_req = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["n_requests"].to_pylist()))
    head = (f"where the replays made are (the {TOP_RUNS} runs with most): run, requests, "
            "replays made / distinct traces, their ms (round with clocks), the bare engine's "
            f"ms for all {n_settings} settings (best of the rounds)")
    lines = [head]
    for rid in sorted(by_run, key=lambda r: (-by_run[r][0], r))[:TOP_RUNS]:
        made, spent = by_run[rid]
        lines.append(f"  {terminal(rid)[:16]:<16} {n_req[rid]:>6,} {int(made):>5} / "
                     f"{distinct[rid]:<5} {spent * 1e3:7.1f} ms {bare[rid] * 1e3:8.1f} ms")
    made_ms = sum(v[1] for v in by_run.values()) * 1e3
    bare_ms = sum(bare.values()) * 1e3
    lines.append(f"  every run: {int(sum(v[0] for v in by_run.values())):,} replays made, "
                 f"{made_ms:.0f} ms; the bare engine's {n_settings * len(distinct):,} replays "
                 f"{bare_ms:.0f} ms (made ÷ bare {made_ms / bare_ms:.2f})")
    return lines


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
        rounds: list[tuple[float, dict[str, float], dict[str, list[float]]]] = []
        for _ in range(repeat):
            t = time.process_time()
            sweep(corpus, chosen, jobs=1)
            bare.append(time.process_time() - t)
            spent = dict.fromkeys([*PARTS, "units"], 0.0)
            by_run: dict[str, list[float]] = {}
            with clocked(spent, by_run):
                t = time.process_time()
                sweep(corpus, chosen, jobs=1)
                rounds.append((time.process_time() - t, spent, by_run))
        total, spent, by_run = min(rounds, key=lambda r: r[0])
        print(f"{len(chosen)} settings x {n_runs} runs, one process, best of {repeat} rounds")
        print(f"sweep CPU: {min(bare) * 1e3:.0f} ms without the parts' clocks, "
              f"{total * 1e3:.0f} ms with them")
        ms = {k: v * 1e3 for k, v in spent.items()}
        inside = ms["units"] - sum(ms[p] for p in PARTS)
        print("of the round with clocks: " + ", ".join(f"{p} {ms[p]:.0f} ms" for p in PARTS)
              + f", the rest of the units {inside:.0f} ms (their loop, the traces freed at "
              f"their end), outside the units {total * 1e3 - ms['units']:.0f} ms (planning, "
              "the table)")
        distinct = distinct_traces(corpus, chosen)
        n_distinct = sum(distinct.values())
        print(f"cells {len(chosen) * n_runs:,}; distinct traces {n_distinct:,} (the fewest "
              f"replays any sharing could make); replays the sweep made {first.stats.n_replays:,}")
        bare_cpu = bare_by_run(corpus, chosen, repeat)
        print("\n".join(where_replays(corpus, len(chosen), by_run, distinct, bare_cpu)))


if __name__ == "__main__":
    from corpus_args import add_paths, existing_paths

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_paths(parser, [REPO.parent / "shared" / "logs-sample"])
    parser.add_argument("--size", type=int, default=100, help="settings (at most 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the best is kept")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # (``benchmarks.sweep_speed``: the grid's axes)
    main(existing_paths(parser, args), min(1000, max(1, args.size)), max(1, args.repeat))
