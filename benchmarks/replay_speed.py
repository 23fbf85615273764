"""Replay speed: requests replayed per second per core, and the speed-up over a naive replay.

    python benchmarks/replay_speed.py [PATH ...]      (default: ../shared/logs-sample)

For every preset it replays the whole corpus on one core (best of 9 interleaved rounds after one warm-up pass,
so ingest-time token counts and per-run preparation are not timed; placeholder
counts are memoised as in a sweep) and prints requests/s.  Then, on the longest
run, it times a deliberately naive reference that rebuilds the context and
re-counts every message's tokens with the tokenizer at every request — what the
engine is designed never to do — and prints the ratio.  All figures come from
this one process on this machine, timed as the process's CPU time (``time.process_time``:
other load on a shared machine does not count, as wall time swung ±50 % between rounds);
the engine it ran (the compiled build or pure Python, ``replay/compiled_engine.py``) is printed;
targets: ≥ 50,000 requests/s per core and
≥ 20× the naive reference on runs of 200+ requests.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from corpus_args import corpus_paths, no_runs

if TYPE_CHECKING:
    from replay.engine.prepared import PreparedRun

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 9
"""Interleaved rounds; each preset's best is kept (other load only ever slows a round down)."""


def naive_replay(run: PreparedRun, window_tokens: int, keep_messages: int) -> list[int]:
    """Re-tokenise the whole live history at every request; drop old messages over the window."""
    from replay.ingest.tokens import encoding

    enc = encoding("o200k_base")
    lo, sizes = 0, []
    for k in range(run.n_requests):
        hi = run.req_blocks[k]
        total = sum(len(enc.encode_ordinary(run.text[b])) for b in range(lo, hi))
        if total > window_tokens and hi - lo > keep_messages:
            lo = max(lo, hi - keep_messages)
            total = sum(len(enc.encode_ordinary(run.text[b])) for b in range(lo, hi))
        sizes.append(total)
    return sizes


def main(paths: list[Path]) -> None:
    """Print the figures (the package imported here: ``--help`` or a missing path answers
    without loading it)."""
    from replay.compiled_engine import choose
    from replay.corpus import open_corpus
    from replay.engine.fold import replay
    from replay.policy import load_policy, presets

    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        ids = corpus.replayable()
        runs = [(corpus.prepared(r), corpus.calibration(r)) for r in ids]
        if not runs:
            no_runs(paths)
        n_req = sum(r.n_requests for r, _ in runs)
        print(f"corpus: {len(runs)} runs, {n_req:,} requests")
        print(f"engine: {choose().describe()}")  # compiled or pure Python, and why
        policies = {name: load_policy(name) for name in presets()}
        for policy in policies.values():
            for run, cal in runs:  # warm-up: memoised counts and placeholders
                replay(run, policy, calibration=cal)
        best = dict.fromkeys(policies, float("inf"))
        for _ in range(ROUNDS):  # interleaved: a slow spell of the machine hits every preset
            for name, policy in policies.items():
                best[name] = min(best[name], _time(
                    lambda: [replay(r, policy, calibration=c) for r, c in runs]))  # noqa: B023
        for name, seconds in best.items():
            print(f"  {name:22s} {n_req / seconds:10,.0f} requests/s per core")
        print(f"  {'all presets':22s} {len(best) * n_req / sum(best.values()):10,.0f} "
              "requests/s per core")
        longest, cal = max(runs, key=lambda rc: rc[0].n_requests)
        policy = load_policy("two-tier-corrected")
        replay(longest, policy, calibration=cal)
        fast = min(_time(lambda: replay(longest, policy, calibration=cal)) for _ in range(5))
        slow = _time(lambda: naive_replay(longest, policy.usable_tokens, 24))
        print(f"longest run: {longest.n_requests} requests, {longest.n_blocks} blocks")
        print(f"  engine (two-tier-corrected): {longest.n_requests / fast:10,.0f} requests/s")
        print(f"  naive re-count reference:    {longest.n_requests / slow:10,.0f} requests/s")
        print(f"  speed-up: {slow / fast:,.0f}x")


def _time(fn: object) -> float:
    """CPU seconds of this process spent in ``fn()``."""
    t = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t


if __name__ == "__main__":
    main(corpus_paths(__doc__, [REPO.parent / "shared" / "logs-sample"]))
