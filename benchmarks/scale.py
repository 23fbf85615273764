"""Scale: a 10,000-run archive and a single 20,000-request run, memory and time per request.

    python benchmarks/scale.py [--runs 10000] [--requests 20000] [--workdir DIR]

Generates (with ``replay synth``'s generator, deterministically) an archive of many small
runs and one very long run, then measures in child processes:

- ``replay ingest`` + ``replay run`` over the whole archive: peak RSS, compared with the peak
  RSS of the same commands on the archive's largest single run alone (memory must be bounded
  by the largest run, not the archive), and with its first 1,000 runs (what each further run
  adds: the run index, a few KB);
- replay time per request on the 20,000-request run against 100 different 200-request runs from
  the same generator, each replayed once (target: within 1.5×), for three presets; the old
  reference, one 200-request run replayed 100 times in a row with its data kept warm in the CPU
  caches, is printed next to it.

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

from replay.synth.embedded import CORPUS
from replay.synth.generate import synth_run


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


def _per_request(long_run: Path, shorts: list[Path], work: Path, n: int, rounds: int = 7) -> None:
    """Replay time per request on the long run against 200-request runs, per preset.

    Interleaved rounds, best of ``rounds``.  Two references for "a 200-request run":
    - 100 different 200-request runs from the same generator, each replayed once a round, as a
      replay of an archive meets them — the reference the target is judged against;
    - the first of them replayed 100 times in a row: its few hundred blocks stay in the CPU's
      caches from one replay to the next, which no real replay enjoys (a best case, printed
      for comparison).
    The long run also does more work per request (summaries and trims keep firing once its
    context is full), so the time per unit of work — requests plus actions plus evicted blocks,
    what a replay is O(…) in — is printed next to it.
    """
    from replay.corpus import Corpus, open_corpus
    from replay.engine.fold import replay
    from replay.policy import load_policy

    corpus = open_corpus([long_run], cache_dir=work / "ds-long")
    rid = corpus.replayable()[0]
    long_ = (corpus.prepared(rid), corpus.calibration(rid))
    many = Corpus(*_store(shorts, work / "ds-shorts"), keep_prepared=len(shorts))
    short = [(many.prepared(r), many.calibration(r)) for r in many.replayable()]
    n_short = sum(r.n_requests for r, _ in short)
    for name in ("none", "observation-masking", "two-tier-corrected"):
        policy = load_policy(name)
        best = [float("inf")] * 3

        work_units = [_units(replay, policy, *long_),
                      sum(_units(replay, policy, *r) for r in short)]
        for _ in range(rounds):
            t = time.perf_counter()
            replay(long_[0], policy, calibration=long_[1])
            best[0] = min(best[0], (time.perf_counter() - t) / long_[0].n_requests)
            t = time.perf_counter()
            for run, cal in short:
                replay(run, policy, calibration=cal)
            best[1] = min(best[1], (time.perf_counter() - t) / n_short)
            t = time.perf_counter()
            for _ in range(len(short)):
                replay(short[0][0], policy, calibration=short[0][1])
            best[2] = min(best[2], (time.perf_counter() - t) / (len(short) * short[0][0].n_requests))
        per_unit = (best[0] * long_[0].n_requests / work_units[0]) / (best[1] * n_short / work_units[1])
        print(f"replay time per request ({name}): {n:,}-request run {best[0] * 1e6:,.1f} µs, "
              f"{len(short)} different 200-request runs {best[1] * 1e6:,.1f} µs → ratio "
              f"{best[0] / best[1]:.2f} (target ≤ 1.5); one 200-request run replayed "
              f"{len(short)}× in a row (cache-warm) {best[2] * 1e6:,.1f} µs → ratio "
              f"{best[0] / best[2]:.2f}; work units (requests + actions + evictions) per request "
              f"{work_units[0] / long_[0].n_requests:.2f} vs {work_units[1] / n_short:.2f}, "
              f"time per unit ratio {per_unit:.2f}")


def _units(replay, policy, run, cal) -> int:  # type: ignore[no-untyped-def]
    """Requests + actions + evicted blocks of one replay: what a replay is O(…) in."""
    trace = replay(run, policy, calibration=cal)
    return (run.n_requests + len(trace.columns("actions")["action"])
            + len(trace.columns("evictions")["msg"]))


def _store(paths: list[Path], ds: Path) -> tuple[Path, list]:  # type: ignore[type-arg]
    from replay.ingest import store
    from replay.ingest.batch import ingest

    ingest(paths, ds)
    manifest = store.read_manifest(ds)
    return ds, [manifest[p.name] for p in paths]


def _short_runs(work: Path, reuse: bool, count: int = 100) -> list[Path]:
    """``count`` 200-request runs from the generator (seeds 7, 8, …; seed 7 is the old
    reference run)."""
    folder = work / "shorts"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"short-{i:03d}.jsonl"
        if not (reuse and path.exists()):
            path.write_text(synth_run(replace(CORPUS[0], name=f"short-{i:03d}", seed=7 + i,
                                              n_requests=200, compact_at_tokens=150_000)))
        paths.append(path)
    return paths


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
        _per_request(work / "long" / "long.jsonl", _short_runs(work, reuse=True), work,
                     args.requests)
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
    size = sum(p.stat().st_size for p in archive.rglob("*.jsonl"))
    print(f"generated {args.runs:,} runs ({size / 1e6:,.0f} MB) and a {args.requests:,}-request run "
          f"({long_run.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:,.0f} s")

    single = work / "single"
    single.mkdir(exist_ok=True)
    shutil.copy(largest[1], single / largest[1].name)
    subset = archive / "00"  # the first 1,000 runs: what the archive adds per run
    peaks: dict[Path, float] = {}
    for label, folder in (("largest single run", single), ("first 1,000 runs", subset),
                          (f"archive of {args.runs:,} runs", archive),
                          (f"{args.requests:,}-request run", long_run.parent)):
        if folder == subset and args.runs <= 1000:
            continue
        ds, out = work / f"ds-{folder.name}", work / f"out-{folder.name}"
        shutil.rmtree(ds, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        ing_s, ing_mb = _child(["replay", "ingest", str(folder), "--out", str(ds), "-q"])
        run_s, run_mb = _child(["replay", "run", "--policy", "two-tier-corrected", str(ds),
                                "--out", str(out), "-q", "--json"])
        peaks[folder] = run_mb
        print(f"{label:28s} ingest {ing_s:8.1f} s, peak {ing_mb:7.0f} MB | "
              f"replay {run_s:7.1f} s, peak {run_mb:7.0f} MB")
        if folder == archive:
            list_s, list_mb = _child(["replay", "runs", str(ds), "--json"])
            print(f"{'':28s} replay runs (listing) {list_s:.1f} s, peak {list_mb:.0f} MB")
            print(f"{'':28s} replay peak / largest single run's: "
                  f"{run_mb / peaks[single]:.2f}x (target: bounded by the largest run)")
            if subset in peaks:
                per_run = (run_mb - peaks[subset]) * 1024 / (args.runs - 1000)
                print(f"{'':28s} growth with the number of runs, 1,000 → {args.runs:,}: "
                      f"{per_run:.1f} KB per run (the run index: manifest, run rows, summary)")
    _per_request(long_run, _short_runs(work, args.reuse), work, args.requests)
    print(f"this process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB;"
          f" work folder {work}")


if __name__ == "__main__":
    main()
