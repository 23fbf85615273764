"""Ingest throughput next to raw tiktoken on the same texts, on the same machine, in one run.

Usage::

    python benchmarks/ingest_speed.py [PATH...] [--repeat N]

PATH defaults to the sample logs (``../shared/logs-sample`` beside the repository).  Printed:

* raw: tiktoken ``encode_ordinary`` over exactly the block texts ingest counts, one thread;
* counting as ingest counts: ``replay.ingest.tokens.count_tokens`` over each file's texts (the
  counting encoder, splintr, each distinct text of a file once), one thread; and the same
  counting again right after, every piece of text already known to the encoder (what a round
  measured before each round started cold: ``forget_learnt`` below);
* ingest, ``jobs=1``: ``replay.ingest.batch.ingest`` into a fresh store, everything included (read,
  sha256, format detection, parsing, token counting, Arrow tables, LZ4 Parquet, manifest), one
  process and one thread, so like is compared with like;
* of that, the kernel's share (system CPU: reading the inputs, creating, writing and renaming
  the store's files), the mean over the rounds (the scheduler counts it in ticks of a few ms:
  one round's figure is coarse); on a VM it swings from run to run with the file system;
* their ratio (target ≥ 1.0: ingest faster than tiktoken alone) and where the ``jobs=1`` time
  goes: tokenising, sha256 + format detection + parsing, building the Arrow tables, writing
  Parquet, each timed apart on data already in memory, and the rest (reading files,
  directories, run index, manifest, and whatever the parts cost more inside one real ingest
  than alone) — once with tiktoken counting every block (before) and once as ingest counts
  (after; the other parts are the same code in both lines);
* parsing by format: each file's bytes parsed ``--repeat`` times (no sha256, no tokens), the
  best of each file summed by format, with its files, bytes and MB/s;
* ingest with ``jobs=2`` (both cores: one worker process per core) against ``jobs=1``;
* what a file costs whatever its size: a ``jobs=1`` ingest of ``SMALL_COPIES`` copies of the
  smallest input file (each its own entry), CPU a file, and that cost times the inputs' files
  as a share of their ``jobs=1`` ingest;
* what creating one empty file costs in the folder the stores above are written in (the store's
  own flags: ``O_CREAT | O_EXCL | O_NOFOLLOW``, then closed; best of ``--repeat`` rounds of
  ``CREATE_PROBES`` files, CPU and wall): each entry is one new file, and what the kernel
  takes to make one depends on the file system and where the folder lands on it (a busy ext4
  block group: a few hundred µs a file, ~20 µs elsewhere on the same disk), not on this code;
* what the figures above leave out, a process's own start: ``python -m replay ingest`` of the
  smallest file in a fresh process (imports, the encoding's load, the ingest), its CPU time
  and peak resident memory, best of ``--repeat``, and whether it imported pandas.

Each figure is the best of ``--repeat`` interleaved rounds (other load on the machine only ever
slows a round down).  The encoding is loaded once before timing (it is loaded once per process
in real use too; its load time is printed separately); what the counting encoder learns while it
counts (splintr's cache of the pieces it has encoded) is forgotten before each round
(``forget_learnt``), so that no round finds the texts already known from the one before, as no
fresh ``replay ingest`` process does.  Not a test: the only assertion is
that every ingest counted exactly the raw number of tokens (blocks holding redaction markers
sized by their declared lengths, as ``replay.ingest.redaction`` says).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replay.ingest.batch import ingest
from replay.ingest.discover import discover, sources
from replay.ingest.entry_write import write_entry
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS, detect_format
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Source
from replay.ingest.redaction import declared, tokens_for
from replay.ingest.run_tables import tokenize
from replay.ingest.tokens import count_tokens, encoding, forget_learnt

TOKENIZER = "o200k_base"
SMALL_COPIES = 50
"""Copies of the smallest input file ingested for the fixed cost a file (one store entry each:
an entry's key holds its file's name)."""
CREATE_PROBES = 50
"""Empty files created (then removed) a round to time what creating one costs in the folder the
stores are written in."""


def _clock(fn: Callable[[], object], rounds: list[tuple[float, float, float]], *,
           cold: bool = True) -> None:
    """Append (wall seconds, CPU seconds of this process and its finished children, the part
    of that CPU the kernel spent: system time, counted by the scheduler in ticks).  ``cold``:
    the counting encoder first forgets what it learnt (``forget_learnt``)."""
    def cpu() -> tuple[float, float]:
        me, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
        return (time.process_time() + kids.ru_utime + kids.ru_stime,
                me.ru_stime + kids.ru_stime)

    if cold:  # (each round counts as a fresh process would: nothing known)
        forget_learnt(TOKENIZER)
    w, (c, s) = time.perf_counter(), cpu()
    fn()
    c2, s2 = cpu()
    rounds.append((time.perf_counter() - w, c2 - c, s2 - s))


def _parse_by_format(datas: list[tuple[Path, bytes]],
                     repeat: int) -> dict[str, tuple[int, int, float]]:
    """Format → its files, their bytes and the CPU seconds of parsing them (each file's best of
    ``repeat`` parses of its bytes already in memory; no sha256, no tokens)."""
    out: dict[str, tuple[int, int, float]] = {}
    for p, data in datas:
        name = detect_format(p.name, data[:65536])
        if name is None:
            continue
        best = min(_parse_cpu_s(name, p, data) for _ in range(repeat))
        n, size, cpu_s = out.get(name, (0, 0, 0.0))
        out[name] = (n + 1, size + len(data), cpu_s + best)
    return out


def _parse_cpu_s(name: str, p: Path, data: bytes) -> float:
    t = time.process_time()
    _parsed(name, p, data)
    return time.process_time() - t


def _parsed(name: str, p: Path, data: bytes, sha256: str = "0" * 64) -> list[RunDraft]:
    """The runs parser ``name`` makes of a file's bytes already in memory (no tokens)."""
    runs: list[RunDraft] = PARSERS[name].parse(
        Source(path=str(p), rel=p.name, data=data, sha256=sha256), [])
    return runs


