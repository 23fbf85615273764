"""Fidelity: replaying each recorded harness's own policy, how close is the replay to the log?

    python benchmarks/fidelity.py [--policy P] [--json] [PATH ...]
                                   (default: ../shared/logs-sample, logs/ and the real
                                   compactions of tests/fixtures/claude_code/compactions)

For every run with recorded usage (``analysis.fidelity``): compaction placement error in
requests, median error of the post-compaction request sizes, median cache-read error as a share
of the recorded input, held-out per-request error of the run's calibration for the truth the
replay uses (``held``: anchored truth's for ``anchored``, overhead + scale × count's for
``fitted``) and of both models (``h-anch``, ``h-fit``), the re-reads after recorded compactions
predicted by the need rules against the log (``rr-rec`` recall, ``rr-prec`` precision, ``rr-tok``
signed tokens error; ``analysis.reread_fidelity``; the gzip-compressed real sessions of
``tests/fixtures/claude_code/compactions`` are decompressed into a temporary folder and read
with the defaults; the default run says that none of the real compactions is held out from
the need rules' writing); then the corpus totals against the
targets of issue #15 (placement within ±3 requests, post-compaction sizes within ±5 %, cache
reads within 1 %, held-out error of the truth used within 1.5 %).  ``--json`` prints the same.
``--policy`` replays every run under one policy: a harness configured otherwise (a run named
"not judged") is measured under its own configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import tempfile
from pathlib import Path

from analysis.fidelity import RunFidelity, fidelity, fidelity_totals
from analysis.fidelity_lines import totals_lines
from replay.corpus import open_corpus
from replay.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
COMPACTIONS = REPO / "tests" / "fixtures" / "claude_code" / "compactions"
"""Real Claude Code sessions with a compaction, gzip-compressed (their sources: tests/fixtures/claude_code/SOURCES.md)."""


def main(paths: list[Path], as_json: bool, policy: str | None = None,
         compressed: list[Path] | None = None) -> None:
    """Print the figures; ``compressed``: ``.jsonl.gz`` logs read decompressed."""
    harness = load_policy(policy) if policy else None
    with tempfile.TemporaryDirectory() as tmp:
        if compressed:
            folder = Path(tmp) / "decompressed"
            folder.mkdir()
            for gz in compressed:
                (folder / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
            paths = [*paths, folder]
        corpus = open_corpus(paths, cache_dir=Path(tmp) / "ds")
        rows = fidelity(corpus, policy=harness)
        sha256 = dict(zip(corpus.run_ids, corpus.runs["sha256"].to_pylist()))
    generated = {hashlib.sha256(f.read_bytes()).hexdigest() for f in (REPO / "logs").rglob("*.jsonl")}
    totals = fidelity_totals(rows)
    if as_json:
        print(json.dumps({"runs": [dataclasses.asdict(r) for r in rows], "totals": totals},
                         indent=1))
        return
    print(f"{'source':58s} {'policy':12s} {'truth':18s} {'req':>4s} {'rec':>4s} {'trig':6s} {'rep':>4s} "
          f"{'place':>5s} {'half':>5s} {'pre/trigger':>15s} {'post':>7s} {'cache':>7s} {'held':>7s} {'h-anch':>7s} {'h-fit':>7s} "
          f"{'rr-rec':>6s} {'rr-prec':>7s} {'rr-tok':>7s}")
    for r in rows:
        print(f"{_cut(r.source, 58):58s} {r.policy:12s} {r.truth_source:18s} {r.n_requests:4d} "
              f"{_n(r.recorded_compaction):>4s} {r.recorded_trigger or '-':6s} "
              f"{_n(r.replayed_compaction):>4s} "
              f"{_n(r.placement_error_requests, signed=True):>5s} "
              f"{_n(r.placement_half_fit_error_requests, signed=True):>5s} "
              f"{_pre(r):>15s} "
              f"{_pct(r.post_size_error_median_frac, signed=True):>7s} "
              f"{_pct(r.cache_read_error_median_frac):>7s} {_pct(r.held_out_error_frac):>7s} "
              f"{_pct(r.held_out_anchored_error_frac):>7s} "
              f"{_pct(r.held_out_fitted_error_frac):>7s} "
              f"{_f(r.reread_recall):>6s} {_f(r.reread_precision):>7s} "
              f"{_pct(r.reread_tokens_error_frac, signed=True):>7s}")
    lines = totals_lines(totals)
    print("\n" + lines[0])
    for line in lines[1:]:
        print("  " + line)
    real = [r for r in rows if sha256[r.run_id] not in generated]
    if len(real) < len(rows):  # logs/ is generated (replay.synth): its re-reads are scripted
        got = [line for line in totals_lines(fidelity_totals(real)) if line.startswith("re-reads")]
        print("  real logs only (without logs/): " + (got[0] if got else "no compaction"))
    if compressed:  # the default run: the real compactions the need rules were written on
        print("  held out from the need rules' writing: none — the real compactions above were all "
              "studied when the rules were written (design figures); no other usable real "
              "compaction was found (tests/fixtures/claude_code/SOURCES.md lists the search)")


def _pre(r: RunFidelity) -> str:
    if r.recorded_pre_tokens is None:
        return "–!" if r.not_judged_reason else "–"
    got = f"{r.recorded_pre_tokens // 1000}k/{_n(r.policy_trigger_tokens)}"
    return got + ("!" if r.not_judged_reason else "")


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1):]


def _n(v: int | None, signed: bool = False) -> str:
    return "–" if v is None else (f"{v:+d}" if signed else str(v))


def _pct(v: float | None, signed: bool = False) -> str:
    return "–" if v is None else (f"{v:+.2%}" if signed else f"{v:.2%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="fidelity of the harness's own policy")
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--policy", help="replay every run under this policy (preset or YAML: "
                                         "your harness's own configuration) instead of its "
                                         "format's preset")
    a = parser.parse_args()
    main(a.paths or [REPO.parent / "shared" / "logs-sample", REPO / "logs"], a.json, a.policy,
         None if a.paths else sorted(COMPACTIONS.glob("*.jsonl.gz")))
