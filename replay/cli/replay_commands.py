"""The ``replay`` commands over the replay library: ingest, runs, policies, run, calibrate,
synth and show-policy.

Each parses its arguments, calls the library function of the same name, and prints a
table (or JSON with ``--json``).  They are registered on the app in ``replay.cli``.

Not here: the analysis commands (``replay.cli.analysis_commands``), printing and exit
codes (``replay.cli.output``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from replay.cli.inputs import (
    AllowPythonOpt,
    CacheDirOpt,
    CacheOutOpt,
    FormatOpt,
    JsonOpt,
    PathsArg,
    ProviderOpt,
    QuietOpt,
    StrictOpt,
    _discover,
    _finish,
    _open,
    _opener,
    existing,
    table_command,
)
from replay.cli.inputs_said import (
    Said,
    corpus_inputs,
    discovery_said,
    ingested_said,
    inputs_doc,
    print_said,
    same_bytes_note,
)
from replay.cli.output import (
    _counter,
    _emit,
    _errors,
    _print_json,
    _progress,
    _steps,
    error,
    say,
    warn,
)
from replay.cli.tables import Layout, TableOptions
from replay.ingest.names import DEFAULT_TOKENIZERS


def ingest(
    paths: PathsArg,
    out: Annotated[Path, typer.Option(help="Dataset directory to write (Parquet, LZ4).")],
    fmt: FormatOpt = None,
    tokenizers: Annotated[str, typer.Option(help="Comma-separated encodings to count with.")] =
        ",".join(DEFAULT_TOKENIZERS),
    jobs: Annotated[int, typer.Option(min=0, help=(
        "Worker processes (0: one per core; none for files under 2 MiB in all)."))] = 0,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Parse log files into a Parquet dataset (unchanged files are reused from the cache)."""
    from replay.ingest import entry_notes, store  # lazy: pyarrow only when it runs
    from replay.ingest.batch import ingest as ingest_paths

    toks = tuple(dict.fromkeys(t.strip() for t in tokenizers.split(",") if t.strip()))
    if not toks:  # a dataset of no counts: `replay runs` said 0 tokens a run, no replay ran
        raise typer.BadParameter(f"{tokenizers!r} names no encoding; give one or more, e.g. "
                                 f"{','.join(DEFAULT_TOKENIZERS)}", param_hint="'--tokenizers'")
    files = _discover(paths)
    with _progress("ingest", len(files), quiet) as tick, _errors(store_exit=2):  # its output
        report = ingest_paths(paths, out, fmt=fmt, tokenizers=toks, jobs=jobs, strict=strict,
                              on_file=tick)
    said = ingested_said(report)
    print_said(s for s in said if s.warning)  # (the notes: in the JSON, or after the table)
    stored = set(report.parsed + report.cached)
    same = entry_notes.same_bytes(e for s, e in store.read_manifest(out).items() if s in stored)
    said += [Said(note)] if (note := same_bytes_note(same)) else []
    doc = {"parsed": len(report.parsed), "cached": report.n_reused, "failed": report.failed,
           "repaired": report.repaired, "rebuilt_from_schema": report.rebuilt_from_schema,
           "dropped_older": report.dropped_older,
           "no_conversation": report.no_conversation,
           "runs": report.n_runs,
           # of every file, parsed now or reused (its stored count; null only when a reused
           # entry could not be read for it)
           "tokens": report.tokens,
           "tokens_parsed": report.n_tokens, "issues": [str(i) for i in report.issues],
           "not_followed": report.not_followed, "compressed_not_read": report.compressed,
           "repeated": [list(r) for r in report.repeated],
           "unknown_records": report.unknown,
           "same_bytes": same,
           "inputs": inputs_doc(report, strict, discovery_said(
               report.not_followed, report.compressed, report.repeated) + said,
                                same=same)}
    if as_json:
        _print_json(doc)
    else:
        print_said(s for s in said if not s.warning)
        empty = f", {len(report.no_conversation)} without a conversation" \
            if report.no_conversation else ""
        say(f"{report.n_runs} runs from {len(report.parsed)} files parsed, "
            f"{report.n_reused} reused from cache, {len(report.failed)} failed{empty}, "
            f"{len(report.issues)} issues → {out}")
    _finish(report, strict)


