"""``replay inspect FILE``: how the ingest reads one log file.

Prints the detected format and why, every record type with its count and fate, the runs
made (a run with no request with the reason) and, per request, the counted context next to
the recorded input with the gap (``replay.ingest.inspect``).  Every string from the file is printed
as plain text: rich markup in it is shown, never interpreted.

Not here: the report itself (``replay.ingest.inspect``).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from replay.cli.inputs import FormatOpt, table_command
from replay.cli.inputs_said import Said, inputs_doc
from replay.cli.output import _emit, _errors, _print_json, error, say, warn
from replay.cli.tables import Layout, TableOptions, choose

if TYPE_CHECKING:
    from replay.ingest.inspect import Inspection


@table_command
def inspect(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="One log file (or OpenHands V1 conversation folder).")],
    fmt: FormatOpt = None,
    *,
    table: TableOptions,
) -> None:
    """Show how one log file is read: format and why, record types and their fate, runs,
    and per request the counted context next to the recorded input.

    --columns and --csv apply to the per-request table (--csv prints only it, with a run
    column); --json prints everything."""
    # lazy: the ingest's parsers load pyarrow, which --help and usage errors do not need
    from replay.ingest.inspect import gap_story, inspect_file
    from replay.ingest.openhands_v1_folder import conversation_parts

    if not file.is_file() and conversation_parts(file) is None:  # (an OpenHands V1
        # conversation folder is one input) missing, or another folder: a usage error (2), as
        # every command's missing path; there but not a regular file (a FIFO, a device, a
        # dangling or looping link): an input that cannot be read (1), as ``ingest`` and
        # ``run`` say of it
        if file.is_dir() or not os.path.lexists(file):
            error(f"{file}: not a file" + (" (a folder: inspect reads one file, or an "
                                           "OpenHands V1 conversation folder)"
                                           if file.is_dir() else ""))
            raise typer.Exit(2)
        error(f"{file}: not a regular file; not read")
        raise typer.Exit(1)
    if table.picked() and not table.as_json:  # (checked before any table is printed)
        try:
            choose([*(["run"] if table.as_csv else []), *REQUEST_COLUMNS], Layout(),
                   table.picked(), True)
        except ValueError as exc:
            error(exc)
            raise typer.Exit(2) from None
    with _errors():
        found = inspect_file(file, fmt=fmt)
    if table.as_json:
        doc = dataclasses.asdict(found)
        doc["issues"] = [str(i) for i in found.issues]
        for run, rep in zip(doc["runs"], found.runs):
            for req, ctx in zip(run["requests"], rep.requests):
                req["gap_tokens"] = ctx.gap_tokens
            run["gap_story"] = gap_story(rep.requests)
        doc["inputs"] = _inputs(found)
        _print_json(doc)
    elif table.as_csv:
        _emit(_request_rows(found, True), table, title="", layout=REQUEST_LAYOUT)
    else:
        plain_table = TableOptions(wide=table.wide)
        say(found.path)
        say(f"format: {found.detection or 'not recognised'}")
        if found.no_conversation:
            say(f"no conversation: {found.no_conversation}")
        _emit([{"record type": t, **{f: n.get(f, 0) for f in ("modelled", "skipped",
                                                                     "unknown")}}
               for t, n in found.coverage.items()], plain_table, title="records by type and fate")
        _emit([{"run": r.label, "messages": r.n_messages, "requests": r.n_requests,
                "tool calls": r.n_tool_calls, "compactions": r.n_harness_compactions,
                "context events": r.n_events, "no requests because": r.no_requests_reason}
               for r in found.runs], plain_table, title=f"{len(found.runs)} run(s)")
        for r in found.runs:
            if r.events:
                _emit([{"event": e.kind, "at message": e.msg, "first request after": e.request,
                        "recorded": e.detail} for e in r.events], plain_table,
                      title=f"{r.label}: context events")
            if r.requests:
                _emit(_request_rows(found, False, r.run_id), table, layout=REQUEST_LAYOUT,
                      title=f"{r.label}: counted context (o200k) vs recorded input")
                if story := gap_story(r.requests):
                    say(story)
        for issue in found.issues:
            warn(issue)
    if _failed(found):
        raise typer.Exit(1)


def _failed(found: Inspection) -> bool:
    """Whether the file failed (exit 1): no parser took it and it is not a file without a
    conversation, or it had issues and gave no run."""
    return bool(not found.format and not found.no_conversation or found.issues and not found.runs)


def _inputs(found: Inspection) -> dict[str, Any]:
    """``inputs_doc`` of the one file inspected: parsed, failed (``_failed``) or without a
    conversation, its issues (each a warning in the text output) and unknown records."""
    # lazy: the ingest's modules load pyarrow (start-up time of --help)
    from replay.ingest.ingest_report import IngestReport
    from replay.ingest.parsers.coverage import unknown_types

    failed = _failed(found)
    unknown = unknown_types(found.coverage)
    report = IngestReport(
        parsed=[] if failed or found.no_conversation else [found.path],
        failed=[found.path] if failed else [],
        no_conversation={found.path: found.no_conversation} if found.no_conversation else {},
        issues=list(found.issues), unknown={found.path: unknown} if unknown else {})
    return inputs_doc(report, False, [Said(str(i), warning=True) for i in found.issues],
                      summarised=False)


REQUEST_COLUMNS = ("request", "output msg", "counted", "recorded", "gap", "reasoning before",
                   "estimated")
"""The per-request table's columns (``_request_rows``; ``--csv`` adds ``run`` first)."""
REQUEST_LAYOUT = Layout(numeric=frozenset(REQUEST_COLUMNS))
"""Every per-request column is a number: a log with no usage has no recorded input, gap or
reasoning, shown ``unknown`` (it was blank when no request of the run recorded one)."""


def _request_rows(found: Inspection, with_run: bool, run_id: str | None = None
                  ) -> list[dict[str, Any]]:
    """The per-request rows of ``found`` (of run ``run_id``, else of every run, then with
    a ``run`` column when ``with_run``), with ``REQUEST_COLUMNS``."""
    return [{**({"run": r.label} if with_run else {}),
             **dict(zip(REQUEST_COLUMNS, (c.request, c.output_msg, c.counted_tokens,
                                          c.recorded_input_tokens, c.gap_tokens,
                                          c.reasoning_before_tokens, c.estimated_tokens)))}
            for r in found.runs if run_id is None or r.run_id == run_id for c in r.requests]
