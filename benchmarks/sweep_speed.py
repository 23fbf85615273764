"""Sweep throughput against the bare engine: grids of 10, 100 and 1,000 settings over the samples.

    python benchmarks/sweep_speed.py [--jobs 2] [--sizes 10,100,1000] [--repeat 3] [PATH ...]
                                     (default: ../shared/logs-sample)

The largest grid is 10 × 10 × 10 values of the corrected two-tier preset's thresholds
(the summary trigger, the protected fraction of the trim tier, the emergency
margin); the smaller ones take every 10th / 100th of its settings.  After ingesting (not
timed) and a warm-up (not timed: a sweep of one setting that starts the workers, then every
worker reads and prepares every run), for each grid it prints:

- the sweep with ``--jobs`` worker processes (no cache): wall time, CPU time of the whole
  process tree (this process and its workers, from /proc; less the CPU of the thread sampling
  the memory) and of this process alone (planning, sending units, gathering rows, the table:
  ``parent``), time per setting, and the peak resident memory of the tree (sampled from /proc
  every 50 ms);
- the bare engine: every (run, setting) of the same grid replayed in this process with no
  metrics, no loading and no table (``replay.engine.fold.replay`` only), CPU time, and that
  time divided by the cores the sweep used: what the same request-replays cost the engine alone;
- each of these the best of ``--repeat`` rounds, the sweep and the engine alternately (load
  from other processes only ever slows a round down); the peak memory the highest of them;
- their ratios: sweep wall ÷ (engine CPU ÷ cores) and sweep CPU ÷ engine CPU (target ≤ 1.0;
  on a machine loaded by other processes the CPU ratio is the steadier one).
- the replays the sweep made (the other cells took the row of a replay standing for theirs
  exactly), those of them whose trace repeated the replay before them in their unit (their
  metrics not computed again: ``repeats``) and the units that read and prepared their run
  (the others' worker had kept it: the warm-up loads every run in every worker,
  ``analysis.sweep.execute.warm``, as the bare engine prepares its runs before its clock
  starts).

For the largest grid also the reference: the same sweep done serially in this one process,
the speed-up over it, and whether the two tables are identical cell by cell.

Targets: ratio ≤ 1.0, peak memory under 1 GiB.
The machine's load average is printed too.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from analysis.sweep.core import SweepResult, sweep
from analysis.sweep.execute import warm
from analysis.sweep.grid import Setting, make_spec, settings
from replay.corpus import Corpus, open_corpus
from replay.engine.fold import replay
from replay.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
AXES = {
    "tiers.1.trigger.at_tokens": {"start": 40000, "stop": 112000, "num": 10},
    "tiers.0.protect.frac": {"start": 0.05, "stop": 0.5, "num": 10},
    "tiers.2.margin_frac": {"start": 0.05, "stop": 0.32, "num": 10},
}


class TreeMemory:
    """Samples the summed resident memory of this process and its descendants (Linux /proc).

    Each sample walks /proc (a few ms of CPU); ``own_cpu_s`` is what the sampling thread spent,
    which ``timed_sweep`` takes off the tree's CPU time: the sweep does not pay for its meter."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.peak_bytes = 0
        self.own_cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)

    def __enter__(self) -> TreeMemory:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self, every_s: float) -> None:
        t = time.thread_time()
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(os.getpid()))
            self._stop.wait(every_s)
        self.own_cpu_s = time.thread_time() - t


def tree_pids(root: int) -> set[int]:
    """``root`` and every process below it."""
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
    return tree


def tree_rss_bytes(root: int) -> int:
    """Resident memory of ``root`` and every process below it."""
    total = 0
    for pid in tree_pids(root):
        try:
            rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += rss_pages * os.sysconf("SC_PAGE_SIZE")
    return total


def tree_cpu_s(root: int) -> dict[int, float]:
    """CPU seconds so far of ``root`` (``time.process_time``: every thread, ended ones too) and
    of every process below it (the sum of its threads' ``schedstat`` run times, in ns: the
    ``stat`` file's user + system time counts in 10 ms ticks, as coarse as a small sweep's
    whole figure on each of three processes), by pid."""
    out: dict[int, float] = {}
    for pid in tree_pids(root):
        if pid == root:
            out[pid] = time.process_time()
            continue
        total_ns = 0
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                total_ns += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
        out[pid] = total_ns / 1e9
    return out


def engine_cpu_s(corpus: Corpus, chosen: list[Setting]) -> float:
    """CPU seconds of the bare engine replaying every setting over every run, in this process
    (runs prepared first, not timed; no metrics, no rows)."""
    ids = corpus.replayable()
    runs = [(corpus.prepared(rid), corpus.calibration(rid)) for rid in ids]
    total = 0.0
    for run, calibration in runs:
        t = time.process_time()
        for s in chosen:
            replay(run, s.policy, calibration=calibration)
        total += time.process_time() - t
    return total


