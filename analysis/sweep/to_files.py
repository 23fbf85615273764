"""A whole sweep in one call, as ``replay sweep`` does it: ``sweep_to(runs, base, spec, out)``.

The settings of a grid over a base policy (``analysis.sweep.grid``), checked with the choice rule
before any run is opened; the replay of every (run, setting) (``analysis.sweep.core``); the settings
ranked under the constraints (``analysis.sweep.pareto``); the table, settings, plots and chosen.yaml
written under ``out`` (``write_sweep``).  A notebook or CI script calls it as the command does::

    from analysis.sweep.grid import load_spec
    from analysis.sweep.to_files import sweep_to
    from replay.policy import load_policy

    done = sweep_to([Path("logs")], load_policy("two-tier-corrected"),
                    load_spec(None, ["tiers.1.keep_messages=8,16,24"]), Path("out/sweep"),
                    best=["overshoots_n==0"])
    done.ranked.head()         # settings meeting the constraints, best first

Not here: the sweep itself (``analysis.sweep.core``), printing (``replay.cli``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.induced import includes_induced
from analysis.metrics import known
from analysis.sweep.choice import ChoiceRule, beaten_on_loss
from analysis.sweep.core import SweepResult, sweep, write_sweep
from analysis.sweep.grid import SweepSpec, settings
from analysis.sweep.pareto import ALIASES, aggregate, check_choice, unknown_in_constraints
from analysis.sweep.pareto import best as best_settings
from replay.atomic_files import make_output_dir
from replay.corpus import Corpus, Opener, Runs, corpus_of
from replay.layout import cache_root
from replay.output_targets import (
    Owned,
    Target,
    check_targets,
    foreign_files,
    head_bytes,
    parquet_footer,
    png_marked,
    refuse_foreign,
)
from replay.policy import Policy

SHOWN_METRICS = known("overshoots_n", "tokens_sent", "cache_invalidation_cached_share",
                      "cost_usd", "induced_rereads_n", "induced_rereads_tokens")
"""The metrics a sweep's summary shows for each of the best settings, after the objective."""


@dataclass(frozen=True, slots=True)
class SweepOutcome:
    """What ``sweep_to`` did: the sweep, its settings ranked, the files written."""

    result: SweepResult
    ranked: pd.DataFrame
    """Settings meeting the constraints, best first (``analysis.sweep.pareto.best``); empty when none
    does."""
    rule: ChoiceRule
    files: tuple[Path, ...]
    corpus: Corpus
    n_same_policy: int = 0
    """Settings the design asked for that made a policy already in the sweep (the same values
    twice, a value equal to the base's in ``one_at_a_time``): one setting each, not swept
    again (``analysis.sweep.grid.settings``)."""

    @property
    def exit_code(self) -> int:
        """0 when a setting meets the constraints, else 1."""
        return 0 if len(self.ranked) else 1

    @property
    def includes_induced(self) -> bool:
        """Whether the figures include induced re-reads (``replay.engine.induced``)."""
        return includes_induced(self.result.table["induced_rereads_n"])

    def truth_cells(self) -> list[tuple[str, str | None]]:
        """(run id, truth source) of every (run, setting) row (``analysis.truth_notes``)."""
        t = self.result.table
        return list(zip(t["run_id"].tolist(), t["truth_source"].tolist()))

    def best_rows(self, top: int) -> list[dict[str, Any]]:
        """The ``top`` best settings: id, swept values, the objective and ``SHOWN_METRICS``."""
        params = self.result.params
        shown = dict.fromkeys((self.rule.objective, *SHOWN_METRICS))
        return [{"setting": r["setting"], **{p: r[p] for p in params}, **{c: r[c] for c in shown}}
                for r in self.ranked.head(top).to_dict(orient="records")]


