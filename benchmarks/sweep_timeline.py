"""Where a sweep's wall time goes on a local pool of workers, task by task.

    python benchmarks/sweep_timeline.py [--settings 100] [--sweeps 5] [--jobs 2] [PATH ...]

The grid of ``benchmarks/sweep_speed.py`` (two-tier-corrected, its axes), ``--settings`` of its
settings, swept ``--sweeps`` times over the sample runs after the same warm-up.  Each task a
worker runs is timed inside the worker (monotonic clock, shared by the processes); for each
sweep the line says its wall time and, per worker, the tasks it ran, when its first task began
after ``sweep()`` was called, the time it was busy (and the CPU time its tasks took: on a
loaded machine the busy time includes waiting for a core), the gaps between its tasks, and
how long before the sweep's end its last task finished (the parent's table, and the other
worker's last task).  What the README's and docs/performance.md's timeline of a 100-setting
sweep comes from.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO.parent / "shared" / "logs-sample"


def _timed(units: Any, blob: bytes, *, worker: bool = False) -> Any:
    """``sweep_units``, its start, end and CPU time written to the file ``SWEEP_TIMELINE_LOG``
    names (runs in the workers: pickled by value, with this script as ``__main__``)."""
    from analysis.sweep.unit import sweep_units

    t0, c0 = time.monotonic(), time.thread_time()
    rows = sweep_units(units, blob, worker=worker)
    t1, c1 = time.monotonic(), time.thread_time()
    with open(os.environ["SWEEP_TIMELINE_LOG"], "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {t0:.6f} {t1:.6f} {c1 - c0:.6f}\n")
    return rows


def main(paths: list[Path], n_settings: int, sweeps: int, jobs: int) -> None:
    """Print the timelines."""
    # the package after the command line: --help needs none of it
    from analysis.sweep import execute
    from analysis.sweep.core import sweep
    from analysis.sweep.grid import make_spec, settings
    from benchmarks.sweep_speed import AXES
    from replay.corpus import open_corpus
    from replay.policy import load_policy

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "tasks.txt"
        os.environ["SWEEP_TIMELINE_LOG"] = str(log)  # before the pool starts: its workers see it
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        grid = settings(load_policy("two-tier-corrected"), make_spec(AXES))
        chosen = grid[::max(1, len(grid) // n_settings)][:n_settings]
        sweep(corpus, grid[:1], jobs=jobs)
        execute.warm(corpus, jobs)
        execute.sweep_units = _timed  # type: ignore[assignment]
        print(f"{len(chosen)} settings x {len(corpus.replayable())} runs, {jobs} workers, "
              f"load average {os.getloadavg()[0]:.2f}; times in ms")
        for _ in range(sweeps):
            log.write_text("", encoding="utf-8")
            t0 = time.monotonic()
            sweep(corpus, chosen, jobs=jobs)
            t1 = time.monotonic()
            tasks: dict[str, list[tuple[float, float]]] = {}
            cpu: dict[str, float] = {}
            for line in log.read_text(encoding="utf-8").splitlines():
                pid, a, b, c = line.split()
                tasks.setdefault(pid, []).append((float(a), float(b)))
                cpu[pid] = cpu.get(pid, 0.0) + float(c)
            parts = [f"wall {1000 * (t1 - t0):6.1f}"]
            for pid, spans in tasks.items():
                spans.sort()
                gaps = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
                busy = 1000 * sum(b - a for a, b in spans)
                parts.append(f"| {len(spans):2d} tasks, first at {1000 * (spans[0][0] - t0):5.1f},"
                             f" busy {busy:6.1f} (CPU {1000 * cpu[pid]:5.1f}), gaps "
                             f"{1000 * sum(gaps):5.1f} (max {1000 * max(gaps, default=0):4.1f}),"
                             f" done {1000 * (t1 - spans[-1][1]):5.1f} before the end")
            print(" ".join(parts))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[SAMPLES])
    ap.add_argument("--settings", type=int, default=100)
    ap.add_argument("--sweeps", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    import sys
    sys.path.insert(0, str(REPO))
    main(args.paths, args.settings, args.sweeps, args.jobs)
