"""The ``replay`` commands over the analysis package: report, diff, sweep and check.

Each parses its arguments, replays (or reads ``replay run`` traces), calls the
``analysis`` function of the same name, and prints a table (or JSON with ``--json``).
They are registered on the app in ``replay.cli``; ``analysis`` is imported inside the
commands, so the replay commands start without it.

Not here: the replay commands (``replay.cli.replay_commands``), printing and exit codes
(``replay.cli.output``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from replay import atomic_files, store
from replay.cli.inputs import (
    CacheDirOpt,
    CacheOutOpt,
    ColumnsOpt,
    CsvOpt,
    FormatOpt,
    JsonOpt,
    PathsArg,
    ProviderOpt,
    QuietOpt,
    StrictOpt,
    WideOpt,
    _finish,
    _open,
)
from replay.cli.output import _emit, _errors, _print_json, _progress, _steps, say, warn
from replay.errors import ReplayError
from replay.layout import cache_root, dataset_dir, sweep_cache_dir, writable_dir
from replay.policy import load_policy
from replay.providers import one_provider, pricing_note, with_provider
from replay.run_label import label_column, run_labels
from replay.run_select import select_runs

# --- report / diff commands (analysis.report, analysis.diff) ---

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
AllowPythonOpt = Annotated[bool, typer.Option(help="Allow module:Class tiers (runs code).")]
OwnProvidersOpt = Annotated[bool, typer.Option(
    "--own-providers", help="Price each policy under the provider it names (default: every "
                            "policy under the first one's, so costs compare like for like).")]


def report(
    paths: Annotated[list[Path], typer.Argument(
        help="Log files/folders or one dataset (with --policy), or `replay run` output "
             "directories (with --traces).")],
    policy: ReportPolicyOpt = None,
    traces: TracesOpt = False,
    data: DataOpt = None,
    run_ids: RunOpt = None,
    out: Annotated[Path, typer.Option(help="Where report.html, report.md and report_files/ "
                                           "are written (nothing else).")] = Path("out"),
    cache_dir: CacheDirOpt = None,
    max_timelines: Annotated[int, typer.Option(help="Per-run timelines drawn, for the runs "
                                                    "with the most requests.")] = 20,
    provider: ProviderOpt = None,
    own_providers: OwnProvidersOpt = False,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Write a self-contained report.html and a report.md for one run or a corpus, per policy."""
    from analysis.report import write_report

    with _errors():
        writable_dir(out)
        corpus, pairs, priced = _policy_traces(paths, policy, traces, data, run_ids,
                                               cache_dir, allow_python, fmt, quiet, provider,
                                               own_providers, strict)
        with _steps("report: drawing figures", quiet) as tick:
            files = write_report(corpus, pairs, out, max_timelines=max_timelines,
                                 on_figure=tick)
    say(f"note: {priced}", err=True)
    say(files.html)
    say(files.markdown)
    say(f"{len(files.images)} figures in {files.html.parent / 'report_files'}")
    _finish(corpus.report, strict)