def timed_sweep(corpus: Corpus, chosen: list[Setting], jobs: int) -> tuple[SweepResult, float,
                                                                            float, float, int]:
    """The sweep, its wall and process-tree CPU seconds (less the memory sampler's own), this
    process's share of that CPU, and the tree's peak RSS bytes."""
    me = os.getpid()
    cpu0 = tree_cpu_s(me)
    with TreeMemory() as mem:
        t = time.perf_counter()
        result = sweep(corpus, chosen, jobs=jobs)
        wall = time.perf_counter() - t
    cpu1 = tree_cpu_s(me)
    cpu = sum(v - cpu0.get(pid, 0.0) for pid, v in cpu1.items()) - mem.own_cpu_s
    parent = cpu1[me] - cpu0[me] - mem.own_cpu_s
    return result, wall, cpu, parent, mem.peak_bytes


def main(paths: list[Path], jobs: int, sizes: list[int], repeat: int) -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        n_runs = len(corpus.replayable())
        if not n_runs:
            from corpus_args import no_runs

            no_runs(paths)
        n_req = sum(corpus.runs["n_requests"].to_pylist())
        t = time.perf_counter()
        grid = settings(load_policy("two-tier-corrected"), make_spec(AXES))
        build = time.perf_counter() - t
        print(f"corpus: {n_runs} runs, {n_req:,} requests; grid: {len(grid):,} settings "
              f"(built and validated in {build:.1f} s); sweeps on {jobs} worker processes")
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        t = time.perf_counter()
        sweep(corpus, grid[:1], jobs=jobs)
        warmed = warm(corpus, jobs)
        print(f"warm-up (not timed): a sweep of 1 setting starts the {jobs} workers, then "
              f"{warmed.n_workers} of them keep {warmed.n_runs} of the {n_runs} runs each "
              f"({warmed.n_loads} read and prepared now): {time.perf_counter() - t:.1f} s")
        print("both sides exclude reading and preparing runs (the engine's are prepared before "
              "its clock starts; the sweep's workers keep theirs from the warm-up: 'loads' "
              "counts the units that still read one); the sweep includes everything else "
              "(planning, shipping units, metrics, the table)")
        print(f"{'settings':>8} {'req-replays':>12} {'sweep wall':>10} {'sweep CPU':>10} "
              f"{'parent':>7} {'per setting':>11} {'engine CPU':>10} {'engine/cores':>12} "
              f"{'wall ratio':>10} {'CPU ratio':>9} {'peak RSS':>9} {'replays':>8} {'repeats':>7} "
              f"{'loads':>5}")
        parallel = None
        worst = 0
        for size in sizes:
            chosen = grid[::max(1, len(grid) // size)][:size]
            rounds = []
            for _ in range(repeat):  # interleaved: load on the machine slows one round, not a side
                rounds.append((timed_sweep(corpus, chosen, jobs), engine_cpu_s(corpus, chosen)))
            result, peak = rounds[0][0][0], max(r[0][4] for r in rounds)
            wall = min(r[0][1] for r in rounds)
            cpu = min(r[0][2] for r in rounds)
            parent = min(r[0][3] for r in rounds)
            engine = min(r[1] for r in rounds)
            bare = engine / max(1, jobs)
            worst = max(worst, peak)
            print(f"{len(chosen):>8,} {n_req * len(chosen):>12,} {wall:>9.2f}s {cpu:>9.2f}s "
                  f"{parent:>6.3f}s {wall / len(chosen) * 1000:>9.1f}ms {engine:>9.2f}s "
                  f"{bare:>11.2f}s "
                  f"{wall / bare:>10.2f} {cpu / engine:>9.2f} {peak / 2**20:>6,.0f} MiB "
                  f"{result.stats.n_replays:>8,} {result.stats.n_repeated:>7,} "
                  f"{result.stats.n_runs_loaded:>5}")
            parallel = (result, chosen, wall)
        assert parallel is not None
        result, chosen, wall = parallel
        t = time.perf_counter()
        serial = sweep(corpus, chosen, jobs=1)
        ref = time.perf_counter() - t
        n = n_runs * len(chosen)
        print(f"reference, {len(chosen):,} settings serial in one process: {ref:6.1f} s  "
              f"{n / ref:8,.0f} run-replays/s; speed-up over serial: {ref / wall:.2f}x on {jobs} "
              f"workers; tables identical: {result.table.equals(serial.table)}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"target: peak memory < 1 GiB ({'met' if worst < 2**30 else 'MISSED'})")


if __name__ == "__main__":
    from corpus_args import add_paths, existing_paths

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_paths(parser, [REPO.parent / "shared" / "logs-sample"])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of each grid (sweep and engine alternately); best of them")
    parser.add_argument("--sizes", default="10,100,1000",
                        help="grid sizes, comma-separated (at most 1000)")
    args = parser.parse_args()
    main(existing_paths(parser, args), args.jobs, [int(x) for x in args.sizes.split(",")], max(1, args.repeat))