RUNS_LAYOUT = Layout(columns=("run", "format", "model", "requests", "tokens",
                              "recorded_input_tokens", "unrecorded_requests", "compactions"),
                     totals={"requests": "sum", "tokens": "sum", "tokens_cl100k": "sum",
                             "recorded_input_tokens": "sum", "unrecorded_requests": "sum",
                             "compactions": "sum", "tool_calls": "sum", "messages": "sum",
                             "estimated_blocks": "sum", "estimated_tokens": "sum",
                             "source_issues_n": "per_source"})
RUN_LAYOUT = Layout(columns=("run", "n_requests", "note", "tokens_sent", "peak_tokens",
                             "overshoots_n", "cost_usd", "n_summaries", "n_trims",
                             "induced_rereads_n"),
                    totals={"n_requests": "sum", "tokens_sent": "sum", "peak_tokens": "max",
                            "overshoots_n": "sum", "overshoots_max_tokens": "max",
                            "n_summaries": "sum", "n_trims": "sum", "cost_usd": "sum",
                            "induced_rereads_n": "sum", "induced_rereads_tokens": "sum",
                            "induced_rereads_estimated_n": "sum",
                            "source_issues_n": "per_source"})
"""The ``replay run`` table: ``analysis.per_run.rollup.ROLLUP_METRICS`` (``metrics()``'s names),
and ``source_issues_n``, the issues stored for a run's log file, totalled once per file."""


@table_command
def runs(dataset: Annotated[Path, typer.Argument(metavar="DATASET", callback=existing,
                                                 help="A dataset directory.")], *,
         table: TableOptions) -> None:
    """List the runs in a dataset, each by its label (source path, #N for a file's later runs,
    ↳ for a subagent, its title or first prompt): format, model, requests, tool calls, tokens
    (o200k_base, and cl100k_base where the dataset holds it; unknown where not counted),
    recorded input tokens and the requests that recorded none, compactions, and each file's
    coverage (records read, modelled, skipped, unknown, by type). Exit 1 when a run's entry
    file is missing or cut (the run index still lists it; `replay ingest` of its log repairs
    it); 2 when DATASET is no dataset."""
    # lazy: the store loads pyarrow, which --help and usage errors do not need
    from replay.apply_policy import LazyRows
    from replay.ingest import entry_notes, run_listing, store
    from replay.ingest.failed_inputs import failed_said
    from replay.ingest.source_name import renamed_note

    with _errors(store_exit=2):  # no dataset at all: the wrong argument, as on every command
        store.require_store(dataset)  # that takes one (sql, inspect, diff --traces), not an
        # input that failed (a dataset read damaged, below: exit 1)
    with _errors():
        listing = run_listing.run_listing(dataset)
        manifest = store.read_manifest_whole(dataset)
        same = entry_notes.same_bytes(manifest.entries.values())
    rows = LazyRows(listing)
    failed = failed_said(manifest.failed, set(manifest.entries))
    if not len(rows):
        if table.as_json:
            _print_json([])
        if failed:
            warn(failed)
        error(f"no runs in the dataset {dataset}")
        raise typer.Exit(1)
    layout = RUNS_LAYOUT
    if listing["tokens_cl100k"].null_count < len(listing):  # shown where the dataset holds it
        shown = RUNS_LAYOUT.columns
        at = shown.index("tokens") + 1
        layout = dataclasses.replace(RUNS_LAYOUT,
                                     columns=(*shown[:at], "tokens_cl100k", *shown[at:]))
    _emit(rows, table, title=f"{len(rows)} runs in {dataset}", layout=layout)
    if note := run_listing.tokens_note(listing):
        say(note, err=True)
    if note := run_listing.unrecorded_note(listing):
        say(note, err=True)
    if note := renamed_note(listing):
        say(note, err=True)
    if note := same_bytes_note(same):
        say(note, err=True)
    if failed:
        warn(failed)
    if note := run_listing.entries_note(listing):
        error(note)
        raise typer.Exit(1)


@table_command
def policies(*, table: TableOptions) -> None:
    """List the shipped policy presets (usable by name with --policy)."""
    # lazy: the policy model and YAML load only when a command reads a policy (start-up time)
    from replay.policy import load_policy, presets
    from replay.policy.providers import provider_label

    rows = []
    for name in presets():
        p = load_policy(name)
        rows.append({"name": name, "window": p.server.window_tokens,
                     "tiers": " → ".join(f"{t.type}:{t.name}" for t in p.tiers) or "-",
                     "provider": provider_label(p.provider, p.cache),
                     "description": p.description})
    _emit(rows, table, title="policy presets", layout=POLICIES_LAYOUT)