def diff(
    paths: Annotated[list[Path], typer.Argument(
        help="Log files/folders or one dataset (with two --policy), or two `replay run` output "
             "directories (with --traces).")],
    policy: ReportPolicyOpt = None,
    traces: TracesOpt = False,
    data: DataOpt = None,
    run_ids: RunOpt = None,
    cache_dir: CacheOutOpt = None,
    top: Annotated[int, typer.Option(help="Rows shown per section in the table (JSON has "
                                          "every row).")] = 20,
    provider: ProviderOpt = None,
    own_providers: OwnProvidersOpt = False,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    columns: ColumnsOpt = None,
    wide: WideOpt = False,
    as_csv: CsvOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Compare two policies (or two traces) on the same runs: metric deltas, largest first."""
    from analysis.diff import diff as diff_metrics
    from analysis.diff import to_records
    from analysis.metrics import metrics
    from analysis.report_pages import fmt_rel, fmt_value
    from replay.errors import ReplayInputError

    with _errors():
        corpus, pairs, priced = _policy_traces(paths, policy, traces, data, run_ids,
                                               cache_dir, allow_python, fmt, quiet, provider,
                                               own_providers, strict)
        if len(pairs) != 2:
            raise ReplayInputError(f"diff compares two policies or traces, got {len(pairs)}")
        (pol_a, tr_a), (pol_b, tr_b) = pairs
        d = diff_metrics(metrics(corpus, tr_a, pol_a), metrics(corpus, tr_b, pol_b))
    if as_json:
        _print_json({"a": pol_a.name, "b": pol_b.name, "pricing": priced,
                     "rows": to_records(d)})
        _finish(corpus.report, strict)
        return
    moved = d[(d["delta"] != 0) & d["delta"].notna()]
    shown = [r for scope in ("total", "run")
             for r in moved[moved["scope"] == scope].head(top).to_dict(orient="records")]
    labels = run_labels(corpus.runs)
    rows = [{"run": labels.get(r["run_id"], r["run_id"]), "metric": r["metric"],
             "a": fmt_value(r["metric"], r["a"]), "b": fmt_value(r["metric"], r["b"]),
             "change": fmt_rel(r["rel_delta"]), "verdict": r["verdict"]} for r in shown]
    title = (f"b: {pol_b.name} against a: {pol_a.name}: {len(moved)} of {len(d)} (run, metric) "
             f"values changed, largest first; {priced}")
    if rows:
        _emit(rows, False, title=title, columns=columns, wide=wide, as_csv=as_csv)
    else:
        say(title)
    _finish(corpus.report, strict)


def _policy_traces(paths: list[Path], policies: list[str] | None, traces: bool,
                   data: list[Path] | None, run_ids: list[str] | None, cache: Path | None,
                   allow_python: bool, fmt: str | None, quiet: bool, provider: str | None,
                   own_providers: bool, strict: bool) -> tuple[Any, list[Any], str]:
    """(corpus, [(policy, trace), ...], what they are priced under): replayed from PATHS under
    one provider (``replay.providers.one_provider``), or read from `replay run` outputs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from analysis.report import read_runs
    from replay.corpus import replay_corpus
    from replay.errors import ReplayInputError
    from replay.trace import Trace

    if traces:
        if policies or provider:
            raise ReplayInputError("--policy or --provider and --traces exclude each other: "
                                   "traces carry their policy and prices in summary.json")
        pairs = read_runs(paths)
        source = list(data) if data else [next(
            (d for d in (dataset_dir(cache_root(cache)), paths[0] / "dataset")
             if store.is_store(d)), paths[0] / "dataset")]
        if not data and not store.is_store(source[0]):
            raise ReplayInputError(f"{paths[0]}: no dataset in the project cache "
                                   f"({dataset_dir(cache_root(cache))}) nor beside the traces; "
                                   "give --data with the logs or dataset they were replayed "
                                   "from")
        corpus = _open(source, cache, fmt, quiet, strict)
        if run_ids:
            keep = pa.array(select_runs(corpus.run_ids, corpus.runs["source"].to_pylist(),
                                        run_ids, labels=label_column(corpus.runs)),
                            pa.string())
            pairs = [(p, Trace(*(t.filter(pc.is_in(t["run_id"], value_set=keep))
                                 for t in (tr.requests, tr.actions, tr.evictions))))
                     for p, tr in pairs]
        return corpus, pairs, pricing_note([p for p, _ in pairs])
    if not policies:
        raise ReplayInputError("give --policy (repeat it for several), or --traces with "
                               "`replay run` output directories")
    priced = one_provider([load_policy(p) for p in policies], provider, own=own_providers)
    pols = priced.policies
    corpus = _open(paths, cache, fmt, quiet, strict)
    ids = corpus.replayable()
    if run_ids:
        sources = dict(zip(corpus.run_ids, corpus.runs["source"].to_pylist()))
        labels = run_labels(corpus.runs)
        ids = select_runs(ids, [sources[r] for r in ids], run_ids, paths,
                          [labels[r] for r in ids])
    with _progress("replay", len(ids) * len(pols), quiet) as tick:
        return corpus, [(pol, replay_corpus(corpus, pol, allow_python=allow_python, run_ids=ids,
                                            on_run=tick)) for pol in pols], priced.note


# --- sweep command (analysis.sweep) ---

_SWEEP_SHOWN = ("overshoots_n", "tokens_sent", "cache_invalidation_cached_share", "cost_usd")


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
    out: Annotated[Path, typer.Option(help="Output root: OUT/sweep/ (tables, plots, "
                                           "chosen.yaml).")] = Path("out"),
    cache_dir: CacheDirOpt = None,
    jobs: Annotated[int, typer.Option(help="Local worker processes (0: one per core; 1: this "
                                           "process); they draw the plots too.")] = 0,
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address "
                                                       "(tcp://HOST:PORT) to run on instead.")]
        = None,
    best: Annotated[list[str] | None, typer.Option("--best", help="Constraint the chosen "
                                                                  "setting meets, e.g. "
                                                                  "'overshoots_n==0'; names are the "
                                                                  "sweep table's columns "
                                                                  "(repeatable).")] = None,
    minimise: Annotated[str, typer.Option("--minimise", help="Metric the chosen setting "
                                                             "minimises (summed over runs).")]
        = "tokens_sent",
    maximise: Annotated[str | None, typer.Option("--maximise", help="Metric to maximise "
                                                                    "instead.")] = None,
    top: Annotated[int, typer.Option(help="Settings listed, best first.")] = 5,
    provider: ProviderOpt = None,
    cache: Annotated[bool, typer.Option(help="Reuse and store rows in the project cache "
                                             "(CACHE-DIR/sweep_cache/).")] =
        True,
    plots: Annotated[bool, typer.Option(help="Draw each metric vs each path and the Pareto "
                                             "fronts.")] = True,
    allow_python: Annotated[bool, typer.Option(help="Allow module:Class tiers (runs code).")] =
        False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Replay a grid of settings of a base policy; one row per (run, setting), plots, the best."""
    from analysis.grid import load_spec, settings
    from analysis.pareto import best as best_settings
    from analysis.pareto import check_choice
    from analysis.sweep import sweep as run_sweep
    from analysis.sweep import write_sweep
    from analysis.sweep_choice import ChoiceRule

    objective = maximise or minimise
    with _errors():
        base = load_policy(policy)
        base = with_provider(base, provider) if provider else base
        spec = load_spec(grid, axis or [], design=design, samples=samples, seed=seed)
        chosen_from = settings(base, spec)
        check_choice(best or [], objective, [p for p, _ in chosen_from[0].params]
                     if chosen_from else [])
        writable_dir(out / "sweep")
        corpus = _open(paths, cache_dir, fmt, quiet, strict)
        with _progress("sweep", len(corpus.replayable()) * len(chosen_from), quiet) as tick:
            result = run_sweep(corpus, chosen_from, jobs=jobs, scheduler=scheduler,
                               cache_dir=sweep_cache_dir(cache_root(cache_dir)) if cache else None,
                               allow_python=allow_python, on_row=tick)
        ranked = best_settings(result.table, best or [], objective, minimise=maximise is None,
                               params=result.params)
        with _steps("sweep: drawing plots", quiet) as tick:
            rule = ChoiceRule(constraints=tuple(best or ()), objective=objective,
                              minimise=maximise is None, design=spec.design,
                              n_meeting=len(ranked))
            files = write_sweep(result, out / "sweep", plots=plots, rule=rule,
                                chosen=ranked["setting"].iloc[0] if len(ranked) else None,
                                jobs=result.stats.n_workers, on_figure=tick)
    s = result.stats
    shown = [{"setting": r["setting"], **{p: r[p] for p in result.params},
              **{c: r[c] for c in dict.fromkeys((objective, *_SWEEP_SHOWN))}}
             for r in ranked.head(top).to_dict(orient="records")]
    if as_json:
        _print_json({"settings": s.n_settings, "runs": s.n_runs, "computed": s.n_computed,
                     "reused": s.n_reused, "files": [str(f) for f in files], "best": shown})
    else:
        say(f"{s.n_settings} settings × {s.n_runs} runs: {s.n_computed} replayed, "
            f"{s.n_reused} reused → {out / 'sweep'}", err=True)
        _emit(shown, False, title=f"best by {objective} ({'max' if maximise else 'min'}, summed "
                                  f"over runs) under {', '.join(best or []) or 'no constraint'}")
    if not len(ranked):
        say("no setting meets the constraints", err=True)
    _finish(corpus.report, strict, 0 if len(ranked) else 1)

# --- check command (analysis.check) ---


@dataclass(frozen=True, slots=True)
class _CheckArgs:
    archive: list[Path]
    policies: list[str]
    baseline: Path
    tolerances: Path | None
    provider: str | None
    out: Path
    strict_logs: bool
    source: Path | None


def check_defaults(paths: list[Path] | None, policy: list[str] | None, baseline: Path | None,
                   tolerances: Path | None, provider: str | None, out: Path | None,
                   strict_logs: bool | None) -> _CheckArgs:
    """The check's arguments: the command line's, else ``[tool.ctxreplay]``'s (``replay.config``)."""
    from replay.config import find_config
    from replay.errors import ReplayInputError

    cfg = find_config(Path.cwd()) if not (paths and policy and baseline) else None
    got = _CheckArgs(
        archive=list(paths or (cfg.archive if cfg and cfg.archive else [])),
        policies=list(policy or (cfg.policies if cfg and cfg.policies else [])),
        baseline=baseline or (cfg.baseline if cfg else None),  # type: ignore[arg-type]
        tolerances=tolerances or (cfg.tolerances if cfg else None),
        provider=provider or (cfg.provider if cfg else None),
        out=cache_root(out or (cfg.out if cfg and cfg.out else None)),
        strict_logs=strict_logs if strict_logs is not None else bool(cfg and cfg.strict_logs),
        source=cfg.source if cfg else None)
    missing = [what for what, v in (("PATHS (config: archive)", got.archive),
                                    ("--policy (config: policies)", got.policies),
                                    ("--baseline (config: baseline)", got.baseline)) if not v]
    if missing:
        where = f"{cfg.source} does not say either" if cfg else \
            "no [tool.ctxreplay] in pyproject.toml or ctxreplay.toml here or above"
        raise ReplayInputError(f"check needs {', '.join(missing)}: {where}")
    return got


