"""CPU of drawing the sweep's and the report's figures, against the same figures drawn by the
code of an earlier commit, in one run.

    python benchmarks/plots_speed.py [--against REV] [--repeat 3] [--max-timelines 20] [PATH ...]
                                     (default: logs/write-heavy.jsonl)

The runs are ingested (into a temporary folder), replayed under two policies (the report's
inputs: ``analysis.report.replayed.gather``) and swept over a 3 × 2 grid of the corrected
two-tier preset (the sweep's table); none of it is timed.  Then every figure is drawn by this
checkout's code and by ``analysis/sweep/plots.py``, ``analysis/report/figures.py`` and
``analysis/report/timeline.py`` as they were at ``--against`` (read with ``git show``, run in
this process against this checkout's other modules), alternately, each the best of
``--repeat`` rounds of CPU time (``time.process_time``: load from other processes only ever
slows a round down).  Printed: each figure's CPU, now and then, and their ratio; the totals
of the sweep's figures and of the report's figures and their ratios (the goal: ≤ 0.5).
Both sides draw in this one process after a warm-up figure each (matplotlib and its fonts
loaded, not timed).  The machine's load average is printed too.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.metrics import METRIC_DIRECTIONS
from analysis.report.replayed import Replayed, gather, run_order
from analysis.sweep.core import sweep
from analysis.sweep.grid import settings
from analysis.sweep.pareto import PARETO_PAIRS, aggregate
from analysis.sweep.spec import make_spec
from replay.corpus import Corpus, open_corpus, replay_corpus
from replay.ingest.run_label import run_labels
from replay.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
AGAINST = "7b623ea"
"""The commit before the figures were made cheaper (issue #24, target 4)."""
POLICIES = ("two-tier-corrected", "claude-code")
AXES = {"tiers.0.protect.frac": [0.05, 0.2, 0.33], "tiers.1.trigger.at_tokens": [60000, 90000]}


def reference(rev: str) -> dict[str, types.ModuleType]:
    """The three drawing modules as they were at ``rev``, the old figures drawing the old
    timeline."""
    mods = {}
    for name in ("analysis.sweep.plots", "analysis.report.timeline", "analysis.report.figures"):
        path = name.replace(".", "/") + ".py"
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True,
                             capture_output=True, text=True).stdout
        mod = types.ModuleType(f"{name}@{rev}")
        exec(compile(src, f"{rev}:{path}", "exec"), mod.__dict__)  # noqa: S102 (our own code)
        mods[name] = mod
    mods["analysis.report.figures"].plot_timeline = mods["analysis.report.timeline"].plot_timeline
    return mods


def current() -> dict[str, types.ModuleType]:
    """This checkout's three drawing modules."""
    from analysis.report import figures, timeline
    from analysis.sweep import plots
    return {"analysis.sweep.plots": plots, "analysis.report.timeline": timeline,
            "analysis.report.figures": figures}


def report_figures(mods: dict[str, types.ModuleType], reps: list[Replayed], corpus: Corpus,
                   max_timelines: int) -> list[tuple[str, Callable[[], Any]]]:
    """The report's figures as ``write_report`` draws them, each a (file, draw) pair."""
    fig = mods["analysis.report.figures"]
    run_ids = run_order(corpus, reps)
    labels = run_labels(corpus.runs)
    meta = {r["run_id"]: {**r, "label": labels[r["run_id"]]} for r in corpus.runs.select(
        ["run_id", "source", "format", "model"]).to_pylist()}
    todo = fig.analysis_images(reps, run_ids, {rid: str(m["label"]) for rid, m in meta.items()})
    todo += fig.timeline_images(reps, run_ids, meta, max_timelines)
    return [(d.args[0], d) for d in todo]