@table_command
def providers(*, table: TableOptions) -> None:
    """List the provider profiles (cache and prices, USD per million tokens) for --provider."""
    # lazy: the policy model (start-up time)
    from analysis.metric_spec import PRICE_UNIT
    from replay.policy.providers import PROVIDERS

    rows = []
    for prof in PROVIDERS.values():
        c, pr = prof.cache, prof.cache.prices
        write = pr.cache_write_per_mtok
        rows.append({"name": prof.name, "cache": c.provider, "granularity": c.granularity_tokens,
                     "min_prefix": c.min_prefix_tokens, "ttl_s": c.ttl_s,
                     "input": pr.input_per_mtok, "cache_read": pr.cache_read_per_mtok,
                     # no write premium: a token written to the cache costs plain input
                     "cache_write": pr.input_per_mtok if write is None else write,
                     "write_premium": write is not None, "output": pr.output_per_mtok,
                     "source": prof.source})
    _emit(rows, table, title="provider profiles (prices in USD per million tokens)",
          layout=Layout(units={"ttl_s": "seconds", **dict.fromkeys(
              ("input", "cache_read", "cache_write", "output"), PRICE_UNIT)}))


@table_command
def run(
    paths: PathsArg,
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy YAML file or preset name.")],
    out: Annotated[Path | None, typer.Option(help="Where traces and the summary are written "
                                                  "(default: out/POLICY-NAME, so each policy's "
                                                  "outputs stay).")] = None,
    cache_dir: CacheDirOpt = None,
    report: Annotated[bool, typer.Option("--report", help="Also write report.html and report.md.")]
        = False,
    provider: ProviderOpt = None,
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
    *,
    table: TableOptions,
) -> None:
    """Replay a policy over logs (ingesting them first into the project cache) and print one
    row per run; traces and summary.json go to out/POLICY-NAME/ (or --out)."""
    # lazy: pandas loads only when a run is asked for (start-up time of the other commands)
    from analysis.metric_spec import count
    from analysis.per_run import UNITS
    from analysis.policy_run import run_policy_to
    from replay.apply_policy import LazyRows
    from replay.policy import load_policy
    from replay.policy.pricing import with_provider

    with _errors():
        pol = load_policy(policy)
        pol = with_provider(pol, provider) if provider else pol
        with _counter("replay", quiet) as tick, _steps("report: drawing figures", quiet) as draw:
            done = run_policy_to(paths, pol, out, report=report, allow_python=allow_python,
                                 open_runs=_opener(cache_dir, fmt, quiet, strict),
                                 cache_dir=cache_dir, on_run=tick,
                                 on_figure=draw)
    summary = done.summary  # (its source_issues_n made with the rows: as in summary.json)
    # the terminal table leaves out the run id, format and policy (the title names it) and the
    # note column when no run has a note; --json, --csv and --columns have every column
    as_data = table.as_json or table.as_csv or bool(table.columns)
    hidden = [] if as_data else ["run_id", "format", "policy"] + (
        ["note"] if summary["note"].null_count == summary.num_rows else [])
    rows = LazyRows(summary.drop_columns(hidden))
    _emit(rows, table, title=f"{pol.name}: {count(len(rows), 'run')} → {done.out}",
          layout=dataclasses.replace(RUN_LAYOUT, units=UNITS))
    for note in done.notes:  # on stderr with --json too: its stdout stays the list of rows
        say(f"note: {note}", err=True)
    _finish(done.corpus.report, strict)


