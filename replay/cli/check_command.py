"""``replay check``: replay logs and compare every metric with a baseline, the CI gate.

It parses its arguments (falling back on ``[tool.ctxreplay]`` in pyproject.toml or
ctxreplay.toml), calls ``analysis.check.run.run_check``, and prints the verdict, what moved and
the notes (or JSON with ``--json``), and writes the JUnit and Markdown reports it was asked
for.  Exit 0: pass; 1: a regression or a failed input (a log, a damaged dataset or baseline);
2: a usage or configuration error (a missing baseline, bad tolerances or policy).
``analysis`` is imported inside the command, so the other commands start without it.

Not here: the check itself (``analysis.check``), printing and exit codes
(``replay.cli.output``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cli.inputs import (
    AllowPythonOpt,
    FormatOpt,
    ProviderOpt,
    QuietOpt,
    StrictOpt,
    _finish,
    _opener,
    existing,
    table_command,
)
from replay.cli.inputs_said import corpus_inputs
from replay.cli.output import _counter, _emit, _errors, _print_json, say, warn
from replay.cli.tables import TableOptions


@table_command
def check(
    paths: Annotated[list[Path] | None, typer.Argument(
        metavar="PATHS", callback=existing, help="Log files or folders, or one dataset directory (default: "
                                "`archive` of "
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
    allow_python: AllowPythonOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    quiet: QuietOpt = False,
    *,
    table: TableOptions,
) -> None:
    """Replay logs and compare every metric with a baseline: exit 0 pass, 1 regression or a
    damaged input (log, dataset, baseline), 2 usage or configuration error."""
    # lazy: pandas and matplotlib load only for the command that needs them (start-up time)
    from analysis.check.report import (
        CHANGE_DATA_COLUMNS,
        MOVED_DATA_COLUMNS,
        change_data,
        change_rows,
        junit_xml,
        markdown_summary,
        moved,
        moved_data,
        moved_rows,
        verdict,
    )
    from analysis.check.run import CheckSettings, run_check
    from analysis.metric_spec import count
    from analysis.per_run.notes import figure_notes
    from replay import atomic_files
    from replay.corpus import not_replayed

    if update and (junit or markdown):  # (neither was written, exit 0: a CI read an old one)
        raise typer.BadParameter("--update-baseline judges nothing, so it writes no report",
                                 param_hint="'--junit' / '--markdown'")
    with _errors():
        settings = CheckSettings.resolve(paths, policy, baseline, tolerances=tolerances,
                                         provider=provider, cache_dir=out,
                                         strict_logs=strict_logs)
        if settings.source is not None:
            say(f"defaults from {settings.source}", err=True)
        with _counter("check", quiet) as tick:
            done = run_check(settings, update=update, allow_python=allow_python,
                             open_runs=_opener(settings.cache_dir, fmt, quiet, strict),
                             on_run=tick, on_warning=warn,
                             reports=[(o, p) for o, p in (("--junit", junit),
                                                          ("--markdown", markdown)) if p])
    corpus, result = done.corpus, done.result
    if result is None:
        changes, left = done.changes, not_replayed(corpus)
        if table.as_json:
            _print_json({"baseline": str(settings.baseline),
                         "changes": change_data(list(changes)), "not_replayed": left,
                         "inputs": corpus_inputs(corpus, strict, left)})
            _finish(corpus.report, strict)
            return
        say(f"baseline: wrote {settings.baseline} ({count(len(changes), 'change')})",
            err=table.as_csv)
        if table.as_csv:  # every change, figures as numbers (was the first 200, as text)
            _emit(change_data(list(changes)), table, title="what the update changed",
                  columns=CHANGE_DATA_COLUMNS)
        elif changes:
            _emit(change_rows(list(changes[:200])), table, title="what the update changed"
                  + (f" (first 200 of {len(changes):,})" if len(changes) > 200 else ""))
        for note in figure_notes(not_replayed=left):
            say(f"note: {note}", err=True)
        _finish(corpus.report, strict)
        return
    rows = moved(result)
    if table.as_json:
        _print_json({"verdict": verdict(result), "exit_code": done.exit_code,
                     "moved": moved_data(rows, result.labels), "notes": list(result.notes),
                     "inputs": corpus_inputs(corpus, strict, not_replayed(corpus))})
    else:
        say(verdict(result), err=table.as_csv)
    if table.as_csv:  # every row, numbers as numbers (was the table's first 40, as text)
        _emit(moved_data(rows, result.labels), table, title="what moved",
              columns=MOVED_DATA_COLUMNS)
    elif rows and not table.as_json:
        _emit(moved_rows(rows[:40], result.labels), table, title="what moved"
              + (f" (first 40 of {len(rows):,})" if len(rows) > 40 else ""))
    for note in [] if table.as_json else result.notes:
        say(f"note: {note}", err=table.as_csv)
    with _errors():  # checked before the work; a full disk now is still one line, exit 2
        if junit:
            atomic_files.atomic_write_bytes(junit, junit_xml(result), within=junit.parent)
        if markdown:
            atomic_files.atomic_write_bytes(markdown, markdown_summary(result).encode(),
                                            within=markdown.parent)
    _finish(corpus.report, strict, done.exit_code)
