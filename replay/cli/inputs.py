"""What the ``replay`` commands take: the shared argument and option types, and ``_open``.

``_open`` turns a command's PATHS into a corpus: one dataset directory is opened
as it is; log files or folders are ingested first (into ``OUT/dataset``, with a
progress bar and the ingest's warnings on stderr).

Not here: options only the analysis commands take (``replay.cli.analysis_commands``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from replay import store
from replay.cli.output import _progress, err_console
from replay.corpus import open_corpus
from replay.discover import discover

PathsArg = Annotated[list[Path], typer.Argument(help="Log files or folders, or one dataset "
                                                     "directory written by `replay ingest`.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
FormatOpt = Annotated[str | None, typer.Option("--format", help="Force a parser instead of "
                                                                "detecting the format.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
ProviderOpt = Annotated[str | None, typer.Option(
    "--provider", help="Price every policy under this provider profile (cache and prices; "
                       "`replay providers` lists them) instead of the one each policy names.")]


def _open(paths: list[Path], out: Path, fmt: str | None, quiet: bool) -> Any:
    if len(paths) == 1 and store.is_store(paths[0]):
        return open_corpus(paths)
    files = discover(paths)
    with _progress("ingest", len(files), quiet) as tick:
        corpus = open_corpus(paths, cache_dir=out / "dataset", fmt=fmt, on_file=tick)
    if corpus.report is not None:
        for issue in corpus.report.issues:
            err_console.print(f"[yellow]warning[/]: {issue}", highlight=False)
    return corpus
