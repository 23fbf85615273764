"""Policies compared on the same runs, as ``replay report`` and ``replay diff`` do it.

``policy_traces`` gives the (policy, trace) pairs: replayed from logs with the policies priced
under one provider (``replay.policy.pricing.one_provider``), or read from ``replay run`` output
folders (``traces=True``) with the dataset they were replayed from, optionally narrowed to some
runs (``replay.run_select``).  ``report_to`` writes the report of those pairs; ``diff_policies``
compares the metrics of two.  A notebook calls them as the commands do::

    from analysis.report.compare import CompareSpec, diff_policies

    d = diff_policies(CompareSpec(runs=[Path("logs")],
                                  policies=("two-tier-original", "two-tier-corrected")))
    d.table.head()             # (scope, run, metric) deltas, largest first

Not here: the report itself (``analysis.report.build``), the diff table (``analysis.report.diff``), printing
(``replay.cli``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analysis.induced import includes_induced
from analysis.metrics import metrics
from analysis.report.diff import diff
from analysis.run_facts import runs_facts
from analysis.truth_notes import trace_sources
from replay.atomic_files import make_output_dir
from replay.corpus import (
    Corpus,
    Opener,
    Runs,
    corpus_of,
    open_corpus,
    project_opener,
    replay_corpus,
)
from replay.engine.trace import Trace
from replay.errors import ReplayInputError, StoreError
from replay.ingest import store
from replay.ingest.run_label import label_column, run_labels
from replay.layout import cache_root, dataset_dir
from replay.output_targets import (
    check_targets,
    foreign_files,
    refuse_foreign,
    report_owned,
    report_targets,
)
from replay.policy import Policy, load_policy, refuse_shared_names
from replay.policy.pricing import one_provider, pricing_note
from replay.run_select import select_runs

if TYPE_CHECKING:  # the report's modules (bokeh, matplotlib) load only for a report or --traces
    from analysis.report.build import ReportFiles


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareSpec:
    """What to compare: which runs, under which policies (or which ``replay run`` outputs),
    priced how."""

    runs: Runs
    """A corpus, or log files/folders or one dataset; with ``traces``, ``replay run`` output
    folders."""
    policies: tuple[Policy | str, ...] = ()
    """Policies, or policy files or preset names (not with ``traces``)."""
    traces: bool = False
    """Read the traces of ``replay run`` outputs instead of replaying."""
    data: tuple[Path, ...] = ()
    """With ``traces``: the logs or dataset they were replayed from (default: the project
    cache's dataset, else ``DIR/dataset`` of the first folder)."""
    run_ids: tuple[str, ...] = ()
    """Only these runs (labels, sources, globs or ids, as ``--run`` takes them; empty: all)."""
    provider: str | None = None
    """Price every policy under this provider profile."""
    own_providers: bool = False
    """Price each policy under its own provider (default: every one under the first one's)."""
    allow_python: bool = False
    """Allow ``module:Class`` tiers."""
    cache_dir: Path | None = None
    """The project cache (``replay.layout.cache_root``)."""


@dataclass(frozen=True, slots=True)
class PolicyTraces:
    """Policies and their traces over the same runs."""

    corpus: Corpus
    pairs: tuple[tuple[Policy, Trace], ...]
    pricing: str
    """What the costs are priced under, in one sentence (``replay.policy.providers``)."""
    notes: tuple[str, ...] = ()
    """What the selection of runs said (``--run`` taking a renamed file by its old name:
    ``replay.run_select``), one sentence each."""


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    """What ``report_to`` wrote, and from what."""

    files: ReportFiles
    traces: PolicyTraces


@dataclass(frozen=True, slots=True)
class DiffOutcome:
    """Two policies' (or traces') metrics compared (``analysis.report.diff.diff``)."""

    a: Policy
    b: Policy
    table: pd.DataFrame
    """One row per (scope, run, metric), largest change first."""
    traces: PolicyTraces

    @property
    def includes_induced(self) -> bool:
        """Whether either side's figures include induced re-reads (``replay.engine.induced``)."""
        t = self.table
        rows = t[(t["metric"] == "induced_rereads_n") & (t["scope"] == "total")]
        return includes_induced(rows["a"]) or includes_induced(rows["b"])

    @property
    def n_estimated_a(self) -> int:
        """Induced re-reads sized as estimates under ``a`` (``induced_rereads_estimated_n``)."""
        return self._estimated("a")

    @property
    def n_estimated_b(self) -> int:
        """Induced re-reads sized as estimates under ``b``."""
        return self._estimated("b")

    def _estimated(self, side: str) -> int:
        t = self.table
        rows = t[(t["metric"] == "induced_rereads_estimated_n") & (t["scope"] == "total")]
        return int(rows[side].fillna(0).sum())

    def truth_cells(self) -> list[tuple[str, str | None]]:
        """(run id, truth source) of each run under either side (``analysis.truth_notes``)."""
        return [cell for _, trace in self.traces.pairs for cell in trace_sources(trace)]

    def truth_sources(self) -> dict[str, dict[str, str]]:
        """Each side's (``a``, ``b``) truth source by run id."""
        return {side: dict(trace_sources(trace))
                for side, (_, trace) in zip("ab", self.traces.pairs)}


def policy_traces(spec: CompareSpec, *, open_runs: Opener | None = None,
                  on_run: Callable[[int, int], None] | None = None,
                  on_found: Callable[[Corpus], None] | None = None) -> PolicyTraces:
    """Each policy's trace over the same runs (replayed, or read with ``spec.traces``).

    Args:
        spec: what to compare.
        open_runs: opens ``spec.runs`` (or the traces' dataset) when given as paths (default:
            ``replay.corpus.project_opener(spec.cache_dir)``).
        on_run: ``(done, total)`` after each replayed (policy, run).
        on_found: with ``spec.traces`` and no ``spec.data``, called with the corpus of the
            runs the traces hold, read from the dataset found for them (the project cache's,
            or one beside the traces: opened as it is, not through ``open_runs``), before
            any work: a command says what that dataset stored of those runs' logs (their
            issues, files of the same bytes), as ``open_runs`` says it of a dataset named.

    Raises:
        ReplayInputError: policies and ``traces`` together, neither, no dataset for traces, two
            policies of one name (``replay.policy.refuse_shared_names``).
        ReplayError: a policy cannot be loaded or replayed.
    """
    opener = open_runs or project_opener(spec.cache_dir)
    if spec.traces:
        return _read_traces(spec, opener, on_found)
    if spec.data:  # (it was left unread without a word, exit 0)
        raise ReplayInputError("--data names what --traces were replayed from; without "
                               "--traces, PATHS are the logs or the dataset replayed")
    if not spec.policies:
        raise ReplayInputError("give --policy (repeat it for several), or --traces with "
                               "`replay run` output directories")
    loaded = [p if isinstance(p, Policy) else load_policy(p) for p in spec.policies]
    refuse_shared_names(loaded)  # (as replay check: before any log is read)
    priced = one_provider(loaded, spec.provider, own=spec.own_providers)
    corpus = corpus_of(spec.runs, opener)
    ids = corpus.replayable()
    notes: list[str] = []
    if spec.run_ids:
        sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
        labels = run_labels(corpus.runs)
        ids = select_runs(ids, [sources[r] for r in ids], list(spec.run_ids),
                          [] if isinstance(spec.runs, Corpus) else list(spec.runs),
                          [labels[r] for r in ids], stored=corpus.stored_sources, notes=notes)
    total, done = len(ids) * len(priced.policies), [0]

    def tick(_run_id: str) -> None:
        done[0] += 1
        if on_run is not None:
            on_run(done[0], total)

    pairs = tuple((pol, replay_corpus(corpus, pol, allow_python=spec.allow_python, run_ids=ids,
                                      on_run=tick)) for pol in priced.policies)
    return PolicyTraces(corpus=corpus, pairs=pairs, pricing=priced.note, notes=tuple(notes))


def report_to(spec: CompareSpec, out: Path, *, max_timelines: int = 20,
              open_runs: Opener | None = None, on_run: Callable[[int, int], None] | None = None,
              on_figure: Callable[[int, int], None] | None = None,
              on_found: Callable[[Corpus], None] | None = None) -> ReportOutcome:
    """Write report.html, report.md and report_files/ under ``out`` for the traces of ``spec``
    (``policy_traces`` for ``open_runs``, ``on_run`` and ``on_found``; ``write_report`` for
    ``max_timelines`` and ``on_figure``).

    ``out`` is checked first: apart from the inputs (logs, a dataset, --traces folders, --data)
    and the project cache (``replay.output_targets``), writable, no symlink in it
    (``replay.atomic_files``).

    Raises:
        OutputError: ``out`` cannot be written there, or holds a file of a name a report
            writes that no report wrote (``replay.output_targets.report_owned``): before any
            run is opened, nothing written.
    """
    inputs = [*([] if isinstance(spec.runs, Corpus) else list(spec.runs)), *spec.data]
    check_targets(report_targets(out, "--out"), inputs=inputs, cache=cache_root(spec.cache_dir))
    refuse_foreign(out, "--out", foreign_files(out, report_owned(out)), "replay report")
    # lazy: bokeh and matplotlib load only for a report (replay diff: ~1 s of CPU less)
    from analysis.report.build import write_report

    make_output_dir(out, "report_files")
    got = policy_traces(spec, open_runs=open_runs, on_run=on_run, on_found=on_found)
    files = write_report(got.corpus, list(got.pairs), out, max_timelines=max_timelines,
                         on_figure=on_figure, pricing=got.pricing)
    return ReportOutcome(files=files, traces=got)


def diff_policies(spec: CompareSpec, *, open_runs: Opener | None = None,
                  on_run: Callable[[int, int], None] | None = None,
                  on_found: Callable[[Corpus], None] | None = None) -> DiffOutcome:
    """The metrics of two policies (or two ``replay run`` outputs) compared run by run and in
    total: ``analysis.report.diff.diff`` over the traces of ``spec`` (``policy_traces``, for
    ``open_runs``, ``on_run`` and ``on_found``).

    Raises:
        ReplayInputError: not exactly two policies or traces.
    """
    got = policy_traces(spec, open_runs=open_runs, on_run=on_run, on_found=on_found)
    if len(got.pairs) != 2:
        raise ReplayInputError(f"diff compares two policies or traces, got {len(got.pairs)}")
    (pol_a, tr_a), (pol_b, tr_b) = got.pairs
    ids = [rid for tr in (tr_a, tr_b) for rid in tr.columns("requests")["run_id"]]
    facts = runs_facts(got.corpus, list(dict.fromkeys(ids)))  # once for both policies
    table = diff(metrics(got.corpus, tr_a, pol_a, facts=facts),
                 metrics(got.corpus, tr_b, pol_b, facts=facts))
    return DiffOutcome(a=pol_a, b=pol_b, table=table, traces=got)


def _same_runs(dirs: list[Path], held: list[set[str]]) -> None:
    """Refuse traces that do not hold the same runs: each policy's figures would be over
    other runs (a diff compared the runs in both and dropped the others unsaid; with none in
    common, or a run the dataset lacks, it ended in a traceback).

    Raises:
        ReplayInputError: naming the first folder whose runs differ from the first's.
    """
    for d, runs in zip(dirs[1:], held[1:]):
        if runs != held[0]:
            only_a, only_b = len(held[0] - runs), len(runs - held[0])
            raise ReplayInputError(
                f"{d}: its traces hold {len(runs)} runs, {dirs[0]}'s {len(held[0])} "
                f"({only_b} only in {d}, {only_a} only in {dirs[0]}); traces compared must "
                "be replays of the same runs (`replay run` of the same logs)")


def _read_traces(spec: CompareSpec, opener: Opener,
                 on_found: Callable[[Corpus], None] | None) -> PolicyTraces:
    """The traces of ``replay run`` output folders, with the dataset they were replayed from
    (``on_found``: see ``policy_traces``)."""
    if spec.policies or spec.provider or spec.own_providers:
        raise ReplayInputError("--policy, --provider or --pricing own and --traces exclude "
                               "each other: traces carry their policy and prices in "
                               "summary.json")
    if isinstance(spec.runs, Corpus):
        raise ReplayInputError("with traces, runs are `replay run` output folders")
    # lazy: bokeh and matplotlib load only for a report (replay diff: ~1 s of CPU less)
    from analysis.report.build import read_runs

    dirs = list(spec.runs)
    pairs = read_runs(dirs)
    cached = dataset_dir(cache_root(spec.cache_dir))
    source = list(spec.data) if spec.data else [next(
        (d for d in (cached, dirs[0] / "dataset") if store.is_store(d)), dirs[0] / "dataset")]
    if not spec.data and not store.is_store(source[0]):
        raise ReplayInputError(f"{dirs[0]}: no dataset in the project cache ({cached}) nor "
                               "beside the traces; give --data with the logs or dataset they "
                               "were replayed from")
    held = [set(tr.requests["run_id"].to_pylist()) for _, tr in pairs]
    _same_runs(dirs, held)
    # the runs the traces hold, not the whole dataset: a run's calibration may pool the other
    # runs of its model, and must pool the same ones as when the traces were replayed
    traced = set().union(*held)
    # a dataset found, not named (the project cache, or one beside the traces): opened as it
    # is, not as the user's input (the command's notes on what it opened, such as files of
    # the same bytes, were about the whole cache, runs of other commands included); a command
    # says them of the runs traced (``on_found``)
    try:
        corpus = (opener(source) if spec.data else open_corpus(source)).subset(traced)
    except StoreError as exc:  # the project cache's, found: a folder to fix, not an input the
        if spec.data or source[0] != cached:  # user named (exit 2, as every command's cache)
            raise
        raise ReplayInputError(f"{exc} (the project cache's dataset, found for the traces: "
                               "repair or remove it, or give --data)") from None
    if missing := sorted(traced - set(corpus.run_ids)):
        where = ", ".join(map(str, source)) if spec.data else f"the dataset {source[0]}"
        raise ReplayInputError(f"{dirs[0]}: {len(missing)} of the {len(traced)} runs the traces "
                               f"hold are not in {where} (first: {missing[0]}); give --data "
                               "with the logs or dataset they were replayed from")
    if not spec.data and on_found is not None:
        on_found(corpus)
    notes: list[str] = []
    if spec.run_ids:
        keep = pa.array(select_runs(corpus.run_ids, corpus.runs["source"].to_pylist(),
                                    list(spec.run_ids), labels=label_column(corpus.runs),
                                    stored=corpus.stored_sources, notes=notes),
                        pa.string())
        pairs = [(p, Trace(*(t.filter(pc.is_in(t["run_id"], value_set=keep))
                             for t in (tr.requests, tr.actions, tr.evictions))))
                 for p, tr in pairs]
    return PolicyTraces(corpus=corpus, pairs=tuple(pairs),
                        pricing=pricing_note([p for p, _ in pairs]), notes=tuple(notes))
