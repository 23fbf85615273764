"""``replay run`` in one call: ``run_policy_to(runs, policy)`` replays a policy over a corpus
and writes its traces and summary (and, with ``report``, the report) under one folder::

    from analysis.policy_run import run_policy_to
    from replay.policy import load_policy

    done = run_policy_to([Path("logs")], load_policy("two-tier-corrected"))
    done.summary.to_pandas()   # one row per run (analysis.per_run.rollup), written to done.out

Not here: the replay and its files (``replay.apply_policy``), the summary's columns
(``analysis.per_run.rollup``), printing (``replay.cli``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from analysis.per_run.rollup import RUN_ROLLUP
from replay.apply_policy import rollup_table, run, run_to, write_run
from replay.corpus import Corpus, Opener, Runs, corpus_of
from replay.layout import cache_root, make_run_dir, run_dir
from replay.output_targets import (
    check_targets,
    foreign_files,
    refuse_foreign,
    report_owned,
    run_targets,
)
from replay.policy import Policy
from replay.run_folder import foreign_outputs


@dataclass(frozen=True, slots=True)
class PolicyRun:
    """What ``run_policy_to`` did."""

    summary: pa.Table
    """One row per run (``analysis.per_run.rollup``), as written to ``out/summary.json``."""
    out: Path
    corpus: Corpus
    not_replayed: tuple[str, ...]
    """Runs of the corpus with no recorded request (not replayed), by id."""
    notes: tuple[str, ...] = ()
    """What the summary calls for a reader to know (``analysis.per_run.rollup.run_notes``),
    one sentence each, as written to ``out/summary.json`` (``notes``)."""


def run_policy_to(runs: Runs, policy: Policy, out: Path | None = None, *, report: bool = False,
                  allow_python: bool = False, open_runs: Opener | None = None,
                  cache_dir: Path | None = None,
                  on_run: Callable[[int, int], None] | None = None,
                  on_figure: Callable[[int, int], None] | None = None) -> PolicyRun:
    """Replay ``policy`` over ``runs`` and write its traces and summary under ``out``.

    Args:
        runs: a corpus, or log files/folders or one dataset (opened by ``open_runs``, default
            ``replay.corpus.project_opener()``, once ``out`` is known to be writable).
        policy: the policy.
        out: the folder (default: ``out/<policy name>``, ``replay.layout.run_dir``).
        report: also write report.html and report.md there (holds every trace in memory;
            without it traces are streamed run by run).
        allow_python: allow ``module:Class`` tiers.
        cache_dir: the project cache (``replay.layout.cache_root``), which ``out`` must be apart
            from, as from the paths of ``runs`` (``replay.output_targets``).
        on_run: ``(done, total)`` after each replayed run.
        on_figure: the report's figures, as for ``analysis.report.build.write_report``.

    Raises:
        ReplayError: the policy cannot be replayed.
        OutputError: ``out`` is or holds an input, is in the cache, holds a summary or trace
            file no ``replay run`` wrote (``replay.run_folder.foreign_outputs``; with ``report``,
            a report's file no report wrote: ``replay.output_targets.report_owned``), is a symlink
            below the folder named, or cannot be written (before any run is opened).
        OSError: an output cannot be written (a full disk).
    """
    check_targets(run_targets(run_dir(policy.name, out), "--out" if out else "out/POLICY",
                              report=report),
                  inputs=() if isinstance(runs, Corpus) else list(runs),
                  cache=cache_root(cache_dir))
    folder_named = run_dir(policy.name, out)
    refuse_foreign(folder_named, "--out" if out else "out/POLICY",
                   [*foreign_outputs(folder_named),
                    *(foreign_files(folder_named, report_owned(folder_named)) if report else [])],
                   "replay run")
    folder = make_run_dir(policy.name, out, report=report)
    corpus = corpus_of(runs, open_runs)
    ids = corpus.replayable()
    done = [0]

    def tick(_run_id: str) -> None:
        done[0] += 1
        if on_run is not None:
            on_run(done[0], len(ids))

    if report:
        result = run(corpus, policy, rollup=RUN_ROLLUP, allow_python=allow_python,
                     on_run=tick)
        write_run(result, folder)
        summary, notes = rollup_table(result), list(result.notes)
        # imported here: only the report needs pandas and matplotlib (~1 s to import)
        from analysis.report.build import write_report
        write_report(corpus, [(policy, result.trace)], folder, on_figure=on_figure)
    else:
        summary, notes = run_to(corpus, policy, folder, rollup=RUN_ROLLUP,
                                allow_python=allow_python, on_run=tick, release_memory=True)
    return PolicyRun(summary=summary, out=folder, corpus=corpus,
                     not_replayed=tuple(corpus.not_replayable()), notes=tuple(notes))
