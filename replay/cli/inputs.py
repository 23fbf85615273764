"""What the ``replay`` commands take: the shared argument and option types, ``_open``, and
how the outcome of their input files decides the exit code.

``_open`` turns a command's PATHS into a corpus: one dataset directory is opened
as it is (damaged, it is an input that failed: exit 1, ``_errors``), the issues and unknown
records stored with its entries said as an ingest reusing them says them
(``stored_problems``); log files or folders are
ingested first (into the project cache's dataset, ``replay.layout``: ``.ctxreplay/dataset``
unless ``--cache-dir`` says otherwise, with a progress bar and the ingest's warnings on
stderr; a cache refused as damaged is a folder to fix: exit 2).  With ``--strict`` the ingest stops at
the first file with a problem and the command exits 1 before doing anything else; with no
run left to work on it says so and exits (1 when files failed, 2 when PATHS held no log).

``_finish`` ends every command that read logs: a one-line summary of the files that failed
on stderr, and exit 1 when any did (or, with ``--strict``, when any file had an issue).
The rule lives in ``input_exit_code``; every command uses it.

Not here: options only the analysis commands take (``replay.cli.analysis_commands``); the
lines said of the inputs, and their ``--json`` object (``replay.cli.inputs_said``).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from replay.cli.inputs_said import (
    discovery_said,
    ingested_said,
    input_exit_code,
    input_summary,
    print_said,
    same_bytes_note,
    stored_said,
    uncounted_tokenizer_note,
)
from replay.cli.output import _progress, error, say
from replay.cli.tables import TableOptions
from replay.errors import StoreError
from replay.ingest.names import FORMATS

if TYPE_CHECKING:
    from replay.corpus import Corpus, Opener
    from replay.ingest.ingest_report import IngestReport


def existing(paths: Any) -> Any:
    """Input paths that exist, or a usage error (exit 2) naming those that do not: a typo in a
    path is the user's, not a failed input (``typer.Argument(callback=existing)``).  A path
    that is there but cannot be followed (a symlink loop, a dangling link) is an input that
    fails when read (exit 1), not a typo."""
    given = [paths] if isinstance(paths, Path) else list(paths or [])
    missing = [str(p) for p in given if not os.path.lexists(p)]
    if missing:
        raise typer.BadParameter(f"no such file or folder: {', '.join(missing)}")
    return paths


PathsArg = Annotated[list[Path], typer.Argument(
    metavar="PATHS", callback=existing, help="Log files or folders, or one dataset directory written by "
                            "`replay ingest`.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ColumnsOpt = Annotated[str | None, typer.Option(
    "--columns", help="Comma-separated columns to show instead of the default few (--wide lists "
                      "them all).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Show every column, however wide.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV (every column, or --columns).")]

_TABLE_PARAMS = (
    inspect.Parameter("columns", inspect.Parameter.KEYWORD_ONLY, default=None,
                      annotation=ColumnsOpt),
    inspect.Parameter("wide", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=WideOpt),
    inspect.Parameter("as_csv", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=CsvOpt),
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False,
                      annotation=JsonOpt),
)
"""The table options every command that prints a table takes (``table_command``)."""


def table_command(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` (with a keyword parameter ``table: TableOptions``) as a command taking
    ``--columns``, ``--wide``, ``--csv`` and ``--json``: the one definition of the table
    options, so the footer's hint (``--columns A,B,… picks, --wide shows all, --csv/--json
    print all``) holds for every table."""
    sig = inspect.signature(command, eval_str=True)
    own = [p for name, p in sig.parameters.items() if name != "table"]
    taken = {p.name for p in own}
    clash = taken & {p.name for p in _TABLE_PARAMS}
    assert not clash, f"{command.__name__} declares table options itself: {clash}"
    params = [*own, *_TABLE_PARAMS]

    @functools.wraps(command)
    def with_table(**kwargs: Any) -> None:
        table = TableOptions(*(kwargs.pop(p.name) for p in _TABLE_PARAMS))
        if table.as_csv and table.as_json:  # (one output: neither silently wins)
            raise typer.BadParameter("give one of --csv and --json", param_hint="'--csv'")
        if table.columns is not None and not table.columns.replace(",", "").strip():
            raise typer.BadParameter("no column named", param_hint="'--columns'")
        if table.columns is not None and table.as_json:  # (it was ignored: every column, and
            raise typer.BadParameter(  # a column that does not exist, printed, exit 0)
                "picks the columns of a table or of --csv; --json prints every column: give "
                "one of --columns and --json", param_hint="'--columns'")
        command(**kwargs, table=table)

    with_table.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    with_table.__annotations__ = {p.name: p.annotation for p in params}
    del with_table.__wrapped__  # typer reads the signature above, not the command's
    return with_table


