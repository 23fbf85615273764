"""``replay check``: compare every metric of a replay with a committed baseline, within tolerances.

``check(corpus, policies, baseline, tolerances)`` replays each policy (``analysis.check.baseline.
measure``) and judges every (policy, run, metric) *case* against the baseline:

- ``same`` (equal as stored, or a float within ``FLOAT_NOISE_REL`` of its baseline), ``within`` (moved the bad way, or either way for a metric with
  no better direction, by no more than its tolerance), ``improved`` (moved the good way),
  ``regressed`` (beyond the tolerance), ``ignored`` (tolerance ``any``);
- ``appeared`` / ``vanished``: a value undefined on one side (a mean over summaries when a
  policy now summarises less than twice): a note, never a failure — the counts it is made of
  are metrics of their own and are judged;
- ``changed log`` / ``new run`` / ``missing run``: the corpus changed (a run's sha256
  differs, or a run is only on one side); its metrics are not compared, and these fail only
  with ``strict_logs``;
- ``new metric`` / ``missing metric``: the analyses changed; reported, never failed;
- a log of the archive that could not be read (``CheckResult.unreadable``) always fails the
  check: its runs are not compared (they show as ``missing run`` or are absent);
- a check that compared no run at all (every run of the baseline missing or its log changed,
  or no run on either side) fails: a gate that checked nothing must not pass
  (``CheckResult.nothing_compared``).

A baseline measured by another ``trace_version`` or ``schema_version`` fails every case:
the engine changed, and the baseline must be updated in the same commit.  How far a metric may
move the bad way is its tolerance (``analysis.check.tolerances``).  The verdict, JUnit XML and
Markdown renderings of a result are in ``analysis.check.report``; the whole command in one call
(project defaults, policies, baseline, replay) is ``analysis.check.run.run_check``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from analysis.check.baseline import (
    Baseline,
    CheckError,
    Value,
    measure,
    same_value,
    write_baseline,
)
from analysis.check.baseline_changes import BaselineChange, diff_baselines
from analysis.check.renamed import keyed_as_baseline, renamed_note
from analysis.check.tolerances import Tolerance, Tolerances
from analysis.metrics import METRIC_DIRECTIONS
from analysis.per_run.notes import estimated_text_by_run, figure_notes, unknown_gaps_by_run
from analysis.truth_notes import unrecorded_requests
from replay.corpus import Corpus, not_replayed
from replay.ingest.run_label import run_key, run_labels
from replay.policy import Policy

Status = Literal["same", "within", "improved", "regressed", "ignored", "appeared", "vanished",
                 "changed log", "new run", "missing run", "new metric", "missing metric"]
CORPUS_STATUSES: tuple[str, ...] = ("changed log", "new run", "missing run")
NOTE_STATUSES: tuple[str, ...] = ("appeared", "vanished", "new metric", "missing metric")
"""Cases reported as notes: the value is defined on one side only; never a failure."""
FLOAT_NOISE_REL = 1e-6
"""A float metric (a share, a mean, a cost) that moved by at most this fraction of its larger
value is ``same``: summation order and rounding, not a change of behaviour.  Whole-number
metrics compare exactly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One (policy, run, metric) compared with the baseline."""

    policy: str
    run: str
    metric: str
    baseline: Value
    current: Value
    status: Status
    tolerance: Tolerance
    failed: bool
    message: str
    """Why it failed or was skipped ('' when it passed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """Every case of a check, and the notes about what changed besides metric values."""

    cases: tuple[Case, ...]
    notes: tuple[str, ...]
    """Changed engine, policies, logs, runs and metrics, one sentence each."""
    engine_change: str
    """'' when the baseline was measured by this engine, else what differs."""
    trace_version: str
    schema_version: str
    unreadable: tuple[str, ...] = ()
    """Logs of the archive that could not be read (their runs are not compared)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Run key → the run's label (``replay.ingest.run_label``), for the runs of the corpus checked."""

    def label(self, run: str) -> str:
        """How a run is shown to people: its label, else its key (a run only the baseline has)."""
        return self.labels.get(run, run)

    @property
    def compared_runs(self) -> set[str]:
        """The runs whose metrics were compared (not new, missing or of a changed log)."""
        return {c.run for c in self.cases if c.status not in CORPUS_STATUSES}

    @property
    def nothing_compared(self) -> bool:
        """No run was compared: the check vouches for nothing (it fails)."""
        return not self.compared_runs

    @property
    def exit_code(self) -> int:
        """0 when every case holds, every log was read and some run was compared, 1
        otherwise."""
        return 1 if (self.unreadable or self.nothing_compared
                     or any(c.failed for c in self.cases)) else 0

    def with_status(self, *statuses: str) -> list[Case]:
        """The cases with one of ``statuses``, in case order."""
        return [c for c in self.cases if c.status in statuses]


def preflight(baseline: Baseline, policies: Sequence[Policy], tolerances: Tolerances) -> None:
    """Fail fast, before any replay, when the baseline cannot check these policies.

    Raises:
        CheckError: a policy is not in the baseline, or a tolerance names an unknown metric.
    """
    for p in policies:
        if p.name not in baseline.policies:
            raise CheckError(f"the baseline has no policy {p.name!r} (it has "
                             f"{', '.join(sorted(baseline.policies)) or 'none'}); add it with "
                             f"--update-baseline")
    tolerances.validate([*baseline.metrics, *METRIC_DIRECTIONS])


def check(corpus: Corpus, policies: Sequence[Policy], baseline: Baseline, tolerances: Tolerances,
          *, strict_logs: bool = False, allow_python: bool = False,
          on_run: Callable[[str], None] | None = None) -> CheckResult:
    """Replay ``policies`` over ``corpus`` and compare every metric with ``baseline``."""
    preflight(baseline, policies, tolerances)
    current = measure(corpus, policies, allow_python=allow_python, on_run=on_run)
    # a file renamed in the manifest: its runs keyed as the baseline holds them (and said)
    current, renamed = keyed_as_baseline(current, baseline, corpus)
    unreadable = tuple(corpus.report.failed) if corpus.report is not None else ()
    result = compare(baseline, current, tolerances, strict_logs=strict_logs,
                     unreadable=unreadable)
    labels = run_labels(corpus.runs)
    keys = {run_key(rid, src): rid for rid, src in zip(corpus.runs["run_id"].to_pylist(),
                                                       corpus.runs["source"].to_pylist())}
    keys.update((old, keys[new]) for old, new in renamed.items())
    cells = [(keys.get(run, run), source) for cur in current.policies.values()
             for run, source in cur.truth.items()]
    more = [note] if (note := renamed_note(renamed)) else []
    more += figure_notes(unrecorded=unrecorded_requests(corpus, cells),
                         unknown_gaps=unknown_gaps_by_run(corpus, (rid for rid, _ in cells)),
                         estimated_text=estimated_text_by_run(corpus, (rid for rid, _ in cells)),
                         not_replayed=not_replayed(corpus))
    return replace(result, notes=result.notes + tuple(more),
                   labels={key: labels[rid] for key, rid in keys.items()})


def update_baseline(corpus: Corpus, policies: Sequence[Policy], path: Path,
                    old: Baseline | None, tolerances: Tolerances | None = None, *,
                    allow_python: bool = False,
                    on_run: Callable[[str], None] | None = None) -> list[BaselineChange]:
    """Measure ``policies`` over ``corpus``, write the result to ``path``, return what changed.

    Raises:
        CheckError: ``tolerances`` name a metric the analyses do not produce (nothing written).
    """
    new = measure(corpus, policies, allow_python=allow_python, on_run=on_run)
    if tolerances is not None:
        tolerances.validate(new.metrics)
    write_baseline(path, new)
    return diff_baselines(old, new)


def compare(baseline: Baseline, current: Baseline, tolerances: Tolerances, *,
            strict_logs: bool = False, unreadable: Sequence[str] = ()) -> CheckResult:
    """Judge every (policy, run, metric) of ``current`` against ``baseline``; ``unreadable``
    names logs that could not be read (they fail the check).

    Raises:
        CheckError: a policy of ``current`` is not in the baseline, or a tolerance names a
            metric neither side has.
    """
    tolerances.validate([*current.metrics, *baseline.metrics])
    engine = "; ".join(f"{k} {getattr(baseline, k)} → {getattr(current, k)}"
                       for k in ("trace_version", "schema_version")
                       if getattr(baseline, k) != getattr(current, k))
    runs = _run_status(baseline, current)
    notes = [(f"engine changed ({engine}): update the baseline (`--update-baseline`) in the "
             f"same commit")] if engine else []
    notes += [f"unreadable log: {source}; its runs are not compared" for source in unreadable]
    notes += [f"{status}: {run}" + (f" (sha256 {baseline.runs[run].sha256[:12]} → "
                                    f"{current.runs[run].sha256[:12]}); not compared"
                                    if status == "changed log" else "")
              for run, status in sorted(runs.items())]
    names = [*current.metrics, *(m for m in baseline.metrics if m not in current.metrics)]
    notes += [f"new metric (not in the baseline): {m}" for m in current.metrics
              if m not in baseline.metrics]
    notes += [f"missing metric (in the baseline only): {m}" for m in baseline.metrics
              if m not in current.metrics]
    notes += figure_notes(
        induced=sorted(name for name, cur in current.policies.items()
                       if any((v.get("induced_rereads_n") or 0) > 0
                              for v in cur.values.values())),
        n_estimated=int(sum(v.get("induced_rereads_estimated_n") or 0
                            for cur in current.policies.values() for v in cur.values.values())),
        truth_cells=[cell for cur in current.policies.values() for cell in cur.truth.items()])
    for name, cur in current.policies.items():
        base = baseline.policies.get(name)
        moved = sorted((run, base.truth[run], src) for run, src in cur.truth.items()
                       if base is not None and base.truth.get(run, src) != src)
        if moved:
            notes.append(f"truth changed under {name} for {len(moved)} run(s): the figures rest "
                         "on another basis: " + ", ".join(f"{run} ({old} → {new})"
                                                          for run, old, new in moved[:5])
                         + (f" and {len(moved) - 5} more" if len(moved) > 5 else ""))
    cases = []
    for name, cur in current.policies.items():
        if name not in baseline.policies:
            raise CheckError(f"the baseline has no policy {name!r}; add it with --update-baseline")
        base = baseline.policies[name]
        if base.digest != cur.digest:
            notes.append(f"policy changed: {name} (digest {base.digest} → {cur.digest})")
        for run in sorted(cur.values.keys() | base.values.keys()):
            b_vals, c_vals = base.values.get(run, {}), cur.values.get(run, {})
            for m in names:
                cases.append(_case(name, run, m, b_vals, c_vals, tolerances.for_metric(m),
                                   runs.get(run), strict_logs, engine))
    return CheckResult(cases=tuple(cases), notes=tuple(notes), engine_change=engine,
                       trace_version=current.trace_version, schema_version=current.schema_version,
                       unreadable=tuple(unreadable))


def _run_status(baseline: Baseline, current: Baseline) -> dict[str, str]:
    """Run key → ``changed log`` / ``new run`` / ``missing run``, for runs that differ."""
    out = {}
    for run in sorted(current.runs.keys() | baseline.runs.keys()):
        if run not in baseline.runs:
            out[run] = "new run"
        elif run not in current.runs:
            out[run] = "missing run"
        elif baseline.runs[run].sha256 != current.runs[run].sha256:
            out[run] = "changed log"
    return out


def _case(policy: str, run: str, metric: str, b_vals: dict[str, Value], c_vals: dict[str, Value],
          tol: Tolerance, run_status: str | None, strict_logs: bool, engine: str) -> Case:
    b, c = b_vals.get(metric), c_vals.get(metric)
    if run_status is None and not (b_vals and c_vals):
        run_status = "new run" if not b_vals else "missing run"
    status: Status
    if run_status is not None and (run_status != "missing run" or metric in b_vals):
        status = run_status  # type: ignore[assignment]
    elif metric not in b_vals:
        status = "new metric"
    elif metric not in c_vals:
        status = "missing metric"
    else:
        status = judge(b, c, tol)
    failed = status == "regressed" or bool(engine) or (strict_logs and status in CORPUS_STATUSES)
    message = ""
    if engine:
        message = f"engine changed ({engine}); update the baseline"
    elif status == "regressed":
        message = f"{metric} {describe_change(b, c)}, tolerance {tol}"
    elif status in CORPUS_STATUSES:
        message = f"{status}: {run}" + ("" if failed else " (not compared)")
    elif status in ("appeared", "vanished"):
        message = f"{metric} {describe_change(b, c)} (a note: defined on one side only)"
    elif status in ("new metric", "missing metric", "ignored"):
        message = status
    return Case(policy=policy, run=run, metric=metric, baseline=b, current=c, status=status,
                tolerance=tol, failed=failed, message=message)


def judge(base: Value, current: Value, tol: Tolerance) -> Status:
    """Compare one value with its baseline under ``tol``."""
    if same_value(base, current):
        return "same"
    if base is None or current is None:
        return "appeared" if base is None else "vanished"
    if (isinstance(base, float) or isinstance(current, float)) and \
            abs(current - base) <= FLOAT_NOISE_REL * max(abs(base), abs(current)):
        return "same"
    if not tol.checked:
        return "ignored"
    delta = current - base
    worse = {"lower": delta, "higher": -delta, "either": abs(delta)}[tol.direction]
    allowed = tol.allowed(base)
    if worse > allowed + 1e-9 * max(abs(base), abs(current), allowed):
        return "regressed"
    return "within" if worse > 0 else "improved"


def describe_change(base: Value, current: Value) -> str:
    """``+3 (0 → 3)``, ``-1.2% (1,000 → 988)``, ``appeared (null → 5)`` and the like."""
    if base is None or current is None:
        return f"{'appeared' if base is None else 'vanished'} ({fmt(base)} → {fmt(current)})"
    delta = current - base
    rel = f" ({pct(delta / abs(base))})" if base else ""
    return f"{'+' if delta >= 0 else '-'}{fmt(abs(delta))}{rel}: {fmt(base)} → {fmt(current)}"


def pct(frac: float) -> str:
    """A signed relative change: ``+12.3%``, ``-0.0088%`` (two significant digits below 0.1 %)."""
    p = frac * 100
    return f"{p:+,.1f}%" if abs(p) >= 0.1 or p == 0 else f"{p:+.2g}%"


def fmt(v: Value) -> str:
    """A value for people: thousands separators for whole numbers, 4 significant digits else."""
    if v is None:
        return "null"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.4g}" if abs(v) >= 1e-3 else f"{v:.3g}"
