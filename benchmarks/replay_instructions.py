"""Replay cost in instructions per request, per preset: a steady figure on a loaded machine.

    python benchmarks/replay_instructions.py [--presets a,b,...] [--passes N] CHECKOUT [CHECKOUT]

Runs each checkout's engine under valgrind's callgrind (one process per checkout, side by side)
over the 25 sample runs (``../shared/logs-sample``) and prints the instructions executed per
request replayed, for every preset (or the named ones), and with two checkouts their ratio
(first ÷ second: above 1, the second executes fewer), and the engine each checkout runs
(compiled or pure Python: ``replay/compiled_engine.py``).  Instruction counts do not depend on
other load, where CPU time on a shared machine swings by tens of percent; they are not time
(a memory stall costs more than an add), so ``replay_speed.py`` stays the speed figure.  Each
preset is replayed once before counting (memoised per-run counts and placeholders, as in a
sweep), then ``--passes`` times over the corpus (default 2).  Needs ``valgrind``; a checkout is
a folder holding this repository's ``replay`` package (e.g. a ``git worktree add --detach``
of the reference).
"""

from __future__ import annotations

import argparse
import importlib.machinery
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
from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.policy import load_policy, presets
cache, samples, names, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
corpus = open_corpus([Path(samples)], cache_dir=Path(cache))
runs = [(corpus.prepared(r), corpus.calibration(r)) for r in corpus.replayable()]
names = list(presets()) if names == "all" else names.split(",")
policies = [load_policy(n) for n in names]
for p in policies:
    for r, c in runs:
        replay(r, p, calibration=c)
import gc; gc.collect(); gc.freeze()
print(sum(r.n_requests for r, _ in runs), " ".join(names), flush=True)
time.perf_counter()  # a dump: setup
for r, c in runs:
    replay(r, policies[0], calibration=c)
time.perf_counter()  # a dump: a first phase carries a fixed cost (not counted)
for p in policies:
    for _ in range(passes):
        for r, c in runs:
            replay(r, p, calibration=c)
    time.perf_counter()  # a dump: this preset
"""


def main() -> int:
    """Print the table; exit 2 without valgrind or with a folder that is not a checkout."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--presets", default="all")
    ap.add_argument("--passes", type=int, default=2)
    a = ap.parse_args()
    if not usable_checkouts("replay_instructions", a.checkouts, "replay/engine/fold.py"):
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        procs, engines = [], []
        for i, checkout in enumerate(a.checkouts):
            out, cache = Path(tmp) / f"cg{i}", Path(tmp) / f"ds{i}"
            out.mkdir()
            env = dict(os.environ, PYTHONPATH=str(checkout.resolve()))
            child = [sys.executable, "-c", _CHILD, str(cache), str(SAMPLES), a.presets,
                     str(a.passes)]
            engines.append(_engine(checkout, env))
            # ingest outside valgrind first (the dataset is then opened, not built, inside)
            subprocess.run([*child[:5], "none", "0"], cwd=checkout, env=env, check=True,
                           capture_output=True)
            procs.append((out, subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--dump-before=time_perf_counter",
                 f"--callgrind-out-file={out}/out", *child], cwd=checkout, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)))
        counts, n_req, names = [], 0, []
        for out, proc in procs:
            head = proc.stdout.read().split() if proc.stdout else []
            if proc.wait() != 0 or not head:
                print("replay_instructions: a replay under valgrind failed", file=sys.stderr)
                return 1
            n_req, names = int(head[0]), head[1:]
            dumps = sorted(out.glob("out.*"), key=lambda f: int(f.suffix[1:]))
            totals = [int(m.group(1)) for f in dumps
                      if (m := re.search(r"^totals: (\d+)", f.read_text(), re.MULTILINE))]
            counts.append(dict(zip(names, totals[-len(names):])))
    per = a.passes * n_req
    print(f"instructions per request (callgrind; {a.passes} passes over {n_req:,} requests)")
    for checkout, engine in zip(a.checkouts, engines):
        print(f"  {checkout.name}: engine {engine}")
    print(f"{'preset':28s}" + "".join(f"{c.name[:14]:>16s}" for c in a.checkouts)
          + ("    ratio" if len(counts) == 2 else ""))
    for name in [*names, "all presets (mean)"]:
        v = ([c[name] / per for c in counts] if name in counts[0]
             else [sum(c.values()) / per / len(c) for c in counts])
        print(f"{name:28s}" + "".join(f"{x:16,.0f}" for x in v)
              + (f"  {v[0] / v[1]:7.3f}" if len(v) == 2 else ""))
    return 0


def _engine(checkout: Path, env: dict[str, str]) -> str:
    """Which engine the checkout runs (compiled or pure Python, and why): two checkouts that
    differ in it differ by ~2x in instructions, whatever their code."""
    code = "from replay.compiled_engine import choose; print(choose().describe())"
    probe = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env,
                           capture_output=True, text=True, check=False)
    if probe.returncode == 0:
        return probe.stdout.strip()
    if "No module named 'replay.compiled_engine'" in probe.stderr:  # an older checkout
        so = [p for p in (checkout / "replay" / "engine").rglob("*")
              if p.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
        return (f"unknown: {len(so)} extension modules and no replay/compiled_engine.py" if so
                else "pure Python (a checkout from before the compiled engine)")
    return "unknown (the probe failed)"


if __name__ == "__main__":
    sys.exit(main())