def sweep_to(runs: Runs, base: Policy, spec: SweepSpec, out: Path, *,
             best: Sequence[str] = (), objective: str = "tokens_sent", minimise: bool = True,
             jobs: int = 0, scheduler: Any = None, cache_dir: Path | None = None,
             plots: bool = True, allow_python: bool = False, open_runs: Opener | None = None,
             project_cache: Path | None = None, kept: Sequence[tuple[Path, str]] = (),
             on_row: Callable[[int, int], None] | None = None,
             on_figure: Callable[[int, int], None] | None = None) -> SweepOutcome:
    """Sweep ``spec`` over ``base`` and write the outcome under ``out``.

    Args:
        runs: a corpus, or log files/folders or one dataset (opened by ``open_runs``, default
            ``replay.corpus.project_opener()``, after the grid and the rule are checked).
        base: the base policy.
        spec: the grid (``analysis.sweep.grid.load_spec``).
        out: the sweep folder (``out/sweep`` for the command): checked writable first.
        best: constraints the chosen setting meets, e.g. ``"overshoots_n==0"``.
        objective: the metric the chosen setting minimises (``minimise``) or maximises,
            summed over runs.
        jobs, scheduler, cache_dir, allow_python: as for ``analysis.sweep.core.sweep``.
        plots: also draw the plots.
        project_cache: the project cache (``replay.layout.cache_root``) ``out`` must be apart
            from, as from the paths of ``runs`` (``replay.output_targets``).
        kept: files the sweep reads, with what each is (the policy file, the grid): ``out``
            must not hold one (``replay.output_targets``).
        on_row: ``(done, total)`` after each (run, setting) row.
        on_figure: ``(done, total)`` as the plots are drawn.

    Returns:
        The sweep, the settings ranked, the files, the corpus.

    Raises:
        ReplayError: a bad grid, constraint or objective (before any run is opened), a
            setting that cannot be replayed.
        OutputError: ``out`` is or holds an input, is in the project cache, is a symlink,
            holds a file of a name the sweep writes that no sweep wrote (``sweep_owned``), or
            cannot be written (before any run is opened, nothing written).
        OSError: an output cannot be written (a full disk).
    """
    chosen_from = settings(base, spec)
    check_choice(list(best), objective,
                 [p for p, _ in chosen_from[0].params] if chosen_from else [])
    check_targets([Target(out, "--out", folder=True)],
                  inputs=() if isinstance(runs, Corpus) else list(runs), kept=kept,
                  cache=cache_root(project_cache))
    refuse_foreign(out, "--out", foreign_files(out, sweep_owned(out)), "replay sweep")
    make_output_dir(out.parent, out.name)  # the sweep's own folder: never through a symlink
    corpus = corpus_of(runs, open_runs)
    total = len(corpus.replayable()) * len(chosen_from)
    done = [0]

    def row(_run_id: str) -> None:
        done[0] += 1
        if on_row is not None:
            on_row(done[0], total)

    result = sweep(corpus, chosen_from, jobs=jobs, scheduler=scheduler, cache_dir=cache_dir,
                   allow_python=allow_python, on_row=row)
    per_setting = aggregate(result.table, result.params)
    ranked = best_settings(result.table, list(best), objective, minimise=minimise,
                           params=result.params, aggregated=per_setting)
    column = objective if objective in ranked.columns else ALIASES.get(objective, objective)
    rule = ChoiceRule(constraints=tuple(best), objective=objective, minimise=minimise,
                      design=spec.design, n_meeting=len(ranked),
                      n_unknown=int(ranked[column].isna().sum()) if column in ranked else 0,
                      constraint_unknown=unknown_in_constraints(
                          per_setting, list(best), ranked["setting"].tolist()),
                      beaten=beaten_on_loss(ranked))
    files = write_sweep(result, out, plots=plots, rule=rule,
                        chosen=ranked["setting"].iloc[0] if len(ranked) else None,
                        jobs=result.stats.n_workers, on_figure=on_figure)
    return SweepOutcome(result=result, ranked=ranked, rule=rule, files=tuple(files),
                        corpus=corpus, n_same_policy=spec.size - len(chosen_from))


_CSV_HEAD = b"run_id,source,setting,"
"""How every ``sweep.csv`` begins (the table's first columns, ``analysis.sweep.table``)."""


def _sweep_parquet(path: Path) -> bool:
    footer = parquet_footer(path)
    return all(b'"%s"' % c in footer for c in (b"run_id", b"source", b"setting", b"truth_source"))


def _settings_json(path: Path) -> bool:
    try:
        doc = json.loads(head_bytes(path, 1 << 26))
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and bool(doc) and all(
        isinstance(v, dict) and set(v) == {"params", "policy"} for v in doc.values())


def _chosen_yaml(path: Path) -> bool:
    first = head_bytes(path).split(b"\n", 1)[0]
    return first.startswith(b"# ") and b" of a sweep of " in first


def sweep_owned(out: Path) -> list[tuple[str, Owned]]:
    """What a sweep writes in ``out`` (``analysis.sweep.core.write_sweep``), with how each is
    known as a sweep's own (any version): sweep.parquet by its columns (in its footer),
    sweep.csv by its header, settings.json as a mapping of settings (params and policy),
    chosen.yaml by its first comment line, a plot by its ``Software`` text
    (``replay.output_targets.png_marked``) or — drawn by a sweep before it marked its plots —
    in a folder whose sweep.parquet or sweep.csv is a sweep's."""
    def old_sweep() -> bool:
        return _sweep_parquet(out / "sweep.parquet") or \
            head_bytes(out / "sweep.csv").startswith(_CSV_HEAD)

    def plot(path: Path) -> bool:
        return png_marked(path) or old_sweep()

    return [("sweep.parquet", _sweep_parquet),
            ("sweep.csv", lambda p: head_bytes(p).startswith(_CSV_HEAD)),
            ("settings.json", _settings_json), ("chosen.yaml", _chosen_yaml),
            ("pareto_*_vs_*.png", plot), ("metrics_vs_*.png", plot)]
