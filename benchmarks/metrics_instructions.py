"""The per-run metrics' cost in instructions: a steady figure on a loaded machine.

    python benchmarks/metrics_instructions.py CHECKOUT [CHECKOUT] [--size 100] [PATH ...]
                                              (default: ../shared/logs-sample)

Records the metric batches a sweep of ``--size`` settings (``sweep_speed.py``'s grid) gives
``analysis.per_run.fast_metrics.fast_metrics_many`` (``analysis.sweep.unit._values`` wrapped:
each batch's run facts, traces and policies, as the sweep's units make them), pickled once; then
runs each checkout's ``fast_metrics_many`` over every batch under valgrind's callgrind (one
process per checkout, side by side, ``PYTHONHASHSEED=0``): a first pass (imports, caches: not
counted), then a second, whose instructions are printed (between two calls of
``time.thread_time_ns``, which the metrics never call: callgrind dumps its counts before each),
and with two checkouts their ratio (first ÷ second: above 1, the second executes fewer).

The same traces for every checkout (replayed here, by this checkout's engine): only the metrics
differ.  Instructions are not time (a cache miss costs more than an add): ``sweep_parts.py``'s
metrics figure stays the speed one.  Needs ``valgrind``; a checkout is a folder holding this
repository's ``analysis`` package (e.g. a ``git worktree add --detach`` of the reference).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from checkout_args import usable_checkouts

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import pickle, sys, time
from pathlib import Path
from analysis.per_run.fast_metrics import fast_metrics_many
batches = pickle.loads(Path(sys.argv[1]).read_bytes())
def once():
    return [fast_metrics_many(facts, replays) for facts, replays in batches]
once()
time.thread_time_ns()  # a dump: everything before the counted pass
rows = once()
time.thread_time_ns()  # a dump: the counted pass
print(sum(len(r) for r in rows), flush=True)
"""


def record(paths: list[Path], size: int, tmp: Path) -> list[tuple[Any, list[Any]]]:
    """The batches (run facts, [(trace, policy), ...]) a sweep of ``size`` settings computes
    the metrics of, in order."""
    from analysis.sweep import unit
    from analysis.sweep.core import sweep
    from analysis.sweep.grid import make_spec, settings
    from benchmarks.sweep_speed import AXES
    from replay.corpus import open_corpus
    from replay.policy import load_policy

    batches: list[tuple[Any, list[Any]]] = []
    values = unit._values

    def recorded(facts: Any, replays: list[Any]) -> Any:
        if replays:
            batches.append((facts, list(replays)))
        return values(facts, replays)

    corpus = open_corpus(paths, cache_dir=tmp / "ds")
    grid = settings(load_policy("two-tier-corrected"), make_spec(AXES))
    chosen = grid[::max(1, len(grid) // size)][:size]
    unit._values = recorded
    try:
        sweep(corpus, chosen, jobs=1)
    finally:
        unit._values = values
    return batches


def main() -> int:
    """Print the figures; exit 2 without valgrind or with a folder that is not a checkout."""
    from corpus_args import add_paths, existing_paths

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--size", type=int, default=100, help="settings of the sweep (at most 1000)")
    add_paths(ap, [REPO.parent / "shared" / "logs-sample"])
    args = ap.parse_args()
    checkouts: list[Path] = args.checkouts
    if not usable_checkouts("metrics_instructions", checkouts, "analysis/per_run/fast_metrics.py"):
        return 2
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        batches = record(existing_paths(ap, args), min(1000, max(1, args.size)), tmp)
        data = tmp / "batches.pkl"
        data.write_bytes(pickle.dumps(batches, protocol=pickle.HIGHEST_PROTOCOL))
        n_replays = sum(len(r) for _, r in batches)
        procs = []
        for i, checkout in enumerate(checkouts):
            out = tmp / f"cg{i}"
            out.mkdir()
            env = dict(os.environ, PYTHONPATH=str(checkout.resolve()), PYTHONHASHSEED="0",
                       PYTHONDONTWRITEBYTECODE="1")
            procs.append((out, subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--dump-before=time_thread_time_ns",
                 f"--callgrind-out-file={out}/out", sys.executable, "-c", _CHILD, str(data)],
                cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)))
        counts = []
        for out, proc in procs:
            said = proc.stdout.read().split() if proc.stdout else []
            if proc.wait() != 0 or said != [str(n_replays)]:
                print("metrics_instructions: a run under valgrind failed", file=sys.stderr)
                return 1
            dumps = sorted(out.glob("out.*"), key=lambda f: int(f.suffix[1:]))
            totals = [int(m.group(1)) for f in dumps
                      if (m := re.search(r"^totals: (\d+)", f.read_text(), re.MULTILINE))]
            counts.append(totals[1])
    print(f"instructions of fast_metrics_many over a {args.size}-setting sweep's batches "
          f"(callgrind, PYTHONHASHSEED=0): {len(batches)} batches, {n_replays} replays")
    for checkout, n in zip(checkouts, counts):
        print(f"  {checkout!s:40s} {n:>16,}")
    if len(counts) == 2:
        print(f"  {'ratio (first / second)':40s} {counts[0] / counts[1]:16.4f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # (``benchmarks.sweep_speed``: the grid's axes)
    sys.exit(main())