@table_command
def calibrate(paths: PathsArg, cache_dir: CacheOutOpt = None, fmt: FormatOpt = None,
              strict: StrictOpt = False, quiet: QuietOpt = False,
              compactions: Annotated[bool, typer.Option(
                  "--compactions", help="The recorded compactions and the model of a "
                  "counterfactual compaction fitted on them, instead.")] = False, *,
              table: TableOptions) -> None:
    """Fit truth = overhead + scale × o200k count to each run's recorded usage.

    Errors are fractions (0.012 = 1.2 %): mean over the fitted points, and held out (fit on the
    first half of the pre-compaction requests, median error on the second) of the two truths
    that use the fit: held_out_fitted_error for overhead + scale × count, and
    held_out_anchored_error for anchored truth (recorded input at the first half's last request
    + scale × the count added since; a run's own fit only).  A run with fewer
    than MIN_POINTS recorded requests gets its model's corpus-level fit (source: corpus);
    implausible fits are flagged and not used to scale anchored truth.  A run with no recorded
    request is a row with no fit, flagged "not replayed: no request" (and named on stderr).

    --compactions: per recorded compaction, the tokens before it, summarised, in its summary
    and re-attached unseen after it; then the `restore:` numbers fitted on them (summary size,
    files re-attached), or the documented defaults with too few compactions, saying which.
    """
    # lazy: the engine and pyarrow load only when the command runs (start-up time of --help)
    from replay.calibration_table import calibration_rows
    from replay.compaction_fit import compaction_report, model_lines
    from replay.corpus import not_replayed, not_replayed_note, source_issues
    from replay.engine.calibrate import MIN_POINTS
    from replay.ingest.run_label import run_labels

    with _errors():
        corpus = _open(paths, cache_dir, fmt, quiet, strict)
        if compactions:
            doc = compaction_report(corpus)
    if compactions:
        if table.as_json:
            _print_json({**doc, "inputs": corpus_inputs(corpus, strict)})
        else:
            _emit(doc["compactions"], table, title="recorded compactions (tokens)",
                  layout=COMPACTIONS_LAYOUT)
            for line in model_lines(doc["model"]):
                say(line, err=table.as_csv)  # (in the CSV it made rows of prose)
        _finish(corpus.report, strict)
        return
    with _errors():
        labels = run_labels(corpus.runs)
        found = calibration_rows(corpus)
        issues = source_issues(corpus, (r["run_id"] for r in found))
        rows = [{"run": labels[r["run_id"]], **r, "source_issues_n": n}
                for r, n in zip(found, issues)]
    _emit(rows, table, title=f"calibration of truth against recorded usage (errors in %, "
                               f"--json: fractions; fewer than {MIN_POINTS} points: corpus fit per model, "
                               "which has no anchored held-out error)",
          layout=CALIBRATION_LAYOUT)
    if note := not_replayed_note(not_replayed(corpus)):  # on stderr: --json stays the rows
        say(f"note: {note}", err=True)
    _finish(corpus.report, strict)


CALIBRATION_LAYOUT = Layout(columns=("run", "fit", "scale", "held_out_fitted_error",
                                     "held_out_anchored_error", "flags"),
                            priority=("scale", "flags", "held_out_anchored_error"),
                            units={"mean_abs_error": "fraction", "held_out_fitted_error":
                                   "fraction", "held_out_anchored_error": "fraction",
                                   "overhead_tokens": "tokens"},
                            numeric=frozenset({"scale", "points", "fit_points",
                                               "points_estimated"}))
POLICIES_LAYOUT = Layout(priority=("name", "tiers", "provider"))
COMPACTIONS_LAYOUT = Layout(columns=("source", "trigger", "first_request", "summarised_tokens",
                                     "summary_tokens", "reattached_tokens",
                                     "files_model_tokens"))


def synth(
    out: Annotated[Path | None, typer.Option(
        help="Folder to write the generated runs to (default: logs, when it is no symlink).")
    ] = None,
    only: Annotated[list[str] | None, typer.Option(help="Only these scenarios (by name).")] = None,
) -> None:
    """Generate the embedded corpus (long realistic runs and the failure scenarios), deterministically."""
    # lazy: the generator's modules (~60 ms) load only for `replay synth` (start-up time)
    from replay.layout import SYNTH_OUT, unnamed
    from replay.synth.failure_cases import write_generated

    with _errors():
        paths = write_generated(out if out is not None else unnamed(SYNTH_OUT, "--out"),
                                only or ())
    for path in paths:
        say(f"{path}  {path.stat().st_size:,} bytes")


def show_policy(
    policy: Annotated[str, typer.Argument(metavar="POLICY", help="Policy file or preset name.")],
    defaults: Annotated[bool, typer.Option("--defaults", help="Fill in every field, defaults "
                                                              "included.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print a policy as YAML (what differs from the defaults; --defaults: every field)."""
    # lazy: the policy model and YAML load only when a command reads a policy (start-up time)
    from replay.policy import load_policy, policy_to_dict
    from replay.policy.doc import policy_yaml

    with _errors():
        pol = load_policy(policy)
    if as_json:
        _print_json(policy_to_dict(pol))
    else:
        for line in policy_yaml(pol, defaults=defaults).splitlines():
            say(line)
