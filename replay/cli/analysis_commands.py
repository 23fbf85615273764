"""The ``replay`` commands over the analysis package: report, diff and sweep.

Each parses its arguments, replays (or reads ``replay run`` traces), calls the
``analysis`` function of the same name, and prints a table (or JSON with ``--json``).
They are registered on the app in ``replay.cli``; ``analysis`` is imported inside the
commands, so the replay commands start without it.

Not here: the replay commands (``replay.cli.replay_commands``), check
(``replay.cli.check_command``), printing and exit codes (``replay.cli.output``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from replay.cli.inputs import (
    AllowPythonOpt,
    CacheDirOpt,
    CacheOutOpt,
    FormatOpt,
    PathsArg,
    ProviderOpt,
    QuietOpt,
    StrictOpt,
    _finish,
    _opener,
    existing,
    not_empty,
    stored_problems,
    table_command,
)
from replay.cli.inputs_said import corpus_inputs, same_bytes_note
from replay.cli.output import _counter, _emit, _errors, _print_json, _steps, say, warn
from replay.cli.tables import Layout, TableOptions

# --- report / diff commands (analysis.report.build, analysis.report.diff) ---

ReportPolicyOpt = Annotated[list[str] | None, typer.Option(
    "--policy", "-p", help="Policy YAML file or preset name, replayed over PATHS; repeat it to "
                           "compare policies side by side.")]
TracesOpt = Annotated[bool, typer.Option(
    "--traces", help="PATHS are output directories of `replay run` (traces + summary.json): "
                     "use their traces instead of replaying.")]
DataOpt = Annotated[list[Path] | None, typer.Option(
    "--data", help="With --traces: the logs or dataset the traces were replayed from "
                   "(default: the project cache's dataset, else DIR/dataset of the first "
                   "directory).")]
RunOpt = Annotated[list[str] | None, typer.Option(
    "--run", help="Only these runs: a label or source path (as `replay runs` shows it), a glob "
                  "such as 'scenarios/*', or a run id (repeatable; default: every run).")]
OwnProvidersOpt = Annotated[bool, typer.Option(
    "--own-providers", help="The same as --pricing own (the older spelling).")]
def _pricing_choice(value: str | None) -> str | None:
    if value is not None and value not in ("first", "own"):
        raise typer.BadParameter(f"{value!r}: first or own")
    return value


PricingOpt = Annotated[str | None, typer.Option(
    "--pricing", metavar="first|own", callback=_pricing_choice,
    help="How policies that name different providers are priced: first (every policy under "
         "the first one's, so costs compare like for like; the default) or own (each under "
         "its own: cost differences then include the price difference). The report's verdict "
         "and totals say which provider priced each cost; --provider NAME prices all under NAME.")]


def _own(pricing: str | None, own_providers: bool) -> bool:
    """Whether each policy is priced under its own provider (``--pricing``/``--own-providers``);
    a usage error when they disagree."""
    if own_providers and pricing == "first":
        raise typer.BadParameter("--own-providers is --pricing own; not with --pricing first")
    return own_providers or pricing == "own"


def report(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATHS", callback=existing, help="Log files/folders or one dataset (with --policy), or "
                                "`replay run` output directories (with --traces).")],
    policy: ReportPolicyOpt = None,
    traces: TracesOpt = False,
    data: DataOpt = None,
    run_ids: RunOpt = None,
    out: Annotated[Path | None, typer.Option(help="Where report.html, report.md and "
                                                  "report_files/ are written (nothing else; "
                                                  "default: out).")] = None,
    cache_dir: CacheDirOpt = None,
    max_timelines: Annotated[int, typer.Option(min=0, help="Per-run timelines drawn, for the runs "
                                                    "with the most requests.")] = 20,
    provider: ProviderOpt = None,
    pricing: PricingOpt = None,
    own_providers: OwnProvidersOpt = False,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Write a self-contained report.html and a report.md for one run or a corpus, per policy."""
    # lazy: pandas and matplotlib load only for the command that needs them (start-up time)
    from analysis.report.compare import report_to
    from replay.layout import OUT, unnamed

    with _errors(), _counter("replay", quiet) as tick, \
            _steps("report: drawing figures", quiet) as draw:
        out = out if out is not None else unnamed(OUT, "--out")
        done = report_to(_compare_spec(paths, policy, traces, data, run_ids, provider,
                                       _own(pricing, own_providers), allow_python, cache_dir),
                         out,
                         max_timelines=max_timelines,
                         open_runs=_opener(cache_dir, fmt, quiet, strict), on_run=tick,
                         on_figure=draw, on_found=_found_said(strict))
    files = done.files
    for note in done.traces.notes:  # (--run by a renamed file's old name)
        say(f"note: {note}", err=True)
    say(f"note: {done.traces.pricing}", err=True)
    say(files.html)
    say(files.markdown)
    say(f"{len(files.images)} figures in {files.html.parent / 'report_files'}")
    _finish(done.traces.corpus.report, strict)