def _fresh_process(path: Path, work: Path) -> tuple[float, float, bool]:
    """CPU seconds, peak RSS (MB) and whether pandas was imported, of one ``python -m replay
    ingest PATH`` process (run in-process by a fresh interpreter, which then reads its own
    ``getrusage`` and ``VmHWM``: ``ru_maxrss`` would start from this big process's, as a
    forked child's does on Linux)."""
    out = work / f"fresh{os.getpid()}-{time.perf_counter_ns()}"
    code = ("import resource, runpy, sys\n"
            f"sys.argv = ['replay', 'ingest', {str(path)!r}, '--out', {str(out)!r}, '-q', "
            "'--jobs', '1']\n"
            "try:\n    runpy.run_module('replay', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "u = resource.getrusage(resource.RUSAGE_SELF)\n"
            "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')]\n"
            "print(u.ru_utime + u.ru_stime, int(hwm[0].split()[1]) / 1024, "
            "'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    shutil.rmtree(out, ignore_errors=True)
    cpu, rss, pandas = done.stdout.split()[-3:]
    return float(cpu), float(rss), pandas == "True"


def _create_cost(folder: Path, rounds: int) -> tuple[float, float]:
    """CPU and wall seconds of creating one empty file in ``folder`` (with the flags a store
    entry's file is created with, then closed), best of ``rounds`` rounds of ``CREATE_PROBES``
    files; each round's files are removed after it, outside the timing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    probe = folder / f"create-probe{os.getpid()}"
    probe.mkdir()
    fd = os.open(probe, os.O_RDONLY | os.O_DIRECTORY)
    cpus: list[float] = []
    walls: list[float] = []
    try:
        for r in range(rounds):
            names = [f".p{r}-{k}" for k in range(CREATE_PROBES)]
            w, c = time.perf_counter(), time.process_time()
            for name in names:
                os.close(os.open(name, flags, 0o644, dir_fd=fd))
            cpus.append((time.process_time() - c) / CREATE_PROBES)
            walls.append((time.perf_counter() - w) / CREATE_PROBES)
            for name in names:
                os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
        shutil.rmtree(probe, ignore_errors=True)
    return min(cpus), min(walls)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path,
                    default=[REPO.parent / "shared" / "logs-sample"])
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (best is kept)")
    args = ap.parse_args(argv)

    found = discover(args.paths)
    if not found:
        print(f"no log files under {' '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    t = time.perf_counter()
    enc = encoding(TOKENIZER)
    load = time.perf_counter() - t

    # the exact texts ingest counts: every block of every run, as parsed, file by file
    per_file: list[list[str]] = []
    for (path, root), rel in zip(found, sources(found)):
        parsed = parse_file(path, root, tokenizers=(), rel=rel)
        if parsed.tables is not None:
            per_file.append(parsed.tables.messages["text"].to_pylist())
    texts = [t for file_texts in per_file for t in file_texts]
    count_tokens(["warm"], TOKENIZER)  # the counting encoder is loaded once too
    n_tokens = 0  # what ingest must count: redacted blocks sized by their markers
    for x in texts:
        hit = declared(x)
        n_tokens += len(enc.encode_ordinary(x)) if hit is None else \
            len(enc.encode_ordinary(hit[0])) + tokens_for(hit[2], TOKENIZER)
    n_bytes = sum(p.stat().st_size for p, _ in found)
    datas = [(p, p.read_bytes()) for p, _ in found]

    def raw() -> None:
        encode = enc.encode_ordinary
        for x in texts:
            encode(x)

    def count() -> None:  # as ingest counts: each file's distinct texts, the counting encoder
        for file_texts in per_file:
            count_tokens(file_texts, TOKENIZER)

    def parse_only() -> None:  # read bytes already in memory: sha256, detect, parse, no tokens
        for p, data in datas:
            sha = hashlib.sha256(data).hexdigest()
            name = detect_format(p.name, data[:65536])
            if name is not None:
                _parsed(name, p, data, sha)

    drafts = []
    for p, data in datas:
        name = detect_format(p.name, data[:65536])
        if name is not None:
            drafts.append(_parsed(name, p, data))
    drafts = [d for d in drafts if d]

    def build_only() -> None:  # the parsed runs to Arrow tables, every step but token counts
        for d in drafts:
            tokenize(d, ())

    work = Path(tempfile.mkdtemp(prefix="ingest-speed-"))
    counter = iter(range(1_000_000))
    smallest = min(found, key=lambda f: f[0].stat().st_size)[0]
    small = Path(tempfile.mkdtemp(prefix="ingest-speed-small-"))  # (not under ``work``: kept)
    for k in range(SMALL_COPIES):
        shutil.copyfile(smallest, small / f"copy{k:03d}{smallest.suffix}")

    def small_ingest() -> None:
        report = ingest([small], work / f"small{next(counter)}", jobs=1)
        assert len(report.parsed) == SMALL_COPIES, "the copies were not all ingested"

    def run_ingest(jobs: int) -> Callable[[], None]:
        def go() -> None:
            out = work / f"store{next(counter)}"
            report = ingest(args.paths, out, jobs=jobs)
            assert report.n_tokens == n_tokens and not report.cached, "ingest counted otherwise"
        return go

    def write_only() -> None:
        out = work / f"w{next(counter)}"
        for k, tables in enumerate(all_tables):
            write_entry(out, f"k{k}", tables)

    def clear() -> None:  # stores written by a timed round are deleted outside the timing
        for p in work.iterdir():
            shutil.rmtree(p)

    def per_file_cpu() -> list[float]:  # each file alone, as a worker would do it
        out, cpu = work / f"p{next(counter)}", []
        forget_learnt(TOKENIZER)
        for (path, root), rel in zip(found, sources(found)):
            t = time.process_time()
            tables = parse_file(path, root, tokenizers=(TOKENIZER,), rel=rel).tables
            if tables is not None:
                write_entry(out, rel.replace("/", "_"), tables)
            cpu.append(time.process_time() - t)
        shutil.rmtree(out)
        return cpu

    all_tables = [t.tables for t in (parse_file(p, r, tokenizers=(TOKENIZER,)) for p, r in found)
                  if t.tables is not None]
    timings: dict[str, list[tuple[float, float, float]]] = {
        k: [] for k in ("raw", "count", "count_warm", "ingest1", "ingest2", "parse", "build", "write", "small")}
    try:
        run_ingest(1)()  # warm-up: imports, page cache
        for _ in range(args.repeat):
            _clock(raw, timings["raw"])
            _clock(count, timings["count"])
            _clock(count, timings["count_warm"], cold=False)  # (the same texts just counted)
            _clock(run_ingest(1), timings["ingest1"])
            clear()
            _clock(run_ingest(2), timings["ingest2"])
            clear()
            _clock(parse_only, timings["parse"])
            _clock(build_only, timings["build"])
            _clock(write_only, timings["write"])
            clear()
            _clock(small_ingest, timings["small"])
            clear()
        files_cpu = per_file_cpu()
        by_format = _parse_by_format(datas, args.repeat)
        fresh = [_fresh_process(min(found, key=lambda f: f[0].stat().st_size)[0], work)
                 for _ in range(args.repeat)]
        create_cpu, create_wall = _create_cost(work, args.repeat)  # (last: its removals
        # leave no deleted inodes for a timed ingest to step over)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(small, ignore_errors=True)

    wall = {k: min(w for w, _, _ in v) for k, v in timings.items()}
    cpu = {k: min(c for _, c, _ in v) for k, v in timings.items()}
    med = {k: statistics.median(w for w, _, _ in v) for k, v in timings.items()}
    kernel = statistics.fmean(s for _, _, s in timings["ingest1"])  # (ticks: a mean of rounds)
    ratio_wall = wall["raw"] / wall["ingest1"]
    ratio_cpu = cpu["raw"] / cpu["ingest1"]
    busy = statistics.median(c / w for w, c, _ in timings["ingest2"])

    def line(label: str, key: str) -> str:
        return (f"{label:<40}: {n_tokens / wall[key]:>11,.0f} tokens/s  wall {wall[key]:.3f} s "
                f"[median {med[key]:.3f}], CPU {cpu[key]:.3f} s")

    print(f"input: {len(found)} files, {n_bytes / 1e6:.1f} MB; {len(texts):,} blocks, "
          f"{sum(map(len, texts)) / 1e6:.2f} M chars, {n_tokens:,} {TOKENIZER} tokens")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; python "
          f"{sys.version.split()[0]}; best of {args.repeat} interleaved rounds; encoding loaded "
          f"once beforehand ({load:.2f} s)")
    print()
    print(line("raw tiktoken encode_ordinary, 1 thread", "raw"))
    print(line("counting as ingest counts (splintr)", "count"))
    print(line("  the same again, every piece known", "count_warm") + " (what a round counted "
          "when the counter kept the last round's pieces: no real ingest starts so)")
    print(line("ingest jobs=1 (1 process, 1 thread)", "ingest1"))
    print(f"{'  ingest / raw tiktoken':<40}: {ratio_wall:.3f}x by wall time, {ratio_cpu:.3f}x by "
          f"CPU time (target >= 1.0 by CPU: {'met' if ratio_cpu >= 1.0 else 'NOT met'})")
    print(f"{'  of which in the kernel':<40}: {kernel:.3f} s of system CPU a round on average "
          f"(reading the inputs; creating, writing and renaming the store's files: the file "
          f"system's share, part of 'rest' below, which tiktoken's side has none of)")
    others = cpu["parse"] + cpu["build"] + cpu["write"]
    rest = max(0.0, cpu["ingest1"] - cpu["count"] - others)
    for label, tokenising in (("before: tiktoken, every block", cpu["raw"]),
                              ("after: as ingest counts", cpu["count"])):
        print(f"{'  part by part (CPU), ' + label:<40}: tokenising {tokenising:.3f} s, "
              f"sha256+detect+parse {cpu['parse']:.3f} s, Arrow tables {cpu['build']:.3f} s, "
              f"Parquet write {cpu['write']:.3f} s, rest {rest:.3f} s; total "
              f"{tokenising + others + rest:.3f} s")
    print(f"{'  parse by format (best of ' + str(args.repeat) + ' a file)':<40}: " + "; ".join(
        f"{name} {n} files {size / 1e6:.2f} MB {cpu_s * 1e3:.1f} ms ({size / cpu_s / 1e6:.0f} MB/s)"
        for name, (n, size, cpu_s) in sorted(by_format.items(), key=lambda kv: -kv[1][2])))
    print(line("ingest jobs=2 (2 worker processes)", "ingest2"))
    print(f"{'  jobs=2 vs jobs=1':<40}: {wall['ingest1'] / wall['ingest2']:.2f}x faster by wall "
          f"time; {busy:.2f} cores busy on average")
    total, longest = sum(files_cpu), max(files_cpu)
    print(f"{'  best possible on 2 idle cores':<40}: {total / max(total / 2, longest):.2f}x (files "
          f"take {total:.3f} s CPU in all, the longest {longest:.3f} s)")
    fixed = cpu["small"] / SMALL_COPIES
    print(f"{'what a file costs whatever its size':<40}: {fixed * 1e3:.2f} ms CPU a file (jobs=1 "
          f"ingest of {SMALL_COPIES} copies of the smallest file, {smallest.stat().st_size / 1e3:.1f}"
          f" KB); x {len(found)} files = {fixed * len(found) / cpu['ingest1']:.0%} of the inputs'"
          f" jobs=1 ingest")
    print(f"{'  creating one empty file there':<40}: {create_cpu * 1e6:.0f} µs CPU "
          f"({create_wall * 1e6:.0f} µs wall) in {work}, where the stores above are written "
          f"(best of {args.repeat} x {CREATE_PROBES}): the file system's cost of an entry's new "
          f"file, part of the figure above, not this code's")
    print(f"{'fresh `replay ingest` of 1 small file':<40}: CPU {min(c for c, _, _ in fresh):.3f} s, "
          f"peak RSS {min(r for _, r, _ in fresh):.0f} MB (whole process, best of "
          f"{len(fresh)}); pandas imported: {'yes' if any(p for _, _, p in fresh) else 'no'}")
    if os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print("note: the machine is busy with other work; wall times and the jobs=2 speed-up are "
              "understated, CPU times are the fairer figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
