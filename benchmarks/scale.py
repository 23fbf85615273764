"""Scale: a 10,000-run archive and a single 20,000-request run, memory and time per request.

    python benchmarks/scale.py [--runs 10000] [--requests 20000] [--workdir DIR]

Generates (with ``replay synth``'s generator, deterministically) an archive of many small
runs and one very long run, then measures in child processes:

- ``replay ingest`` + ``replay run`` over the whole archive: peak RSS, compared with the peak
  RSS of the same commands on the archive's largest single run alone (memory must be bounded
  by the largest run, not the archive);
- replay time per request on the 20,000-request run against a 200-request run from the same
  generator (target: within 1.5×), with the policy ``two-tier-corrected``.

Figures are printed as ratios against references measured in the same run.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from replay.synth import CORPUS, synth_run


def _child(cmd: list[str]) -> tuple[float, float]:
    """Run a command in a child process; (seconds, peak RSS of that child in MB)."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(time.perf_counter() - t, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); sys.exit(r.returncode)")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True,
                         check=True)
    seconds, mb = out.stdout.split()
    return float(seconds), float(mb)


def _per_request(long_run: Path, short_run: Path, work: Path, n: int, rounds: int = 7) -> None:
    """Replay time per request on the long run against the 200-request run, per preset.

    Interleaved rounds, best of ``rounds`` (the short run is replayed 100 times a round so both
    timings are long enough to measure).  The long run also does more work per request (summaries
    and trims keep firing once its context is full), so the time per unit of work — requests plus
    actions plus evicted blocks, what a replay is O(…) in — is printed next to it.
    """
    from replay.corpus import open_corpus
    from replay.engine import replay
    from replay.policy import load_policy

    runs = []
    for path in (long_run, short_run):
        corpus = open_corpus([path], cache_dir=work / f"ds-{path.stem}")
        rid = corpus.replayable()[0]
        runs.append((corpus.prepared(rid), corpus.calibration(rid), 1 if path == long_run else 100))
    for name in ("none", "observation-masking", "two-tier-corrected"):
        policy = load_policy(name)
        best, work_units = [float("inf")] * 2, []
        for run, cal, _ in runs:
            trace = replay(run, policy, calibration=cal)
            work_units.append(run.n_requests + len(trace.columns("actions")["action"])
                              + len(trace.columns("evictions")["msg"]))
        for _ in range(rounds):
            for i, (run, cal, reps) in enumerate(runs):
                t = time.perf_counter()
                for _ in range(reps):
                    replay(run, policy, calibration=cal)
                best[i] = min(best[i], (time.perf_counter() - t) / reps)
        (long_run_, _, _), (short_run_, _, _) = runs
        per = [best[0] / long_run_.n_requests, best[1] / short_run_.n_requests]
        per_work = [best[0] / work_units[0], best[1] / work_units[1]]
        print(f"replay time per request ({name}): {n:,}-request run {per[0] * 1e6:,.1f} µs, "
              f"200-request run {per[1] * 1e6:,.1f} µs → ratio {per[0] / per[1]:.2f} (target ≤ 1.5); "
              f"work units (requests + actions + evictions) per request {work_units[0] / long_run_.n_requests:.2f} vs "
              f"{work_units[1] / short_run_.n_requests:.2f}, time per unit ratio {per_work[0] / per_work[1]:.2f}")


def main() -> None:
    """Generate, measure, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--reuse", action="store_true",
                    help="keep log files already generated in --workdir (the generator is "
                         "deterministic); stores and outputs are always made anew")
    ap.add_argument("--per-request-only", action="store_true",
                    help="only the time-per-request comparison, on files already in --workdir")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ctxreplay-scale-"))
    archive = work / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    if args.per_request_only:
        _per_request(work / "long" / "long.jsonl", work / "short" / "short.jsonl", work, args.requests)
        return
    base = CORPUS[0]
    t = time.perf_counter()
    largest = (0, Path())
    for i in range(args.runs):
        s = replace(base, name=f"run-{i:05d}", seed=1000 + i, n_requests=8 + i % 13,
                    compact_at_tokens=None)
        path = archive / f"{i // 1000:02d}" / f"{s.name}.jsonl"
        path.parent.mkdir(exist_ok=True)
        if not (args.reuse and path.exists()):
            path.write_text(synth_run(s))
        largest = max(largest, (path.stat().st_size, path))
    long_run = work / "long" / "long.jsonl"
    long_run.parent.mkdir(exist_ok=True)
    if not (args.reuse and long_run.exists()):
        long_run.write_text(synth_run(replace(base, name="long", seed=7, n_requests=args.requests,
                                              compact_at_tokens=150_000)))
    short_run = work / "short" / "short.jsonl"
    short_run.parent.mkdir(exist_ok=True)
    if not (args.reuse and short_run.exists()):
        short_run.write_text(synth_run(replace(base, name="short", seed=7, n_requests=200,
                                               compact_at_tokens=150_000)))
    size = sum(p.stat().st_size for p in archive.rglob("*.jsonl"))
    print(f"generated {args.runs:,} runs ({size / 1e6:,.0f} MB) and a {args.requests:,}-request run "
          f"({long_run.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:,.0f} s")

    single = work / "single"
    single.mkdir(exist_ok=True)
    shutil.copy(largest[1], single / largest[1].name)
    for label, folder in (("largest single run", single), (f"archive of {args.runs:,} runs", archive),
                          (f"{args.requests:,}-request run", long_run.parent)):
        ds, out = work / f"ds-{folder.name}", work / f"out-{folder.name}"
        shutil.rmtree(ds, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        ing_s, ing_mb = _child(["replay", "ingest", str(folder), "--out", str(ds), "-q"])
        run_s, run_mb = _child(["replay", "run", "--policy", "two-tier-corrected", str(ds),
                                "--out", str(out), "-q", "--json"])
        print(f"{label:28s} ingest {ing_s:8.1f} s, peak {ing_mb:7.0f} MB | "
              f"replay {run_s:7.1f} s, peak {run_mb:7.0f} MB")
        if folder == archive:
            list_s, list_mb = _child(["replay", "runs", str(ds), "--json"])
            print(f"{'':28s} replay runs (listing) {list_s:.1f} s, peak {list_mb:.0f} MB")
    _per_request(long_run, short_run, work, args.requests)
    print(f"this process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB;"
          f" work folder {work}")


if __name__ == "__main__":
    main()