def _found_said(strict: bool) -> Callable[[Any], None]:
    """With ``--traces`` and no ``--data``, what a dataset found for the traces (the project
    cache's, or one beside them: ``compare.policy_traces``'s ``on_found``) holds of the logs
    of the runs traced, said as a dataset named is (``inputs._open``): their stored issues and
    unknown records (``stored_problems``: with ``strict``, exit 1 before any work) and the
    files of the same bytes among them (not among the whole cache: runs of other commands)."""
    def say_found(corpus: Any) -> None:
        from replay.ingest import entry_notes  # lazy: pyarrow only when it runs

        stored_problems(corpus.entries, strict)
        if note := same_bytes_note(entry_notes.same_bytes(corpus.entries)):
            say(note, err=True)
    return say_found


@table_command
def diff(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATHS", callback=existing, help="Log files/folders or one dataset (with two --policy), or two "
                                "`replay run` output "
             "directories (with --traces).")],
    policy: ReportPolicyOpt = None,
    traces: TracesOpt = False,
    data: DataOpt = None,
    run_ids: RunOpt = None,
    cache_dir: CacheOutOpt = None,
    top: Annotated[int, typer.Option(min=0, help="Rows shown per section in the table (JSON has "
                                          "every row).")] = 20,
    provider: ProviderOpt = None,
    pricing: PricingOpt = None,
    own_providers: OwnProvidersOpt = False,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
    *,
    table: TableOptions,
) -> None:
    """Compare two policies (or two traces) on the same runs: metric deltas, largest first."""
    # lazy: pandas and matplotlib load only for the command that needs them (start-up time)
    from analysis.per_run.notes import (
        estimated_by_policy,
        estimated_text_by_run,
        figure_notes,
        unknown_gaps_by_run,
    )
    from analysis.report.compare import diff_policies
    from analysis.report.diff import to_records
    from analysis.report.pages import fmt_rel, fmt_value
    from analysis.truth_notes import judged_runs, unrecorded_requests
    from replay.corpus import not_replayed
    from replay.ingest.run_label import run_labels

    with _errors(), _counter("replay", quiet) as tick:
        done = diff_policies(_compare_spec(paths, policy, traces, data, run_ids, provider,
                                           _own(pricing, own_providers), allow_python,
                                           cache_dir),
                             open_runs=_opener(cache_dir, fmt, quiet, strict), on_run=tick,
                             on_found=_found_said(strict))
    d, priced, corpus = done.table, done.traces.pricing, done.traces.corpus
    for note in done.traces.notes:  # (--run by a renamed file's old name; --json too)
        say(f"note: {note}", err=True)
    left = [] if run_ids else not_replayed(corpus)  # (runs named: only theirs were asked for)
    unrecorded = unrecorded_requests(corpus, done.truth_cells())
    gaps = unknown_gaps_by_run(corpus, (rid for rid, _ in done.truth_cells()))
    estimated_text = estimated_text_by_run(corpus, (rid for rid, _ in done.truth_cells()))
    labels = run_labels(corpus.runs)
    # each row's run by its label, beside its run id (as run and check say it)
    records = [{"scope": r["scope"], "run": labels.get(r["run_id"], r["run_id"]), **r}
               for r in to_records(d)] if table.as_json or table.as_csv else []
    if table.as_json:
        _print_json({"a": done.a.name, "b": done.b.name, "pricing": priced,
                     "not_replayed": left,
                     "includes_induced": done.includes_induced,
                     "tokenizer_judged_runs": judged_runs(done.truth_cells()),
                     "unrecorded_usage_requests": unrecorded,
                     "unknown_idle_gap_requests": gaps,
                     "estimated_text_blocks": estimated_text,
                     "truth_sources": done.truth_sources(), "rows": records,
                     "inputs": corpus_inputs(corpus, strict, left)})
        _finish(corpus.report, strict)
        return
    moved = d[(d["delta"] != 0) & d["delta"].notna()]
    shown = [r for scope in ("total", "run")
             for r in moved[moved["scope"] == scope].head(top).to_dict(orient="records")]
    rows = [{"run": labels.get(r["run_id"], r["run_id"]), "metric": r["metric"],
             "a": fmt_value(r["metric"], r["a"]), "b": fmt_value(r["metric"], r["b"]),
             "change": fmt_rel(r["rel_delta"]), "verdict": r["verdict"]} for r in shown]
    title = (f"b: {done.b.name} against a: {done.a.name}: {len(moved)} of {len(d)} (run, metric) "
             f"values changed, largest first; {priced}")
    if table.as_csv:  # every row, its numbers as numbers, as --json's (the table's formatted
        # text and --top's first rows were the CSV: "784,418", "from 0", the title as a row)
        say(title, err=True)
        _emit(records, table, title=title, columns=DIFF_CSV_COLUMNS)
    elif rows:
        _emit(rows, table, title=title)
    else:
        say(title)
    n_estimated, estimated_scope = estimated_by_policy(
        [(f"a: {done.a.name}", done.n_estimated_a), (f"b: {done.b.name}", done.n_estimated_b)]
        if done.includes_induced else [])
    for note in figure_notes(induced=done.includes_induced, n_estimated=n_estimated,
                             estimated_scope=estimated_scope,
                             truth_cells=done.truth_cells(), truth_where="--json's truth_sources",
                             unrecorded=unrecorded, unknown_gaps=gaps,
                             estimated_text=estimated_text, not_replayed=left):
        say(f"note: {note}", err=True)
    _finish(corpus.report, strict)


