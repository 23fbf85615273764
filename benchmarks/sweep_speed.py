"""Sweep throughput: a 1,000-setting grid over the sample corpus, on local worker processes.

    python benchmarks/sweep_speed.py [--jobs 2] [PATH ...]   (default: ../shared/logs-sample)

The grid is 10 × 10 × 10 values of the corrected two-tier preset's thresholds
(the summary trigger, the protected fraction of the trim tier, the emergency
margin).  After ingesting (not timed) it prints:

- the time to build and validate the 1,000 settings;
- the sweep with ``--jobs`` worker processes (no cache): wall time, run-replays per
  second (one run replayed under one setting, metrics included), and the peak
  resident memory of the whole process tree (this process and its workers,
  sampled from /proc every 50 ms);
- the reference, measured in the same run: the same replays and metrics done
  serially in this one process, and the speed-up over it;
- whether the two tables are identical.

Targets: the whole grid in under 60 s on two cores, peak memory under 1 GB.
The machine's load average is printed too: other processes on the machine slow
both measurements alike, so the ratio means more than the wall times.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from analysis.sweep.core import sweep
from analysis.sweep.grid import make_spec, settings
from replay.corpus import open_corpus
from replay.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
AXES = {
    "tiers.1.trigger.at_tokens": {"start": 40000, "stop": 112000, "num": 10},
    "tiers.0.protect.frac": {"start": 0.05, "stop": 0.5, "num": 10},
    "tiers.2.margin_frac": {"start": 0.05, "stop": 0.32, "num": 10},
}


class TreeMemory:
    """Samples the summed resident memory of this process and its descendants (Linux /proc)."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)

    def __enter__(self) -> TreeMemory:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self, every_s: float) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(os.getpid()))
            self._stop.wait(every_s)


def tree_rss_bytes(root: int) -> int:
    """Resident memory of ``root`` and every process below it."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in tree]
        tree.update(kids)
        frontier += kids
    total = 0
    for pid in tree:
        try:
            rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += rss_pages * os.sysconf("SC_PAGE_SIZE")
    return total


def main(paths: list[Path], jobs: int) -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        n_runs = len(corpus.replayable())
        n_req = sum(corpus.runs["n_requests"].to_pylist())
        t = time.perf_counter()
        chosen = settings(load_policy("two-tier-corrected"), make_spec(AXES))
        build = time.perf_counter() - t
        n = n_runs * len(chosen)
        print(f"corpus: {n_runs} runs, {n_req:,} requests; grid: {len(chosen):,} settings "
              f"(built and validated in {build:.1f} s); {n:,} run-replays, "
              f"{n_req * len(chosen):,} request-replays")
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        with TreeMemory() as mem:
            t = time.perf_counter()
            parallel = sweep(corpus, chosen, jobs=jobs)
            wall = time.perf_counter() - t
        print(f"sweep, {jobs} worker processes: {wall:6.1f} s  {n / wall:8,.0f} run-replays/s  "
              f"peak RSS of the process tree {mem.peak_bytes / 2**20:,.0f} MiB")
        t = time.perf_counter()
        serial = sweep(corpus, chosen, jobs=1)
        ref = time.perf_counter() - t
        print(f"reference, serial in one process: {ref:6.1f} s  {n / ref:8,.0f} run-replays/s")
        print(f"speed-up over serial: {ref / wall:.2f}x on {jobs} workers; tables identical: "
              f"{parallel.table.equals(serial.table)}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"targets: < 60 s ({'met' if wall < 60 else 'MISSED'}), < 1 GiB "
              f"({'met' if mem.peak_bytes < 2**30 else 'MISSED'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path,
                        default=[REPO.parent / "shared" / "logs-sample"])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args()
    main(args.paths, args.jobs)
