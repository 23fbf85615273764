"""Ingest cost in instructions: a steady figure on a loaded machine.

    python benchmarks/ingest_instructions.py CHECKOUT [CHECKOUT] [--path PATH ...]

Runs each checkout's ``replay.ingest.batch.ingest`` (``jobs=1``) under valgrind's callgrind (one
process per checkout, side by side) over the sample logs (``../shared/logs-sample``; or the
files and folders given with ``--path``, e.g. a corpus of small files for what a file costs
whatever its size): a first
ingest into a fresh store (imports, the encodings' load, lazily built
tables: not counted), then a second into another fresh store, whose instructions are printed,
and with two checkouts their ratio (first ÷ second: above 1, the second executes fewer).
``PYTHONHASHSEED=0``, so the same code executes the same instructions run after run (the
counted ingest lies between two calls of ``time.thread_time_ns``, which nothing in an ingest
calls: callgrind dumps its counts before each).

Instruction counts do not depend on other load, where CPU time on a shared machine swings by
tens of percent; they are not time: a memory stall costs more than an add, and valgrind hides
the CPU's SHA extensions, so sha256 counts ~30 instructions a byte here (a quarter of the
samples' count) where it costs ~0.7 ns a byte outside valgrind.  ``ingest_speed.py`` stays the
speed figure.  Needs ``valgrind``; a checkout is a folder holding this repository's ``replay``
package (e.g. a ``git worktree add --detach`` of the reference).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from checkout_args import usable_checkouts

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO.parent / "shared" / "logs-sample"

_CHILD = r"""
import sys, time
from pathlib import Path
from replay.ingest.batch import ingest
work, paths = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
ingest(paths, work / "first", jobs=1)
time.thread_time_ns()  # a dump: everything before the counted ingest
report = ingest(paths, work / "counted", jobs=1)
time.thread_time_ns()  # a dump: the counted ingest
print(len(report.parsed), report.n_tokens, len(report.issues), flush=True)
"""


def main() -> int:
    """Print the figures; exit 2 without valgrind or with a folder that is not a checkout."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--path", action="append", type=Path, dest="paths",
                    help="a file or folder to ingest (repeatable; default: the sample logs)")
    args = ap.parse_args()
    checkouts: list[Path] = args.checkouts
    inputs = [str(p.resolve()) for p in args.paths or [SAMPLES]]
    if not usable_checkouts("ingest_instructions", checkouts, "replay/ingest/batch.py"):
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, checkout in enumerate(checkouts):
            out, work = Path(tmp) / f"cg{i}", Path(tmp) / f"work{i}"
            out.mkdir()
            work.mkdir()
            env = dict(os.environ, PYTHONPATH=str(checkout.resolve()), PYTHONHASHSEED="0",
                       PYTHONDONTWRITEBYTECODE="1")
            procs.append((out, subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--dump-before=time_thread_time_ns",
                 f"--callgrind-out-file={out}/out", sys.executable, "-c", _CHILD, str(work),
                 *inputs], cwd=checkout, env=env, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True)))
        counts, said = [], []
        for out, proc in procs:
            head = proc.stdout.read().split() if proc.stdout else []
            if proc.wait() != 0 or len(head) != 3:
                print("ingest_instructions: an ingest under valgrind failed", file=sys.stderr)
                return 1
            said.append(head)
            dumps = sorted(out.glob("out.*"), key=lambda f: int(f.suffix[1:]))
            totals = [int(m.group(1)) for f in dumps
                      if (m := re.search(r"^totals: (\d+)", f.read_text(), re.MULTILINE))]
            counts.append(totals[1])
    files, tokens, issues = said[0]
    print(f"instructions of one jobs=1 ingest (callgrind, PYTHONHASHSEED=0): {files} files, "
          f"{int(tokens):,} tokens, {issues} issues")
    for checkout, n, (f, t, _) in zip(checkouts, counts, said):
        print(f"  {checkout!s:40s} {n:>16,}" + ("" if (f, t) == (files, tokens) else
                                                     f"  (counted otherwise: {f} files, {t})"))
    if len(counts) == 2:
        print(f"  {'ratio (first / second)':40s} {counts[0] / counts[1]:16.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