def _compare_spec(paths: list[Path], policies: list[str] | None, traces: bool,
                  data: list[Path] | None, run_ids: list[str] | None, provider: str | None,
                  own_providers: bool, allow_python: bool, cache: Path | None) -> Any:
    """The options of report and diff as an ``analysis.report.compare.CompareSpec``."""
    # lazy: pandas and matplotlib load only for the command that needs them (start-up time)
    from analysis.report.compare import CompareSpec

    return CompareSpec(runs=paths, policies=tuple(policies or ()), traces=traces,
                       data=tuple(data or ()), run_ids=tuple(run_ids or ()), provider=provider,
                       own_providers=own_providers, allow_python=allow_python, cache_dir=cache)


DIFF_CSV_COLUMNS = ("scope", "run", "run_id", "metric", "a", "b", "delta", "rel_delta",
                    "direction", "verdict")
"""``diff --csv``'s columns, --json's rows' (the header when no run gave a row)."""


# --- sweep command (analysis.sweep.core) ---

@table_command
def sweep(
    paths: PathsArg,
    policy: Annotated[str, typer.Option("--policy", "-p", help="Base policy YAML file or "
                                                               "preset name.")],
    grid: Annotated[Path | None, typer.Option(help="Grid YAML: {grid: {PATH: a list of values "
                                                   "or {start, stop, num|step}}, design, "
                                                   "samples, seed}.")] = None,
    axis: Annotated[list[str] | None, typer.Option(help="An axis inline, PATH=V1,V2,... or "
                                                        "PATH=START:STOP:NUM (repeatable; added "
                                                        "to --grid's).")] = None,
    design: Annotated[str | None, typer.Option(help="grid, random or one_at_a_time (overrides "
                                                    "the grid file's).")] = None,
    samples: Annotated[int | None, typer.Option(help="Settings drawn by the random design.")]
        = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the random design.")] = None,
    out: Annotated[Path | None, typer.Option(help="Output root: OUT/sweep/ (tables, plots, "
                                                  "chosen.yaml; default: out).")] = None,
    cache_dir: CacheDirOpt = None,
    jobs: Annotated[int, typer.Option(min=0, help="Local worker processes (0: one per core; 1: this "
                                           "process); they draw the plots too.")] = 0,
    scheduler: Annotated[str | None, typer.Option(
        callback=not_empty, help="Dask scheduler address (tcp://HOST:PORT) to run on instead.")]
        = None,
    best: Annotated[list[str] | None, typer.Option("--best", help="Constraint the chosen "
                                                                  "setting meets, e.g. "
                                                                  "'overshoots_n==0'; names are the "
                                                                  "sweep table's columns "
                                                                  "(repeatable).")] = None,
    minimise: Annotated[str | None, typer.Option(
        "--minimise", callback=not_empty,
        help="Metric the chosen setting minimises (summed over runs; default tokens_sent): "
             "a metric column of the sweep table or its short name (overshoots, cached_share, "
             "…), not a swept path, the setting or a run.")]
        = None,
    maximise: Annotated[str | None, typer.Option(
        "--maximise", callback=not_empty, help="Metric to maximise instead.")] = None,
    top: Annotated[int, typer.Option(min=0, help="Settings listed, best first.")] = 5,
    provider: ProviderOpt = None,
    cache: Annotated[bool, typer.Option(help="Reuse and store rows in the project cache "
                                             "(CACHE-DIR/sweep_cache/).")] =
        True,
    plots: Annotated[bool, typer.Option(help="Draw each metric vs each path and the Pareto "
                                             "fronts.")] = True,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
    *,
    table: TableOptions,
) -> None:
    """Replay a grid of settings of a base policy; one row per (run, setting), plots, the best."""
    # lazy: pandas and matplotlib load only for the command that needs them (start-up time)
    from analysis.metric_spec import count
    from analysis.per_run import UNITS
    from analysis.per_run.notes import estimated_text_by_run, figure_notes, unknown_gaps_by_run
    from analysis.sweep.choice import beaten_text, unknown_constraints, unknown_objective
    from analysis.sweep.grid import load_spec
    from analysis.sweep.to_files import sweep_to
    from analysis.truth_notes import judged_runs, unrecorded_requests
    from replay.corpus import not_replayed
    from replay.layout import OUT, SWEEP, cache_root, sweep_cache_dir, unnamed
    from replay.policy import load_policy
    from replay.policy.pricing import with_provider

    if minimise is not None and maximise is not None:  # (neither silently wins)
        raise typer.BadParameter("give one of --minimise and --maximise",
                                 param_hint="'--minimise'")
    objective = maximise or minimise or "tokens_sent"
    with _errors():
        out = out if out is not None else unnamed(OUT, "--out")
        base = load_policy(policy)
        base = with_provider(base, provider) if provider else base
        spec = load_spec(grid, axis or [], design=design, samples=samples, seed=seed)
        with _counter("sweep", quiet) as tick, _steps("sweep: drawing plots", quiet) as draw:
            done = sweep_to(paths, base, spec, out / SWEEP, best=best or [],
                            objective=objective, minimise=maximise is None, jobs=jobs,
                            scheduler=scheduler,
                            cache_dir=sweep_cache_dir(cache_root(cache_dir)) if cache else None,
                            plots=plots, allow_python=allow_python,
                            open_runs=_opener(cache_dir, fmt, quiet, strict),
                            project_cache=cache_dir, on_row=tick, kept=[
                                *([(Path(policy), "the policy file")]
                                  if Path(policy).is_file() else []),
                                *([(grid, "the grid file")] if grid is not None else [])],
                            on_figure=draw)
    s = done.result.stats
    shown = done.best_rows(top)
    unrecorded = unrecorded_requests(done.corpus, done.truth_cells())
    gaps = unknown_gaps_by_run(done.corpus, (rid for rid, _ in done.truth_cells()))
    estimated_text = estimated_text_by_run(done.corpus, (rid for rid, _ in done.truth_cells()))
    left = not_replayed(done.corpus)
    if s.n_cache_dropped:
        warn(f"sweep cache: {s.n_cache_dropped} run file(s) failed their check (another run's, "
             "edited, truncated or a symlink): dropped, their rows replayed again")
    if s.n_cache_unwritten:
        warn(f"sweep cache: the rows of {s.n_cache_unwritten} run(s) were not stored "
             f"({s.cache_error}); the results below are complete")
    if table.as_json:
        _print_json({"settings": s.n_settings, "runs": s.n_runs, "computed": s.n_computed,
                     "reused": s.n_reused, "replays": s.n_replays, "repeats": s.n_repeated,
                     "same_policy": done.n_same_policy,
                     "cache_dropped": s.n_cache_dropped,
                     "cache_unwritten": s.n_cache_unwritten,
                     "files": [str(f) for f in done.files], "best": shown,
                     "objective_unknown_settings": done.rule.n_unknown,
                     "constraint_unknown_settings": dict(done.rule.constraint_unknown),
                     "chosen_beaten_on_cost_and_rereads": None if done.rule.beaten is None
                     else dict(zip(("setting", "cost_usd", "induced_rereads_n",
                                    "chosen_cost_usd", "chosen_induced_rereads_n"),
                                   done.rule.beaten)),
                     "includes_induced": done.includes_induced,
                     "tokenizer_judged_runs": judged_runs(done.truth_cells()),
                     "unrecorded_usage_requests": unrecorded,
                     "unknown_idle_gap_requests": gaps,
                     "estimated_text_blocks": estimated_text,
                     "not_replayed": left,
                     "inputs": corpus_inputs(done.corpus, strict, left)})
    else:
        same = (f" ({done.n_same_policy} more the grid asked for made a policy already in it: "
                "not swept twice)") if done.n_same_policy else ""
        say(f"{count(s.n_settings, 'setting')}{same} × {count(s.n_runs, 'run')}: {s.n_computed} computed "
            f"({s.n_replays} replays, {s.n_repeated} of them repeating the one before, the "
            f"others' rows shared exactly), {s.n_reused} reused "
            f"→ {out / 'sweep'}", err=True)
        _emit(shown, table, layout=Layout(units=UNITS), title=f"best by {objective} ({'max' if maximise else 'min'}, summed "
                                  f"over runs) under {', '.join(best or []) or 'no constraint'}")
        rows = done.result.table["induced_rereads_estimated_n"]
        for note in figure_notes(
                induced=done.includes_induced,
                n_estimated=int(rows.sum()) if done.includes_induced else 0,  # (every setting's)
                estimated_scope=f"(summed over the table's {len(rows):,} (run, setting) rows)",
                truth_cells=done.truth_cells(),
                truth_where=f"the truth_source column of {out / 'sweep'}'s tables",
                unrecorded=unrecorded, unknown_gaps=gaps, estimated_text=estimated_text,
                not_replayed=left):
            say(f"note: {note}", err=True)
        if done.rule.n_unknown:
            say(f"note: {unknown_objective(done.rule).removeprefix('; ')}", err=True)
        if done.rule.constraint_unknown:
            say(f"note: {unknown_constraints(done.rule).removeprefix('; ')}", err=True)
        if done.rule.beaten is not None:
            say(f"note: {beaten_text(done.rule.beaten)}", err=True)
    if done.exit_code:
        say("no setting meets the constraints", err=True)
    _finish(done.corpus.report, strict, done.exit_code)