def check(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Log files or folders, or one dataset directory (default: `archive` of "
             "[tool.ctxreplay] in pyproject.toml or ctxreplay.toml).")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Policy YAML file or preset name; repeat the option for several "
                               "(default: the config's `policies`).")] = None,
    baseline: Annotated[Path | None, typer.Option(help="Baseline JSON to compare with (written "
                                                       "by --update-baseline; default: the "
                                                       "config's `baseline`).")] = None,
    tolerances: Annotated[Path | None, typer.Option(help="Tolerances YAML (default: no metric "
                                                         "may get worse at all).")] = None,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report here (one test "
                                                    "case per run × policy × metric).")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write a Markdown summary here (for a "
                                                       "pull-request comment).")] = None,
    update: Annotated[bool, typer.Option("--update-baseline", help="Rewrite the baseline with "
                                         "the current values and print what changed.")] = False,
    strict_logs: Annotated[bool | None, typer.Option(
        "--strict-logs/--no-strict-logs", help="Also fail when a run's log changed, appeared or "
                                               "disappeared (default: the config's, else no).")]
        = None,
    out: Annotated[Path | None, typer.Option(
        "--cache-dir", "--out", help="The project cache: logs are ingested into DIR/dataset "
                                     "(default: the config's `out`, else $CTXREPLAY_CACHE_DIR, "
                                     "else .ctxreplay in the current folder).")] = None,
    provider: ProviderOpt = None,
    allow_python: Annotated[bool, typer.Option(help="Allow module:Class tiers (runs code).")] =
        False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Replay logs and compare every metric with a baseline: exit 0 pass, 1 regression, 2 error."""
    from analysis import check as checking
    from analysis.baseline import load_baseline
    from analysis.check_report import (
        change_rows,
        junit_xml,
        markdown_summary,
        moved,
        moved_rows,
        verdict,
    )

    with _errors():
        cfg = check_defaults(paths, policy, baseline, tolerances, provider, out, strict_logs)
        paths, baseline, tolerances, out = cfg.archive, cfg.baseline, cfg.tolerances, cfg.out
        strict_logs = bool(cfg.strict_logs)
        if cfg.source is not None:
            say(f"defaults from {cfg.source}", err=True)
        pols = [load_policy(p) for p in cfg.policies]
        pols = [with_provider(p, cfg.provider) for p in pols] if cfg.provider else pols
        tol = checking.load_tolerances(tolerances) if tolerances else checking.Tolerances()
        old = None
        try:
            old = load_baseline(baseline) if not update or baseline.exists() else None
        except ReplayError as exc:
            if not update:
                raise
            warn(f"replacing an unreadable baseline: {exc}")
        if old is not None and not update:
            checking.preflight(old, pols, tol)
        corpus = _open(paths, out, fmt, quiet, strict)
        with _progress("check", len(corpus.replayable()) * len(pols), quiet) as tick:
            if update:
                changes = checking.update_baseline(corpus, pols, baseline, old, tol,
                                                   allow_python=allow_python, on_run=tick)
            else:
                assert old is not None
                result = checking.check(corpus, pols, old, tol, strict_logs=strict_logs,
                                        allow_python=allow_python, on_run=tick)
    if update:
        say(f"baseline: wrote {baseline} ({len(changes):,} changes)")
        if changes:
            _emit(change_rows(changes[:200]), False, title="what the update changed"
                  + (f" (first 200 of {len(changes):,})" if len(changes) > 200 else ""))
        _finish(corpus.report, strict)
        return
    say(verdict(result))
    rows = moved(result)
    if rows:
        _emit(moved_rows(rows[:40], result.labels), False, title="what moved"
              + (f" (first 40 of {len(rows):,})" if len(rows) > 40 else ""))
    for note in result.notes:
        say(f"note: {note}")
    if junit:
        atomic_files.atomic_write_bytes(junit, junit_xml(result))
    if markdown:
        atomic_files.atomic_write_bytes(markdown, markdown_summary(result).encode())
    _finish(corpus.report, strict, result.exit_code)