def sweep_figures(mods: dict[str, types.ModuleType], table: Any, params: list[str]
                  ) -> list[tuple[str, Callable[[], Any]]]:
    """The sweep's figures as ``write_plots`` draws them in one process."""
    plots = mods["analysis.sweep.plots"]
    agg = aggregate(table, params)
    metrics = tuple(c for c in METRIC_DIRECTIONS if c in agg and agg[c].nunique(dropna=True) > 1)
    specs = [(f"pareto_{y}_vs_{x}.png", ("pareto", (x, y, "min" if low else "max")))
             for x, y, low in PARETO_PAIRS]
    specs += [(f"metrics_vs_{p}.png", ("metrics", (p,))) for p in params]
    return [(name, lambda spec=spec: plots.figure_png(agg, metrics, tuple(params), spec))
            for name, spec in specs]


def cpu_s(draw: Callable[[], Any]) -> float:
    gc.collect()
    t = time.process_time()
    draw()
    return time.process_time() - t


def compare(title: str, now: list[tuple[str, Callable[[], Any]]],
            then: list[tuple[str, Callable[[], Any]]], repeat: int) -> tuple[float, float]:
    """Each figure drawn now and then, alternately; the best of ``repeat`` rounds each."""
    assert [n for n, _ in now] == [n for n, _ in then], "not the same figures"
    now[0][1]()
    then[0][1]()  # warm-up: fonts, caches
    print(f"\n{title}: {len(now)} figures")
    print(f"  {'figure':<56} {'now ms':>7} {'then ms':>9} {'ratio':>7}")
    tot_now = tot_then = 0.0
    for (name, a), (_, b) in zip(now, then):
        best_a = best_b = float("inf")
        for _ in range(repeat):
            best_b = min(best_b, cpu_s(b))
            best_a = min(best_a, cpu_s(a))
        tot_now += best_a
        tot_then += best_b
        print(f"  {name[:56]:<56} {best_a * 1e3:7.0f} {best_b * 1e3:9.0f} {best_a / best_b:7.2f}")
    print(f"  {'total':<56} {tot_now * 1e3:7.0f} {tot_then * 1e3:9.0f} "
          f"{tot_now / tot_then:7.2f}")
    return tot_now, tot_then


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path,
                    default=[REPO / "logs" / "write-heavy.jsonl"])
    ap.add_argument("--against", default=AGAINST, help="the commit drawn as the reference")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-timelines", type=int, default=20)
    ap.add_argument("--only", choices=("sweep", "report"), help="draw only these figures")
    args = ap.parse_args()
    then_mods, now_mods = reference(args.against), current()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = open_corpus(args.paths, cache_dir=Path(tmp) / "ds")
        reps = gather(corpus, [(p, replay_corpus(corpus, p))
                               for p in (load_policy(n) for n in POLICIES)])
        result = sweep(corpus, settings(load_policy(POLICIES[0]), make_spec(AXES)), jobs=1)
        print(f"{len(corpus.replayable())} runs of {', '.join(map(str, args.paths))}; "
              f"against {args.against}; best of {args.repeat}; load average "
              f"{os.getloadavg()[0]:.1f}")
        s_now = s_then = r_now = r_then = 0.0
        if args.only != "report":
            s_now, s_then = compare(
                f"sweep ({len(result.settings)} settings over {' × '.join(AXES)})",
                sweep_figures(now_mods, result.table, result.params),
                sweep_figures(then_mods, result.table, result.params), args.repeat)
        if args.only != "sweep":
            r_now, r_then = compare(
                f"report ({' and '.join(POLICIES)}, up to {args.max_timelines} timelines)",
                report_figures(now_mods, reps, corpus, args.max_timelines),
                report_figures(then_mods, reps, corpus, args.max_timelines), args.repeat)
    ratios = [f"{k} {a / b:.2f}" for k, a, b in (("sweep", s_now, s_then),
                                                 ("report", r_now, r_then)) if b]
    print(f"\nCPU ratio now / then: {', '.join(ratios)}, both "
          f"{(s_now + r_now) / (s_then + r_then):.2f} (goal ≤ 0.5)")


if __name__ == "__main__":
    main()
