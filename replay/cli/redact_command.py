"""``replay redact PATHS --out DIR``: a shareable archive of log files (``replay.redact``).

Prints one row per file (written or not, runs, blocks, markers) and every issue; exits 0 when
every file was written and reads back as the original, 1 when some file was not or differs,
2 on a usage error (no log under PATHS, ``--out`` among the inputs).

Not here: the redaction itself (``replay.redact``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from replay.cli.inputs import PathsArg, QuietOpt, _discover, table_command
from replay.cli.inputs_said import Said, discovery_said, inputs_doc
from replay.cli.output import _emit, _errors, _print_json, _progress, say, warn
from replay.cli.tables import TableOptions

if TYPE_CHECKING:
    from replay.redact.archive import RedactReport

REPLAY_NOTE = ("a replay of the archive gives the original's figures under a policy that reads "
               "none of the log's text (of the presets: none); a policy that removes anything "
               "predicts induced re-reads from the file names in the assistant's words, which "
               "are markers here, and stub summaries and placeholders quote text: its figures "
               "differ a little (tokens sent -2.4 % to +0.2 % on the samples; README: Sharing "
               "logs; replay.redact.fidelity.content_dependence names why, per policy)")
"""What ``redact`` says of replaying its archive (text and ``--json``)."""


@table_command
def redact(
    paths: PathsArg,
    out: Annotated[Path, typer.Option(help="Folder to write the redacted copies into (relative "
                                           "paths mirrored; several input folders each under its "
                                           "name); must lie outside the inputs.")],
    shift_days: Annotated[int, typer.Option(help="Move every timestamp by this many days.")] = 0,
    salt: Annotated[str | None, typer.Option(
        help="Secret mixed into every hash of a path or a name; the same salt gives the same "
             "hashes (to link two archives). Default: a random salt for this archive alone, "
             "kept nowhere.")] = None,
    salt_file: Annotated[Path | None, typer.Option(
        help="Read the salt from this file, outside --out (created with a random salt when "
             "missing): archives made with it link to each other, and to nothing else.")] = None,
    quiet: QuietOpt = False,
    *,
    table: TableOptions,
) -> None:
    """Write log files as a shareable archive in their own format: text replaced by markers
    carrying its exact size and token counts, paths by stable hashes; it re-ingests with the
    original's blocks, requests and runs (a replay's figures match the original's under a
    policy that reads no text: see the note it prints)."""
    # lazy: the redaction's modules load only for this command (start-up time of --help)
    from replay.redact import redact as redact_paths

    links: list[Path] = []
    packed: list[Path] = []
    again: list[tuple[Path, Path]] = []
    files = _discover(paths, links, packed, again)
    with _progress("redact", len(files), quiet) as tick, _errors():
        report = redact_paths(paths, out, shift_days=shift_days, salt=salt, salt_file=salt_file,
                              on_file=tick)
    rows = [{"source": f.source, "archived_as": f.archived_as, "format": f.format,
             "written": f.written, "runs": f.n_runs, "blocks": f.n_blocks,
             "markers": f.n_markers, "issues": len(f.issues)} for f in report.files]
    salted = ("salted with the salt given" if report.salt_given else
              "salted with a random salt for this archive alone (kept nowhere)")
    notes = [*([_others_note(report)] if report.others else []), REPLAY_NOTE]
    if table.as_json:
        _print_json({"out": str(report.out), "files": rows, "paths_hashed": report.n_paths,
                     "stand_ins": report.n_stand_ins,
                     "salt": "given" if report.salt_given else "random",
                     "others": list(report.others),
                     "issues": [str(i) for i in report.issues], "notes": notes,
                     "inputs": _inputs(report, links, packed, again)})
    else:
        _emit(rows, table, title="redacted files")
        for issue in report.issues:
            warn(issue)
        written = sum(f.written for f in report.files)
        say(f"{written} of {len(report.files)} files written, {report.n_paths} paths hashed "
            f"({salted}), {report.n_stand_ins} ids given a stand-in, {len(report.issues)} "
            f"issues → {report.out}", err=table.as_csv)  # (in the CSV: a row of prose)
        for note in notes:  # notes on stderr, as every command's (they were on stdout)
            say(f"note: {note}", err=True)
    if not report.ok:
        raise typer.Exit(1)


def _others_note(report: RedactReport) -> str:
    """What a redact says of the files in ``--out`` it did not write."""
    from replay.output_targets import shown_names  # (one way to name up to three files)

    n = len(report.others)
    return (f"{report.out} also holds {n:,} file{'s' if n > 1 else ''} this redact did not "
            f"write ({shown_names(list(report.others))}): an earlier archive's (under another "
            "salt its copies have other names, and each run would be read twice) or yours; "
            "whoever reads the folder reads them too. Name a new or empty --out for this "
            "archive alone")


def _inputs(report: RedactReport, links: list[Path], packed: list[Path],
            again: list[tuple[Path, Path]]) -> dict[str, Any]:
    """``inputs_doc`` of a redaction: the files written taken as parsed, the others as failed,
    the folder ``links`` not followed, the logs ``packed`` not read, the paths given ``again``, every issue (each a
    warning in the text output); redact says its own summary line (a file not written, or
    written with an issue, exits 1)."""
    from replay.ingest.ingest_report import IngestReport  # lazy: pyarrow (start-up time)

    files = IngestReport(parsed=[f.source for f in report.files if f.written],
                         failed=[f.source for f in report.files if not f.written],
                         issues=list(report.issues), not_followed=[str(p) for p in links],
                         compressed=[str(p) for p in packed],
                         repeated=[(str(a), str(b)) for a, b in again])
    said = discovery_said(files.not_followed, files.compressed, files.repeated)
    said += [Said(str(i), warning=True) for i in report.issues]
    return inputs_doc(files, False, said, summarised=False)