def _known_format(value: str | None) -> str | None:
    """``--format`` names a parser, or the command stops with a usage error (exit 2)."""
    from replay.ingest.parsers import PARSERS  # lazy: the parsers load pyarrow (--help's time)

    if value is not None and value not in PARSERS:
        raise typer.BadParameter(f"{value!r} is not a format; one of {', '.join(PARSERS)}")
    return value


FormatOpt = Annotated[str | None, typer.Option(
    "--format", metavar="FORMAT", callback=_known_format,
    help=f"Force a parser instead of detecting the format: {', '.join(FORMATS)}.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
def not_empty(value: str | None) -> str | None:
    """A name an option gives, or a usage error (exit 2) for an empty one (an unset variable):
    the commands test such an option's truth, so ``--provider ''`` priced every policy under
    its own provider and ``--maximise ''`` chose the setting sending the most tokens, as if the
    option were not given, without a word (``typer.Option(callback=not_empty)``)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty name (an unset variable?)")
    return value


ProviderOpt = Annotated[str | None, typer.Option(
    "--provider", callback=not_empty, help="Price every policy under this provider profile (cache and prices; "
                       "`replay providers` lists them) instead of the one each policy names.")]
CacheDirOpt = Annotated[Path | None, typer.Option(
    "--cache-dir", help="The project cache: logs are ingested into DIR/dataset (unchanged files "
                        "reused), sweeps keep cells in DIR/sweep_cache (default: "
                        "$CTXREPLAY_CACHE_DIR, else .ctxreplay in the current folder).")]
CacheOutOpt = Annotated[Path | None, typer.Option(
    "--cache-dir", "--out", help="The project cache: logs are ingested into DIR/dataset "
                                 "(default: $CTXREPLAY_CACHE_DIR, else .ctxreplay in the current "
                                 "folder; --out: the older name, as this command writes nothing "
                                 "else).")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Stop at the first input file with a "
                                                          "problem and exit 1.")]
AllowPythonOpt = Annotated[bool, typer.Option(help="Allow module:Class tiers (runs code).")]


def _finish(report: IngestReport | None, strict: bool, code: int = 0) -> None:
    """End a command that read logs: the summary of failed inputs on stderr, and exit with the
    larger of ``code`` and what the inputs call for (returns when both are 0)."""
    line = input_summary(report, strict)
    if line:
        say(line, err=True)
    code = max(code, input_exit_code(report, strict))
    if code:
        raise typer.Exit(code)


def _discover(paths: list[Path], not_followed: list[Path] | None = None,
              compressed: list[Path] | None = None,
              repeated: list[tuple[Path, Path]] | None = None) -> list[tuple[Path, Path]]:
    """The log files under ``paths``, with a note naming the folder links not followed, the
    compressed logs not read and the paths given again, read once (appended to
    ``not_followed``, ``compressed`` and ``repeated`` too, for a ``--json``); exits 2 when there is none, or when one of ``paths`` is a dataset (``_open``
    reads one alone)."""
    from replay.ingest import store  # lazy: start-up time of --help
    from replay.ingest.discover import LOG_SUFFIXES, discover

    if named := next((p for p in paths if store.is_store(p)), None):  # a walk leaves a store's
        # files out: its runs were dropped without a word (ingest ds logs/, redact ds logs/)
        error(f"{named}: a dataset written by `replay ingest`, not logs: name the logs it was "
              "ingested from")
        raise typer.Exit(2)
    links: list[Path] = [] if not_followed is None else not_followed
    packed: list[Path] = [] if compressed is None else compressed
    again: list[tuple[Path, Path]] = [] if repeated is None else repeated
    files = discover(paths, not_followed=links, compressed=packed, repeated=again)
    print_said(discovery_said(links, packed, again))
    if not files:
        error(f"no log files in {', '.join(map(str, paths))} (files named directly are read; "
              f"inside folders, files ending in {', '.join(LOG_SUFFIXES)})")
        raise typer.Exit(2)
    return files


def _open(paths: list[Path], cache: Path | None, fmt: str | None, quiet: bool,
          strict: bool = False) -> Any:
    """The corpus of ``paths``, log files ingested into the project cache ``cache``
    (``replay.layout.cache_root``): warnings printed; exits 1 at a problem with ``strict``, and
    when no run is left to work on (2 when ``paths`` held no log file at all)."""
    # lazy: the corpus and the store load pyarrow, which --help and usage errors do not need
    from replay.corpus import named_dataset, open_corpus
    from replay.ingest import entry_notes
    from replay.layout import cache_root, dataset_dir

    if named_dataset(paths) is not None:
        corpus = open_corpus(paths)
        stored_problems(corpus.entries, strict, corpus.failed)
        if note := same_bytes_note(entry_notes.same_bytes(corpus.entries)):
            say(note, err=True)
        if note := uncounted_tokenizer_note(corpus):  # (only a dataset named: the cache
            say(note, err=True)  # counts with o200k_base always)
        if not corpus.replayable():
            error(f"no runs to work on: the dataset {paths[0]} holds "
                  f"{len(corpus.run_ids)} runs, none with a request")
            raise typer.Exit(1)
        return corpus
    files = _discover(paths)
    with _progress("ingest", len(files), quiet) as tick:
        try:
            corpus = open_corpus(paths, cache_dir=dataset_dir(cache_root(cache)), fmt=fmt,
                                 on_file=tick, strict=strict)
        except StoreError as exc:  # the project cache refused: a folder to fix, not an input
            error(exc)
            raise typer.Exit(2) from None
    report = corpus.report
    if report is not None:
        print_said(ingested_said(report, quiet=quiet))
    if note := same_bytes_note(entry_notes.same_bytes(corpus.entries)):
        say(note, err=True)
    if strict and input_exit_code(report, strict):
        _finish(report, strict)
    if not corpus.replayable():
        failed = len(report.failed) if report is not None else 0
        error(f"no runs to work on: {failed} of {len(files)} input files failed"
              + (f", the other {len(files) - failed} hold no request" if failed < len(files)
                 else ""))
        _finish(report, strict, 1)
    return corpus


def stored_problems(entries: list[Any], strict: bool,
                    failed: dict[str, str] | None = None) -> None:
    """Say what a dataset's entries hold of their logs' problems, as an ingest that reuses them
    says it: each issue found when the log was parsed (a record skipped, usage dropped, a
    result without its call) and the records of types the parser does not know; and the input
    files whose last ingest into it ``failed`` (``failed_inputs.failed_said``); with
    ``strict``, exit 1 when there is an issue or such a file (a dataset opened as it is said
    none of them, so ``run ds`` after ``ingest`` hid every skipped record and every file the
    ingest had failed)."""
    report, said = stored_said(entries, strict, failed)
    print_said(said)
    if strict and report.failed:
        _finish(report, strict)


def _opener(cache: Path | None, fmt: str | None, quiet: bool, strict: bool = False) -> Opener:
    """``_open`` as the ``Opener`` a library entry point calls once it has checked its other
    arguments (``replay.corpus.Runs``)."""
    def open_runs(paths: list[Path]) -> Corpus:
        corpus: Corpus = _open(paths, cache, fmt, quiet, strict)
        return corpus
    return open_runs
