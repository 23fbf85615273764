"""Peak memory of ingesting one big log, as a multiple of its size, and the document limit.

    python benchmarks/document_memory.py [--mb 61]

Builds, in a temporary folder, logs of about ``--mb`` megabytes from the samples in
``../shared/logs-sample`` (each is data the parsers take):

- ``trajectory``: a SWE-agent trajectory (one JSON document) whose steps are repeated;
- ``tiny-values``: an OpenHands event list of minimal events (one JSON document of many
  tiny values: the worst case for decoding a document whole);
- ``jsonl-tiny``: a Claude Code transcript of minimal user records (JSON Lines);
- ``over-limit``: the tiny-valued document three times over, past the 128 MiB document limit;
- ``one-word``: a chat document one of whose messages is one unbroken word of ``--mb``
  megabytes (a crafted file: what the encoder holds for one piece; counted in parts,
  ``replay.ingest.token_parts``).

Each is ingested by ``replay ingest`` in a child process; printed: the file size, the child's
peak resident memory (``getrusage`` of the children), that peak over the file size, the wall
time and the command's last line (the over-limit file is refused with the limit's issue).
The README's figures for ``CTXREPLAY_MAX_DOCUMENT_BYTES`` come from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "logs-sample"


def _trajectory(path: Path, size: int) -> None:
    doc = json.loads((SAMPLES / "swe-agent" /
                      "claude-4-sonnet-20250514__sympy__sympy-13372.traj").read_text())
    steps, history = doc["trajectory"], doc["history"]
    per = len(json.dumps(steps)) + len(json.dumps(history[2:]))
    repeat = max(1, size // per)
    doc["trajectory"], doc["history"] = steps * repeat, history[:2] + history[2:] * repeat
    path.write_text(json.dumps(doc))


def _tiny_values(path: Path, size: int) -> None:
    pair = [{"id": 0, "source": "agent", "action": "run", "args": {"command": "ls"},
             "message": "x"},
            {"id": 1, "source": "agent", "observation": "run", "content": "y",
             "extras": {"exit_code": 0}, "cause": 0}]
    n = max(1, size // len(json.dumps(pair)))
    events = []
    for i in range(n):
        events.append({**pair[0], "id": 2 * i})
        events.append({**pair[1], "id": 2 * i + 1, "cause": 2 * i})
    path.write_text(json.dumps(events))


def _one_word(path: Path, size: int) -> None:
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "task"}, {"role": "assistant", "content": "a" * size},
        {"role": "user", "content": "next"}]}))


WARM_TEXT = "Replaying naïve café logs — 東京 ✓"
"""A text the tokenizer must merge (``hi`` is one token of its table): its first merge builds
tables every real log pays for once a process (about 11 MB with splintr), which a one-record
file of ``hi`` never does."""


def _jsonl_tiny(path: Path, size: int, text: str = "hi") -> None:
    rec = {"parentUuid": None, "isSidechain": False, "sessionId": "s", "type": "user",
           "message": {"role": "user", "content": text}, "uuid": "u0", "version": "2.1.90"}
    written = i = 0
    with path.open("w") as f:
        while written < size:
            rec["uuid"], rec["parentUuid"] = f"u{i}", (f"u{i - 1}" if i else None)
            line = json.dumps(rec) + "\n"
            f.write(line)
            written, i = written + len(line), i + 1


def _ingest(path: Path, out: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB of the ``replay ingest`` child, and its last line."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "replay", "ingest", str(path), "--out",
                           str(out), "-q", "--jobs", "1"], capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB on Linux
    last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
    return wall, peak / 1024, last


def _measure(path: Path) -> tuple[float, float, str]:
    """``_ingest`` of ``path`` from a fresh process (``RUSAGE_CHILDREN`` keeps a maximum)."""
    result = subprocess.run([sys.executable, __file__, "--_one", str(path)],
                            capture_output=True, text=True, check=True)
    wall, peak, last = json.loads(result.stdout.strip().splitlines()[-1])
    return float(wall), float(peak), str(last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=61.0, help="size of each log (MB)")
    parser.add_argument("--case", choices=("trajectory", "tiny-values", "jsonl-tiny",
                                           "over-limit", "one-word"), action="append",
                        help="only these cases (repeatable; default: all)")
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="also measure this log of your own (repeatable; with --file "
                             "and no --case, only the files)")
    args = parser.parse_args()
    size = int(args.mb * 1e6)
    builders = {"trajectory": (_trajectory, size, "t.traj"),
                "tiny-values": (_tiny_values, size, "events.json"),
                "jsonl-tiny": (_jsonl_tiny, size, "s.jsonl"),
                "over-limit": (_tiny_values, 3 * size, "big-events.json"),
                "one-word": (_one_word, size, "chat.json")}
    cases = args.case or ([] if args.file else list(builders))
    print(f"load average {os.getloadavg()[0]:.2f}; peak = the ingest child's max RSS; "
          "growth = peak minus the peak of ingesting a one-record file, over the file size; "
          "growth-w = the same against a one-record file whose text the tokenizer merges "
          "(its tables, built once a process, are paid by every real log)")
    with tempfile.TemporaryDirectory() as tmp:
        small, warm = Path(tmp) / "one.jsonl", Path(tmp) / "one-merged.jsonl"
        _jsonl_tiny(small, 1)
        _jsonl_tiny(warm, 1, WARM_TEXT)
        base, base_w = _measure(small)[1], _measure(warm)[1]
        print(f"{'baseline':12} {small.stat().st_size / 1e6:7.4f} MB  peak {base:7.0f} MB")
        print(f"{'baseline-w':12} {warm.stat().st_size / 1e6:7.4f} MB  peak {base_w:7.0f} MB")
        for name in cases:
            build, n, file = builders[name]
            path = Path(tmp) / file
            build(path, n)
            mb = path.stat().st_size / 1e6
            wall, peak, last = _measure(path)
            print(f"{name:12} {mb:7.1f} MB  peak {peak:7.0f} MB  growth "
                  f"{(peak - base) / mb:4.1f}x  growth-w {(peak - base_w) / mb:4.1f}x  "
                  f"{wall:5.1f} s  | {last[:100]}")
            path.unlink()
        for path in args.file:
            mb = path.stat().st_size / 1e6
            wall, peak, last = _measure(path)
            print(f"{path.name[:12]:12} {mb:7.1f} MB  peak {peak:7.0f} MB  growth "
                  f"{(peak - base) / mb:4.1f}x  growth-w {(peak - base_w) / mb:4.1f}x  "
                  f"{wall:5.1f} s  | {last[:100]}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--_one":
        target = Path(sys.argv[2])
        with tempfile.TemporaryDirectory() as out:
            print(json.dumps(_ingest(target, Path(out) / "ds")))
    else:
        main()
